"""The inbox list and the detail page of one inquiry."""

from __future__ import annotations

from flask import render_template, request
from werkzeug.exceptions import BadRequest

from app import cleanup, db
from app.admin import bp
from app.admin.inquiries import Cursor, get_inquiry_or_404, inbox_page

MAX_QUERY_LENGTH = 254


@bp.get("/")
def inbox():
    """Visible inquiries, newest first, 50 a page, optionally filtered by name or email."""
    query = request.args.get("q", "").strip()
    if len(query) > MAX_QUERY_LENGTH:
        raise BadRequest(f"The search is too long (at most {MAX_QUERY_LENGTH} characters).")
    page = inbox_page(
        db.get_session(), query, after=_cursor_arg("after"), before=_cursor_arg("before")
    )
    cleanup.trigger("admin_inbox")
    return render_template("admin/inbox.html", page=page, query=query)


@bp.get("/inquiries/<int:inquiry_id>")
def detail(inquiry_id: int):
    """The whole inquiry, its legal hold and the delete and hold forms."""
    return render_template("admin/detail.html", inquiry=get_inquiry_or_404(inquiry_id), errors={})


def _cursor_arg(name: str) -> Cursor | None:
    token = request.args.get(name)
    return Cursor.decode(token) if token else None
