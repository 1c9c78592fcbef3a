"""Every error as a clear page or JSON message with the right status; never a bare 500."""

from __future__ import annotations

import logging

from flask import Flask, Response, jsonify, render_template, request
from flask_babel import lazy_gettext as _l
from flask_login import current_user
from flask_wtf.csrf import CSRFError
from gunicorn.http.errors import ParseException
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from werkzeug.exceptions import BadRequest, HTTPException, InternalServerError, ServiceUnavailable

log = logging.getLogger(__name__)

# Public-facing messages, in one place, translated when shown.
BROKEN_BODY = _l("The request body could not be read: its chunked framing is malformed.")
CSRF_REFUSED = _l(
    "The form has expired or was not sent from this site ({reason}). Go back, reload the page and try again."
)
DATABASE_UNAVAILABLE = _l("The database is unavailable right now. Please try again shortly.")
UNEXPECTED = _l("Something went wrong on our side.")

# Flask-WTF's reasons (English only there), in words for visitors.
CSRF_REASONS = {
    "The CSRF token is missing.": _l("the security token is missing"),
    "The CSRF session token is missing.": _l("this browser's session has ended"),
    "The CSRF token has expired.": _l("the security token has expired"),
    "The CSRF token is invalid.": _l("the security token is invalid"),
    "The CSRF tokens do not match.": _l("the security token does not match this browser"),
    "The referrer header is missing.": _l("the browser did not say which page sent it"),
    "The referrer does not match the host.": _l("it was sent from another site"),
}

# Werkzeug's English titles and default explanations, for the statuses Sundown answers with.
TITLES = {
    400: _l("Bad Request"),
    401: _l("Unauthorized"),
    403: _l("Forbidden"),
    404: _l("Not Found"),
    405: _l("Method Not Allowed"),
    410: _l("Gone"),
    413: _l("Request Entity Too Large"),
    415: _l("Unsupported Media Type"),
    422: _l("Unprocessable Entity"),
    429: _l("Too Many Requests"),
    500: _l("Internal Server Error"),
    503: _l("Service Unavailable"),
}
DEFAULT_DESCRIPTIONS = {
    404: _l(
        "The requested URL was not found on the server. If you entered the URL manually please check "
        "your spelling and try again."
    ),
    405: _l("The method is not allowed for the requested URL."),
}


def init_app(app: Flask) -> None:
    """Register the error handlers."""
    app.register_error_handler(CSRFError, _csrf_error)
    app.register_error_handler(HTTPException, render_error)
    app.register_error_handler(DBAPIError, _database_error)
    app.register_error_handler(PoolTimeout, _database_error)  # no free pooled connection in time
    # gunicorn's chunked-framing errors reach views that let Werkzeug read the
    # body (the public views receive it whole first: app.web.intake).
    app.register_error_handler(ParseException, _unreadable_body)
    app.register_error_handler(Exception, _unexpected_error)


def wants_json() -> bool:
    """Whether the client talks JSON: API paths, JSON bodies, or JSON preferred."""
    if request.path.startswith("/api/") or request.is_json:
        return True
    best = request.accept_mimetypes.best_match(["text/html", "application/json"])
    return best == "application/json"


def render_error(error: HTTPException):
    """Render ``error`` as JSON or as the error page, keeping its headers."""
    message = str(_description(error) or error.name)
    code = error.code or InternalServerError.code  # only werkzeug's base class has none
    response: Response | str
    if wants_json():
        response = jsonify(ok=False, error=message)
    else:
        response = render_template(
            _error_template(),
            code=code,
            title=str(TITLES.get(code, error.name)),
            message=message,
            database_down=code >= 500,
        )
    headers = [(k, v) for k, v in error.get_headers() if k.lower() != "content-type"]
    return response, code, headers


def _error_template() -> str:
    """The admin frame (navigation, a link back to the inbox) for a logged-in admin under /admin.

    Anyone else gets the public one.
    """
    in_admin = request.path == "/admin" or request.path.startswith("/admin/")
    if in_admin and current_user.is_authenticated:
        return "admin/error.html"
    return "error.html"


def _description(error: HTTPException):
    """``error``'s explanation; Werkzeug's own default one replaced by ours, which is translated."""
    if error.description == type(error).description and error.code in DEFAULT_DESCRIPTIONS:
        return DEFAULT_DESCRIPTIONS[error.code]
    return error.description


def _csrf_error(error: CSRFError):
    reason = CSRF_REASONS.get(error.description, error.description)
    error.description = CSRF_REFUSED.format(reason=reason)
    return render_error(error)


def database_unavailable(error: DBAPIError | PoolTimeout) -> ServiceUnavailable:
    """Log a database failure (a refused or timed-out connection or statement) as the 503 to answer."""
    cause = getattr(error, "orig", None) or error
    log.error("database error: %s", type(cause).__name__, exc_info=error)
    return ServiceUnavailable(DATABASE_UNAVAILABLE)


def _database_error(error: DBAPIError | PoolTimeout):
    return render_error(database_unavailable(error))


def _unreadable_body(error: ParseException):
    log.info("unreadable request body: %s", type(error).__name__)
    return render_error(BadRequest(BROKEN_BODY))


def _unexpected_error(error: Exception):
    log.exception("unexpected error")
    return render_error(InternalServerError(UNEXPECTED))
