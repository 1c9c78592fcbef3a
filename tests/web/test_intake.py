"""Receiving bodies whole (app.web.intake) and the form's refusals, through the test client.

The server's stream is replaced by the framings gunicorn hands the app: a
body that ends early, one with no length that the server ends (chunked), one
whose framing raises. The same cases through a real gunicorn are in
``test_intake_server.py``. One app and database per kind serves the module
(counts are compared before and after), so the module stays fast.
"""

from __future__ import annotations

import io
import json
from contextlib import contextmanager
from urllib.parse import urlencode

import pytest
from gunicorn.http.errors import ChunkMissingTerminator, InvalidChunkSize, NoMoreData
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from app import create_app
from app.core import background, db
from app.models import Inquiry
from app.web import intake
from tests.conftest import new_database_url
from tests.helpers import CSRF_INPUT, VALID, csrf_token

LIMIT = 64 * 1024
FORM = "application/x-www-form-urlencoded"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def db_kind(request) -> str:
    """The database kind under test, once per module (overrides conftest's)."""
    return request.param


@pytest.fixture(scope="module")
def app(db_kind, request, tmp_path_factory):
    """One app per database kind for the module's requests."""
    url = new_database_url(db_kind, request, tmp_path_factory.mktemp("intake"))
    application = create_app(
        {
            "SECRET_KEY": "test-secret-key-long-enough-for-production",
            "DATABASE_URL": url,
            "ORIGIN": "http://localhost",
            "RP_ID": "localhost",
            "SUBMIT_RATE_LIMITS": "100000/60,1000000/86400",
            "SUBMIT_GLOBAL_RATE_LIMITS": "100000/60,1000000/86400",
        }
    )
    yield application
    background.runner_of(application).stop()
    db.engine_of(application).dispose()


def stored(app) -> int:
    with app.app_context():
        return db.get_session().scalar(select(func.count()).select_from(Inquiry))


@contextmanager
def adds_rows(app, count: int):
    """Assert the block stores exactly ``count`` inquiries."""
    before = stored(app)
    yield
    assert stored(app) - before == count


class Failing:
    """A server stream (``read`` only, as gunicorn's) that yields ``data`` and then raises ``error``."""

    def __init__(self, data: bytes, error: Exception):
        self.data, self.error = data, error

    def read(self, size=-1):
        if self.data:
            chunk, self.data = self.data[:size], self.data[size:]
            return chunk
        raise self.error


def framed(body: bytes = b"", declared: int | None = None, stream=None) -> dict:
    """``environ_overrides`` for a body as gunicorn frames it (it ends the stream itself)."""
    environ = {"wsgi.input": stream or io.BytesIO(body), "wsgi.input_terminated": True}
    if declared is None:
        environ["HTTP_TRANSFER_ENCODING"] = "chunked"
    else:
        environ["CONTENT_LENGTH"] = str(declared)
    return environ


def post_json(client, **environ):
    return client.post("/api/inquiries", content_type="application/json", environ_overrides=environ)


def form_body(token: str, **fields) -> bytes:
    return urlencode({**VALID, "csrf_token": token, **fields}).encode()


def post_form(client, **environ):
    return client.post("/", content_type=FORM, environ_overrides=environ)


@contextmanager
def limits(app, spec: str):
    """Submission limits of ``spec`` for the block (the views read them per request)."""
    saved = app.config["SUBMIT_RATE_LIMITS"]
    app.config["SUBMIT_RATE_LIMITS"] = spec
    try:
        yield
    finally:
        app.config["SUBMIT_RATE_LIMITS"] = saved


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# --- the nesting check, on its own --------------------------------------------


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("{}", 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('"[[[[["', 0),
        ('["\\"[[", "\\\\", [[]]]', 3),  # an escaped quote and an escaped backslash
        ('{"a": "}}}}]]]]"}', 1),
        (nested(33), 33),
    ],
)
def test_nesting_counts_only_brackets_outside_strings(text, depth):
    assert not intake.nested_deeper_than(text, depth)
    assert depth == 0 or intake.nested_deeper_than(text, depth - 1)


def depth_of(value) -> int:
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
    return 0 if children is None else 1 + max(map(depth_of, children), default=0)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab\n'),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\a'), inner, max_size=3),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(value=json_values, most=st.integers(0, 12), ensure_ascii=st.booleans())
