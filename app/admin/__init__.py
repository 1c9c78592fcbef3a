"""Every page under /admin: inbox, spam, detail, files, workflow, replies, held mail, changes, export, forms, people,
retention, cleanup, notifications, admins, account.

One guard covers every path under /admin (``guard``): a live admin login and
the permission the endpoint needs (``policy``, one table). One blueprint, so
one ``Cache-Control: no-store`` covers them all: none may be cached, since
they show personal data or one-time links.
"""

from __future__ import annotations

from flask import Blueprint

from app.admin import guard

bp = Blueprint("admin", __name__, url_prefix="/admin")
bp.before_app_request(guard.check)  # app-wide: an /admin route registered elsewhere is guarded too


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
    chat,
    cleanup,
    display,
    evidence,
    export,
    forecast,
    forms,
    held,
    inbox,
    labels,
    notifications,
    overview,
    people,
    replies,
    retention,
    spam,
    start,
    tags,
    triage,
    workflow,
)
