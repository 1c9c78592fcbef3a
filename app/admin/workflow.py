"""The inbox workflow: read and unread, answered, and the reply link.

An inquiry becomes read when any admin first opens it; "Mark unread" undoes
that. "Mark answered" records who and when ("Mark unanswered" undoes it).
Every change of state is one conditional ``UPDATE`` in its own short write
transaction (so two admins racing change it once) and one audit entry;
opening an inquiry already read changes nothing and records nothing.
"""

from __future__ import annotations

from urllib.parse import quote

from flask import flash, redirect, url_for
from flask_babel import gettext as _
from flask_login import current_user
from sqlalchemy import ColumnElement, select, update

from app.admin import audit, bp
from app.admin.inquiries import get_inquiry_or_404
from app.core import clock, db
from app.core.i18n import local_time
from app.inquiries.retention import visible_now
from app.models import Admin, Inquiry

SUBJECT_MAX = 60
QUOTE_MAX = 1500  # mail clients refuse very long mailto: links; the quote is cut, never the address


def mark_read_on_open(inquiry_id: int) -> None:
    """Mark the inquiry read if no admin has opened it before (audited once); nothing if it is not visible.

    Called before the page reads anything, so the page (and the unread count
    beside it) already sees the change.
    """
    _change(inquiry_id, Inquiry.read_at.is_(None), "marked_read", read_at=clock.now())


@bp.post("/inquiries/<int:inquiry_id>/unread")
def mark_unread(inquiry_id: int):
    """Mark an inquiry unread again: bold in the inbox and counted in the navigation."""
    get_inquiry_or_404(inquiry_id)
    _change(inquiry_id, Inquiry.read_at.is_not(None), "marked_unread", read_at=None)
    flash(_("Marked unread."))
    return redirect(url_for("admin.inbox"), 303)


@bp.post("/inquiries/<int:inquiry_id>/answered")
def mark_answered(inquiry_id: int):
    """Record that this admin answered the inquiry, and when."""
    get_inquiry_or_404(inquiry_id)
    _change(inquiry_id, Inquiry.answered_at.is_(None), "marked_answered",
            answered_at=clock.now(), answered_by=current_user.id)
    flash(_("Marked answered."))
    return redirect(url_for("admin.detail", inquiry_id=inquiry_id), 303)


@bp.post("/inquiries/<int:inquiry_id>/unanswered")
def mark_unanswered(inquiry_id: int):
    """Undo "Mark answered"."""
    get_inquiry_or_404(inquiry_id)
    _change(inquiry_id, Inquiry.answered_at.is_not(None), "marked_unanswered", answered_at=None, answered_by=None)
    flash(_("Marked unanswered."))
    return redirect(url_for("admin.detail", inquiry_id=inquiry_id), 303)


def answered_by_name(inquiry: Inquiry) -> str | None:
    """The name of the admin who marked ``inquiry`` answered (None if unanswered or that admin was removed)."""
    if inquiry.answered_by is None:
        return None
    return db.get_session().scalar(select(Admin.name).where(Admin.id == inquiry.answered_by))


def reply_link(inquiry: Inquiry) -> str:
    """A ``mailto:`` link to the inquirer: subject "Re: <first line>", the message quoted (RFC 6068 encoding)."""
    subject = _("Re: %(topic)s", topic=_topic(inquiry.message))
    body = "\r\n".join([
        "", "",
        _("On %(when)s, %(name)s wrote:", when=local_time(inquiry.created_at), name=inquiry.name),
        *(f"> {line}" for line in _quoted(inquiry.message).splitlines()),
    ])
    return f"mailto:{quote(inquiry.email, safe='@')}?subject={quote(subject, safe='')}&body={quote(body, safe='')}"


def _topic(message: str) -> str:
    line = next((part.strip() for part in message.splitlines() if part.strip()), "")
    return line if len(line) <= SUBJECT_MAX else line[: SUBJECT_MAX - 1].rstrip() + "…"


def _quoted(message: str) -> str:
    return message if len(message) <= QUOTE_MAX else message[:QUOTE_MAX].rstrip() + "\n[…]"


def _change(inquiry_id: int, unless_done: ColumnElement[bool], action: str, **values) -> bool:
    """Apply ``values`` if the inquiry is visible and ``unless_done`` holds; audit it. Whether it changed.

    Its own short write transaction (on SQLite the write lock first, then a
    fresh read), so admins racing to open one inquiry wait their turn instead
    of failing to upgrade a read transaction; the loser changes nothing.
    """
    with db.transaction(write=True) as session:
        result = session.execute(
            update(Inquiry).where(Inquiry.id == inquiry_id, unless_done, visible_now(session, None)).values(**values),
            execution_options={"synchronize_session": False},
        )
        if result.rowcount != 1:
            return False
        audit.record(session, action, 1, f"inquiry #{inquiry_id}")
    return True