def test_nesting_agrees_with_the_parsed_depth(value, most, ensure_ascii):
    text = json.dumps(value, ensure_ascii=ensure_ascii)
    assert intake.nested_deeper_than(text, most) == (depth_of(value) > most)


# --- JSON ---------------------------------------------------------------------


def test_json_nested_1000_deep_is_400_and_nothing_is_stored(client, app):
    with adds_rows(app, 0):
        response = client.post("/api/inquiries", data=nested(1000), content_type="application/json")
    assert response.status_code == 400
    assert "nested too deeply" in response.json["error"]


def test_json_nested_to_the_limit_is_parsed(client, app):
    limit = intake.MAX_JSON_DEPTH
    with adds_rows(app, 1):
        at_limit = {**VALID, "name": json.loads(nested(limit - 1))}
        assert client.post("/api/inquiries", json=at_limit).status_code == 422  # parsed: not text
        over = json.dumps(VALID)[:-1] + ', "x": ' + nested(limit) + "}"
        assert client.post("/api/inquiries", data=over, content_type="application/json").status_code == 400
        message = {**VALID, "message": nested(500)}  # brackets in a string are text
        assert client.post("/api/inquiries", json=message).status_code == 201


@pytest.mark.parametrize("raw", [b'{"name": "\xff"}', b'\xef\xbb\xbf{"a": 1}', '{"a": 1}'.encode("utf-16")])
def test_json_that_is_not_utf8_is_400(client, app, raw):
    with adds_rows(app, 0):
        response = client.post("/api/inquiries", data=raw, content_type="application/json")
    assert response.status_code == 400
    assert response.json["ok"] is False


def test_json_with_a_huge_integer_is_400(client):
    body = '{"name": ' + "9" * 5000 + "}"
    assert client.post("/api/inquiries", data=body, content_type="application/json").status_code == 400


# --- framing ------------------------------------------------------------------


def test_json_shorter_than_its_content_length_is_400(client, app):
    body = json.dumps(VALID).encode()  # complete JSON, but the length promised more
    with adds_rows(app, 0):
        response = post_json(client, **framed(body, declared=len(body) + 10))
    assert response.status_code == 400
    assert "ended after" in response.json["error"]


def test_chunked_json_over_the_limit_is_413_not_cut(client, app):
    body = json.dumps({**VALID, "message": "x" * LIMIT}).encode()
    with adds_rows(app, 0):
        response = post_json(client, **framed(body))
    assert response.status_code == 413
    assert str(LIMIT) in response.json["error"]


def test_chunked_json_within_the_limit_is_accepted(client, app):
    with adds_rows(app, 1):
        response = post_json(client, **framed(json.dumps(VALID).encode()))
    assert response.status_code == 201


def test_declared_length_over_the_limit_is_413_before_reading(client):
    stream = Failing(b"", AssertionError("the body must not be read"))
    response = post_json(client, **framed(declared=LIMIT + 1, stream=stream))
    assert response.status_code == 413


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (InvalidChunkSize(b"zz"), "framing is malformed"),
        (ChunkMissingTerminator(b"fg"), "framing is malformed"),
        (NoMoreData(b""), "broke off"),
        (ConnectionResetError(), "broke off"),
    ],
)
def test_a_stream_that_fails_mid_body_is_400(client, app, error, words):
    with adds_rows(app, 0):
        response = post_json(client, **framed(stream=Failing(b'{"name": "Ada", ', error)))
    assert response.status_code == 400
    assert words in response.json["error"]


def test_no_length_and_an_unterminated_stream_reads_nothing(client):
    # A server that does not end the stream itself (no wsgi.input_terminated)
    # and no Content-Length: reading could block forever, so the body is empty.
    stream = Failing(b"", AssertionError("the body must not be read"))
    response = post_json(client, **{"wsgi.input": stream, "CONTENT_LENGTH": ""})
    assert response.status_code == 400
    assert response.json["error"] == intake.NOT_JSON


def test_receive_refuses_to_run_after_the_body_was_read(app):
    with app.test_request_context("/", method="POST", data=b"x"):
        from flask import request

        request.get_data()
        with pytest.raises(RuntimeError):
            intake.receive()


# --- the form: every refusal is the form again, with words ---------------------


