"""Passkey-only admin authentication: ceremonies, logins, enrollment (the account page is in ``app.admin``)."""

from __future__ import annotations

from flask import Blueprint, Flask, redirect, request, url_for
from flask_babel import gettext as _
from flask_login import LoginManager, current_user
from werkzeug.exceptions import Unauthorized

from app.auth import logins

bp = Blueprint("auth", __name__, url_prefix="/auth")
login_manager = LoginManager()


def init_app(app: Flask) -> None:
    """Resolve the current admin from the login cookie on each request."""
    login_manager.init_app(app)
    login_manager.request_loader(logins.load_admin_from_request)
    login_manager.unauthorized_handler(_unauthorized)
    app.before_request(_require_login_under_admin)


def _require_login_under_admin():
    # Defence in depth: every /admin path needs a live session, including
    # routes added later that forget @login_required.
    if (request.path == "/admin" or request.path.startswith("/admin/")) and not current_user.is_authenticated:
        return login_manager.unauthorized()
    return None


def _unauthorized():
    if request.is_json or request.accept_mimetypes.best == "application/json":
        raise Unauthorized(_("Log in with your passkey first."))
    # Only a page can be returned to; a form's POST target cannot be re-opened.
    next_path = request.full_path.rstrip("?") if request.method == "GET" else None
    return redirect(url_for("auth.login", next=next_path))


# The views register themselves on ``bp``; imported last because they import ``bp``.
from app.auth import enroll, login  # noqa: E402,F401
