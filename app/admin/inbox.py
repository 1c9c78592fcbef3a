"""The inbox list and the detail page of one inquiry; the list of any folder (the Spam page too)."""

from __future__ import annotations

from flask_babel import gettext as _
from flask import render_template, request
from werkzeug.exceptions import BadRequest

from app import cleanup, db, retention
from app.admin import bp
from app.admin.inquiries import Cursor, count, get_inquiry_or_404, inbox_page

MAX_QUERY_LENGTH = 254


@bp.get("/")
def inbox():
    """Visible inquiries, newest first, 50 a page, optionally filtered by name or email."""
    return folder_page(retention.INBOX, "admin.inbox", "admin_inbox")


@bp.get("/inquiries/<int:inquiry_id>")
def detail(inquiry_id: int):
    """The whole inquiry, its legal hold and the delete and hold forms ("Not spam" for spam)."""
    return render_template("admin/detail.html", inquiry=get_inquiry_or_404(inquiry_id), errors={})


def folder_page(policy: retention.Policy, endpoint: str, trigger: str) -> str:
    """One folder's list page: its rows, the search, the pager, and the spam count beside the tabs."""
    query = request.args.get("q", "").strip()
    if len(query) > MAX_QUERY_LENGTH:
        raise BadRequest(_("The search is too long (at most %(max)s characters).", max=MAX_QUERY_LENGTH))
    session = db.get_session()
    page = inbox_page(session, query, after=_cursor_arg("after"), before=_cursor_arg("before"), policy=policy)
    cleanup.trigger(trigger)
    return render_template(
        "admin/inbox.html", page=page, query=query, folder=policy.status, endpoint=endpoint,
        spam_count=count(session, retention.SPAM), spam_days=retention.spam_retention_days(session),
    )


def _cursor_arg(name: str) -> Cursor | None:
    token = request.args.get(name)
    return Cursor.decode(token) if token else None