def notice_of(response) -> str:
    page = response.get_data(as_text=True)
    assert 'id="form-notice"' in page, page
    assert '<form method="post"' in page
    return page


def test_form_over_the_limit_says_the_text_could_not_be_kept(client, app):
    body = form_body(csrf_token(client), filler="x" * LIMIT)
    with adds_rows(app, 0):
        response = post_form(client, **framed(body))
    page = notice_of(response)
    assert response.status_code == 413
    assert "too large" in page and "could not be kept" in page
    assert VALID["name"] not in page


def test_form_cut_short_is_refused_not_stored(client, app):
    body = form_body(csrf_token(client))  # every field complete, but more was promised
    with adds_rows(app, 0):
        response = post_form(client, **framed(body, declared=len(body) + 100))
    page = notice_of(response)
    assert response.status_code == 400
    assert "did not arrive complete" in page and "could not be kept" in page


def test_form_with_broken_framing_is_refused(client, app):
    body = form_body(csrf_token(client))
    with adds_rows(app, 0):
        response = post_form(client, **framed(stream=Failing(body[:40], InvalidChunkSize(b"zz"))))
    assert response.status_code == 400
    assert "did not arrive complete" in notice_of(response)


def test_chunked_form_within_the_limit_is_saved(client, app):
    with adds_rows(app, 1):
        response = post_form(client, **framed(form_body(csrf_token(client))))
    assert response.status_code == 303


def test_expired_form_keeps_the_text(client, app):
    with adds_rows(app, 0):
        response = client.post("/", data={**VALID, "csrf_token": "stale"})
    page = notice_of(response)
    assert response.status_code == 400
    assert "expired" in page and "kept below" in page
    assert 'value="Ada Lovelace"' in page and "I have a question." in page
    fresh = CSRF_INPUT.search(page).group(1)  # a fresh token: sending again works
    with adds_rows(app, 1):
        assert client.post("/", data={**VALID, "csrf_token": fresh}).status_code == 303


def test_rate_limited_form_keeps_the_text(client, app):
    address = {"REMOTE_ADDR": "127.0.0.77"}  # the count is per client address
    token = csrf_token(client)
    with adds_rows(app, 1), limits(app, "1/60,100/86400"):
        assert client.post("/", data={**VALID, "csrf_token": token}, environ_base=address).status_code == 303
        response = client.post("/", data={**VALID, "message": "Second one", "csrf_token": token}, environ_base=address)
    page = notice_of(response)
    assert response.status_code == 429
    assert 0 < int(response.headers["Retry-After"]) <= 60
    assert "Too many requests" in page and "Second one" in page


def test_form_keeps_the_text_when_the_database_is_unreachable():
    unreachable = create_app(
        {
            "SECRET_KEY": "test-secret-key-long-enough-for-production",
            "ORIGIN": "http://localhost",
            "RP_ID": "localhost",
            "DATABASE_URL": "postgresql://postgres@127.0.0.1:1/nowhere",
        }
    )
    client = unreachable.test_client()
    try:
        response = client.post("/", data={**VALID, "csrf_token": csrf_token(client)})
    finally:
        db.engine_of(unreachable).dispose()
    page = notice_of(response)
    assert response.status_code == 503
    assert "cannot save inquiries right now" in page and "I have a question." in page


# --- other views: framing errors are 400 there too (app.web.errors) ----------------


def test_broken_framing_on_another_form_is_400_not_500(client):
    stream = Failing(b"csrf_token=abc&x=", InvalidChunkSize(b"zz"))
    response = client.post("/auth/logout", content_type=FORM, environ_overrides=framed(stream=stream))
    assert response.status_code == 400
    assert "framing is malformed" in response.get_data(as_text=True)


@pytest.mark.parametrize("path", ["/auth/logout", "/admin/retention", "/auth/login/verify"])
def test_every_other_body_is_received_whole_before_anything_reads_it(client, path):
    cut_short = client.post(path, content_type=FORM, environ_overrides=framed(b"csrf_token=abc", declared=500))
    assert cut_short.status_code == 400 and "ended after 14 of its declared 500 bytes" in cut_short.get_data(
        as_text=True
    )
    too_large = client.post(path, content_type=FORM, environ_overrides=framed(b"x" * (64 * 1024 + 1)))
    assert too_large.status_code == 413  # chunked and over the limit: refused, never cut silently
