"""Every page under /admin: inbox, spam, detail, files, workflow, replies, held mail, changes, export, forms, people,
retention, cleanup, notifications, admins, account.

One blueprint, so one guard and one ``Cache-Control: no-store`` cover them
all: every page needs a live admin login and none may be cached, since they
show personal data or one-time links.
"""

from __future__ import annotations

from flask import Blueprint
from flask_login import login_required

bp = Blueprint("admin", __name__, url_prefix="/admin")


@bp.before_request
@login_required
def require_admin():
    """Send anyone without a live admin login to the login page."""
    return None


@bp.after_request
def forbid_caching(response):
    """Admin pages hold personal data: no browser or proxy may keep a copy."""
    response.headers["Cache-Control"] = "no-store"
    return response


# The view modules register their routes on ``bp`` when imported.
from app.admin import (  # noqa: E402,F401
    account,
    actions,
    admins,
    attachments,
    cleanup,
    display,
    export,
    forms,
    held,
    inbox,
    labels,
    notifications,
    people,
    replies,
    retention,
    spam,
    workflow,
)
