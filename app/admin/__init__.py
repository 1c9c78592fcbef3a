"""The admin inbox: list, detail, delete, legal hold, export, retention, cleanup status.

Every page needs a live admin session and is never cached: the pages show
personal data.
"""

from __future__ import annotations

from flask import Blueprint
from flask_login import login_required

bp = Blueprint("admin", __name__, url_prefix="/admin")


@bp.before_request
@login_required
def require_admin():
    """Send anyone without a live admin session to the login page."""
    return None


@bp.after_request
def forbid_caching(response):
    """Admin pages hold personal data: no browser or proxy may keep a copy."""
    response.headers["Cache-Control"] = "no-store"
    return response


# The view modules register their routes on ``bp`` when imported.
from app.admin import actions, display, inbox, settings, status  # noqa: E402,F401
from app import export  # noqa: E402

bp.add_url_rule("/export.csv", endpoint="export", view_func=export.download, methods=["GET"])
