"""Small request and response helpers shared by the authentication views."""

from __future__ import annotations

from flask import Response, jsonify
from flask import session as browser_session
from flask_babel import gettext as _
from werkzeug.exceptions import BadRequest

from app.auth import logins, permissions
from app.core.urls import safe_next
from app.models import Admin, AdminRole
from app.web import intake

DEFAULT_AFTER_LOGIN = "/admin/"
OWNERS_LANDING = "/admin/overview"  # owners land on the Overview; the others on their inbox


def landing(admin: Admin) -> str:
    """Where ``admin`` goes after logging in when no page was asked for."""
    return OWNERS_LANDING if permissions.role_of(admin) is AdminRole.OWNER else DEFAULT_AFTER_LOGIN


def json_body() -> dict:
    """The request's JSON object, or 400 with a readable message."""
    body = intake.json_body()
    if not isinstance(body, dict):
        raise BadRequest(_("Send the passkey response as a JSON object."))
    return body


def json_options(options_json: str) -> Response:
    """A JSON response carrying options already serialised by py_webauthn."""
    return Response(options_json, mimetype="application/json")


def logged_in_response(token: str, next_path=None, landing_path: str = DEFAULT_AFTER_LOGIN) -> Response:
    """The JSON answer to a successful ceremony: a fresh Flask session and the login cookie; the browser goes
    to ``next_path`` if it is safe, else to ``landing_path``."""
    # A new Flask session too, so nothing set before login (fixation) survives it.
    browser_session.clear()
    response = jsonify(ok=True, redirect=safe_next(next_path) or landing_path)
    logins.set_cookie(response, token)
    return response
