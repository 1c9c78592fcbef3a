"""Small request and response helpers shared by the authentication views."""

from __future__ import annotations

from flask import Response, jsonify
from flask import session as browser_session
from flask_babel import gettext as _
from werkzeug.exceptions import BadRequest

from app.auth import logins
from app.core.urls import safe_next
from app.web import intake

DEFAULT_AFTER_LOGIN = "/admin/"


def json_body() -> dict:
    """The request's JSON object, or 400 with a readable message."""
    body = intake.json_body()
    if not isinstance(body, dict):
        raise BadRequest(_("Send the passkey response as a JSON object."))
    return body


def json_options(options_json: str) -> Response:
    """A JSON response carrying options already serialised by py_webauthn."""
    return Response(options_json, mimetype="application/json")


def logged_in_response(token: str, next_path=None) -> Response:
    """The JSON answer to a successful ceremony: a fresh Flask session and the login cookie."""
    # A new Flask session too, so nothing set before login (fixation) survives it.
    browser_session.clear()
    response = jsonify(ok=True, redirect=safe_next(next_path) or DEFAULT_AFTER_LOGIN)
    logins.set_cookie(response, token)
    return response
