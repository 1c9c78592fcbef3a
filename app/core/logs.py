"""Logging: one line per record on stderr, as text or JSON (``SUNDOWN_LOG_FORMAT``), with a request id.

Every request gets an id: the ``X-Request-ID`` a trusted proxy sent
(``SUNDOWN_PROXY_FIX`` > 0) when it is a plain token, or a fresh random one.
It is returned in the response's ``X-Request-ID`` header and carried by every
line logged while the request is served, including one line per request.

No personal data goes into a line: the request line names the endpoint, never
the path (enrollment links carry a token) or the client's address, no module
logs what visitors typed, and a logged database error shows its SQL without
the parameters (which SQLAlchemy would print: a visitor's name and message).
"""

from __future__ import annotations

import logging
import re
import sys
import time

from flask import Flask, current_app, g, has_app_context, request
from pythonjsonlogger.json import JsonFormatter
from sqlalchemy.exc import StatementError

from app.core import clock

HEADER = "X-Request-ID"
TRUSTED_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"
JSON_FIELDS = ["levelname", "name", "message", "request_id"]
JSON_NAMES = {"levelname": "level", "name": "logger"}
QUIET_ENDPOINTS = {"health.healthz", "internal.metrics_text"}  # polled: their request lines are DEBUG
APP_LOGGER = "app"  # the package's logger: every module's logger is below it

log = logging.getLogger(f"{APP_LOGGER}.requests")


def init_app(app: Flask) -> None:
    """Send the app's log records to stderr in the configured format; give each request an id."""
    handler = _StderrHandler()
    handler.addFilter(_prepare)
    if app.config["LOG_FORMAT"] == "json":
        handler.setFormatter(JsonFormatter(JSON_FIELDS, rename_fields=JSON_NAMES, timestamp="time"))
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    logger = logging.getLogger(APP_LOGGER)
    for old in [h for h in logger.handlers if isinstance(h, _StderrHandler)]:
        logger.removeHandler(old)  # one handler per process, from the newest app
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    app.before_request(_assign_request_id)
    app.after_request(_log_request)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record arrives (as ``logging.lastResort`` does)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def _prepare(record: logging.LogRecord) -> bool:
    """Add the request id; hide the parameters of any SQL statement in the logged exception."""
    record.request_id = g.get("request_id") if has_app_context() else None
    error, seen = (record.exc_info[1] if record.exc_info else None), set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, StatementError):
            error.hide_parameters = True  # its message then says "[SQL parameters hidden ...]"
        error = error.__cause__ or error.__context__
    return True


def _assign_request_id() -> None:
    supplied = request.headers.get(HEADER, "")
    trusted = current_app.config["PROXY_FIX"] > 0 and TRUSTED_ID.fullmatch(supplied)
    g.request_id = supplied if trusted else clock.random_bytes(16).hex()
    g.request_started = time.perf_counter()  # a duration, not a date: not the app's clock


def _log_request(response):
    request_id = g.get("request_id")
    if request_id is None:  # a request refused before ours ran
        return response
    response.headers[HEADER] = request_id
    endpoint = request.url_rule.endpoint if request.url_rule else "unmatched"
    took_ms = round((time.perf_counter() - g.request_started) * 1000, 1)
    level = logging.DEBUG if endpoint in QUIET_ENDPOINTS else logging.INFO
    fields = {"method": request.method, "endpoint": endpoint, "status": response.status_code, "ms": took_ms}
    log.log(
        level,
        "%s %s %s %.1f ms",
        request.method,
        endpoint,
        response.status_code,
        took_ms,
        extra={"http": fields},
    )
    return response
