"""Every error as a clear page or JSON message with the right status; never a bare 500."""

from __future__ import annotations

import logging

from flask import Flask, jsonify, render_template, request
from flask_wtf.csrf import CSRFError
from sqlalchemy.exc import DBAPIError
from werkzeug.exceptions import HTTPException, InternalServerError, ServiceUnavailable

log = logging.getLogger(__name__)


def init_app(app: Flask) -> None:
    """Register the error handlers."""
    app.register_error_handler(CSRFError, _csrf_error)
    app.register_error_handler(HTTPException, render_error)
    app.register_error_handler(DBAPIError, _database_error)
    app.register_error_handler(Exception, _unexpected_error)


def wants_json() -> bool:
    """Whether the client talks JSON: API paths, JSON bodies, or JSON preferred."""
    if request.path.startswith("/api/") or request.is_json:
        return True
    best = request.accept_mimetypes.best_match(["text/html", "application/json"])
    return best == "application/json"


def render_error(error: HTTPException):
    """Render ``error`` as JSON or as the error page, keeping its headers."""
    message = error.description or error.name
    if wants_json():
        response = jsonify(ok=False, error=message)
    else:
        response = render_template("error.html", code=error.code, title=error.name, message=message)
    headers = [(k, v) for k, v in error.get_headers() if k.lower() != "content-type"]
    return response, error.code, headers


def _csrf_error(error: CSRFError):
    error.description = (
        f"The form has expired or was not sent from this site ({error.description}). "
        "Go back, reload the page and try again."
    )
    return render_error(error)


def _database_error(error: DBAPIError):
    log.error("database error: %s", type(error.orig).__name__, exc_info=error)
    return render_error(
        ServiceUnavailable("The database is unavailable right now. Please try again shortly.")
    )


def _unexpected_error(error: Exception):
    log.exception("unexpected error")
    return render_error(InternalServerError("Something went wrong on our side."))
