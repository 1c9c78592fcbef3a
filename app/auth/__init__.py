"""Passkey-only admin authentication: ceremonies, sessions, enrollment, account pages."""

from __future__ import annotations

from flask import Blueprint, Flask, redirect, request, url_for
from flask_login import LoginManager
from werkzeug.exceptions import Unauthorized

from app.auth import sessions

bp = Blueprint("auth", __name__, url_prefix="/auth")
login_manager = LoginManager()


def init_app(app: Flask) -> None:
    """Resolve the current admin from the session cookie on each request."""
    login_manager.init_app(app)
    login_manager.request_loader(sessions.load_admin_from_request)
    login_manager.unauthorized_handler(_unauthorized)


def _unauthorized():
    if request.is_json or request.accept_mimetypes.best == "application/json":
        raise Unauthorized("Log in with your passkey first.")
    return redirect(url_for("auth.login", next=request.full_path.rstrip("?")))


# The views register themselves on ``bp``; imported last because they import ``bp``.
from app.auth import account, enroll, login  # noqa: E402,F401
