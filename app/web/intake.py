"""Receiving a request body whole, within the size limit, before anything parses it.

Werkzeug parses what the server hands it. Under gunicorn (which sets
``wsgi.input_terminated``) a chunked body is cut silently at
``MAX_CONTENT_LENGTH``, a body shorter than its ``Content-Length`` just ends
early, and a broken chunk framing raises gunicorn's own exceptions. So
``receive()`` reads the body itself: 413 when it is over the limit (declared
or not), 400 when it is shorter than declared or its framing is broken. Only
then does Werkzeug get the bytes, as a stream of exactly that length, so
``request.form`` and ``json_body()`` parse a complete body or nothing.

``json_body()`` also refuses JSON nested deeper than ``MAX_JSON_DEPTH`` before
parsing it, so the parser never recurses far (a 2 KB ``[[[[...]]]]`` used to
raise RecursionError).
"""

from __future__ import annotations

import io
import itertools
import json
import re
import tempfile
from typing import IO, Any

from flask import Flask, current_app, request
from flask_babel import lazy_gettext as _l
from gunicorn.http.errors import ParseException
from werkzeug.exceptions import BadRequest, RequestEntityTooLarge
from werkzeug.wsgi import get_content_length

MAX_JSON_DEPTH = 32
READ_SIZE = 64 * 1024
RECEIVED = "sundown.intake.received"  # the environ key holding the received body
SPOOLED = "sundown.intake.spooled"  # the temporary file holding a body with files, closed at teardown

# Messages for API clients, translated when shown; the form words its own (app.web.public).
TOO_LARGE = _l("The request body is larger than the limit of {limit} bytes.")
CUT_SHORT = _l("The request body ended after {received} of its declared {declared} bytes.")
BROKEN = _l("The request body could not be read: its chunked framing is malformed.")
LOST = _l("The request body could not be read: the connection broke off before it ended.")
NOT_UTF8 = _l("The request body is not valid JSON: send it encoded as UTF-8.")
TOO_DEEP = _l("The JSON is nested too deeply: at most {depth} levels of arrays and objects.")
NOT_JSON = _l("The request body is not valid JSON.")

_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"?', re.S)  # a JSON string, or an unterminated one
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_DEPTH_CHANGE = {"[": 1, "{": 1, "]": -1, "}": -1}


def init_app(app: Flask) -> None:
    """Receive every request's body whole before any handler (CSRF included) reads it."""
    app.before_request(_receive_any_body)
    app.teardown_request(_close_spooled)


def receives_itself(view):
    """Mark a view that calls ``receive()`` itself, to answer a refusal in its own words."""
    view.receives_body_itself = True
    return view


def _receive_any_body() -> None:
    view = current_app.view_functions.get(request.endpoint) if request.endpoint else None
    if getattr(view, "receives_body_itself", False):
        return
    if request.content_length is not None or "chunked" in request.headers.get("Transfer-Encoding", "").lower():
        receive()


def receive() -> bytes:
    """Read the whole body (at most ``MAX_CONTENT_LENGTH``) and hand Werkzeug only those bytes.

    Raises 413 (over the limit) or 400 (shorter than declared, broken framing,
    lost connection). Call it before anything touches ``request.form``,
    ``request.stream`` or ``request.get_data``; calling it again is free.
    """
    environ = request.environ
    if RECEIVED not in environ:
        body = io.BytesIO()
        _receive_into(body, current_app.config["MAX_CONTENT_LENGTH"])
        environ[RECEIVED] = body.getvalue()
    return environ[RECEIVED]


def receive_with_files(allowance: int) -> None:
    """Receive a body that may carry files: ``allowance`` bytes more than ``MAX_CONTENT_LENGTH``, as
    ``receive()`` does, but spooled to a temporary file once past ``MAX_CONTENT_LENGTH``, so that memory
    stays bounded whatever the upload's size; Werkzeug then spools each file of it again (``app.attachments``).
    """
    environ = request.environ
    if RECEIVED in environ:
        return
    limit = current_app.config["MAX_CONTENT_LENGTH"] + allowance
    # Open until the request's teardown (``_close_spooled``): a context manager would close it before
    # Werkzeug parses it.
    body = environ[SPOOLED] = tempfile.SpooledTemporaryFile(max_size=current_app.config["MAX_CONTENT_LENGTH"])  # noqa: SIM115
    _receive_into(body, limit)
    request.max_content_length = limit  # Werkzeug's own check, for this request only
    environ[RECEIVED] = b""


def _close_spooled(_error: BaseException | None) -> None:
    spooled = request.environ.pop(SPOOLED, None)
    if spooled is not None:
        spooled.close()


def _receive_into(sink: IO[bytes], limit: int) -> None:
    """Copy the body into ``sink`` (at most ``limit`` bytes) and make ``sink`` the request's stream."""
    environ = request.environ
    if "stream" in request.__dict__ or "form" in request.__dict__:
        raise RuntimeError("intake.receive() must run before the body is read")
    declared = get_content_length(environ)  # None when chunked or not given
    if declared is not None and declared > limit:
        raise RequestEntityTooLarge(TOO_LARGE.format(limit=limit))
    size = 0
    if declared is not None or environ.get("wsgi.input_terminated"):
        # Without a length and with a server that does not end the stream, read nothing.
        size = _copy(environ["wsgi.input"], limit + 1 if declared is None else declared, sink)
    if size > limit:
        raise RequestEntityTooLarge(TOO_LARGE.format(limit=limit))
    if declared is not None and size < declared:
        raise BadRequest(CUT_SHORT.format(received=size, declared=declared))
    sink.seek(0)
    environ.update({"wsgi.input": sink, "CONTENT_LENGTH": str(size)})
    environ.pop("HTTP_TRANSFER_ENCODING", None)


def json_body() -> Any:
    """The request's JSON value, from a body received whole; 400 if it is not UTF-8 JSON or too deep."""
    body = receive()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest(str(NOT_UTF8)) from None
    if nested_deeper_than(text, MAX_JSON_DEPTH):
        raise BadRequest(TOO_DEEP.format(depth=MAX_JSON_DEPTH))
    try:
        return json.loads(text)
    except ValueError:  # includes the too-many-digits integer limit
        raise BadRequest(str(NOT_JSON)) from None


def nested_deeper_than(text: str, most: int) -> bool:
    """Whether arrays and objects in ``text`` nest deeper than ``most`` (brackets in strings ignored).

    Without recursion, in linear time (the string pattern never backtracks;
    an unterminated string runs to the end); for malformed JSON the answer
    may be either, and the parser refuses it anyway.
    """
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(itertools.accumulate(map(_DEPTH_CHANGE.__getitem__, brackets)), default=0) > most


def _copy(stream: IO[bytes], most: int, sink: IO[bytes]) -> int:
    """Copy up to ``most`` bytes into ``sink``, until the server's stream ends; 400 if the server cannot frame
    it. Returns how many were copied."""
    size = 0
    try:
        while size < most:
            chunk = stream.read(min(READ_SIZE, most - size))
            if not chunk:
                break
            sink.write(chunk)
            size += len(chunk)
    except ParseException:  # gunicorn: bad chunk size, terminator, extension or trailer
        raise BadRequest(str(BROKEN)) from None
    except (OSError, ValueError):  # gunicorn's NoMoreData, a reset, Werkzeug's dechunker
        raise BadRequest(str(LOST)) from None
    return size
