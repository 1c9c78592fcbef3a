"""The inbox workflow: read and unread (each admin's own), answered (the team's), and the reply link.

Opening an inquiry records this admin's opening and makes it read for them
alone (``app.inquiries.reads``); "Mark read" and "Mark unread" change only
their own mark, and nothing of it goes to the audit log, which records what
changes for everyone. "Mark answered" records who and when ("Mark
unanswered" undoes it): one conditional ``UPDATE`` in its own short write
transaction (so two admins racing change it once) and one audit entry.
"""

from __future__ import annotations

from urllib.parse import quote

from flask import flash, redirect, url_for
from flask_babel import gettext as _
from flask_login import current_user
from sqlalchemy import ColumnElement, select, update

from app import audit
from app.admin import bp, display
from app.admin.inquiries import get_inquiry_or_404, get_writable_inquiry_or_403, in_scope
from app.core import clock, db
from app.core.i18n import local_time
from app.forms import answers as form_answers
from app.inquiries import access, reads
from app.inquiries.retention import visible_now
from app.models import AccessKind, Admin, AuditAction, Inquiry

SUBJECT_MAX = 60
QUOTE_MAX = 1500  # mail clients refuse very long mailto: links; the quote is cut, never the address


def record_opening(inquiry_id: int) -> None:
    """Record this admin's opening of the inquiry, read for them from now; nothing if they may not see it.

    Its own short write transaction, before the page reads anything, so the
    page (and the unread count beside it) already sees the change. The one
    write of a GET, and one no other admin sees (the record of the access, with
    its row in ``accesses``).
    """
    with db.transaction(write=True) as session:
        if _visible(session, inquiry_id):
            reads.opened(session, inquiry_id, current_user.id, clock.now())
            access.add(session, current_user, AccessKind.OPENED, [inquiry_id])


@bp.post("/inquiries/<int:inquiry_id>/read")
def mark_read(inquiry_id: int):
    """Mark an inquiry read for this admin without opening it (a page loaded from another site does not)."""
    get_inquiry_or_404(inquiry_id)
    with db.transaction(write=True) as session:
        if _visible(session, inquiry_id):
            reads.mark_read(session, inquiry_id, current_user.id, clock.now())
    flash(_("Marked read."))
    return redirect(url_for("admin.detail", inquiry_id=inquiry_id), 303)


@bp.post("/inquiries/<int:inquiry_id>/unread")
def mark_unread(inquiry_id: int):
    """Mark an inquiry unread again for this admin: bold in their inbox and counted in their navigation."""
    get_inquiry_or_404(inquiry_id)
    with db.transaction(write=True) as session:
        reads.mark_unread(session, inquiry_id, current_user.id)
    flash(_("Marked unread."))
    return redirect(url_for("admin.inbox"), 303)


@bp.post("/inquiries/<int:inquiry_id>/answered")
def mark_answered(inquiry_id: int):
    """Record that this admin answered the inquiry, and when."""
    get_writable_inquiry_or_403(inquiry_id)
    _change(
        inquiry_id,
        Inquiry.answered_at.is_(None),
        AuditAction.MARKED_ANSWERED,
        answered_at=clock.now(),
        answered_by=current_user.id,
    )
    flash(_("Marked answered."))
    return redirect(url_for("admin.detail", inquiry_id=inquiry_id), 303)


@bp.post("/inquiries/<int:inquiry_id>/unanswered")
def mark_unanswered(inquiry_id: int):
    """Undo "Mark answered"."""
    get_writable_inquiry_or_403(inquiry_id)
    _change(
        inquiry_id, Inquiry.answered_at.is_not(None), AuditAction.MARKED_UNANSWERED, answered_at=None, answered_by=None
    )
    flash(_("Marked unanswered."))
    return redirect(url_for("admin.detail", inquiry_id=inquiry_id), 303)


def answered_by_name(inquiry: Inquiry) -> str | None:
    """The name of the admin who marked ``inquiry`` answered (None if unanswered or that admin was removed)."""
    if inquiry.answered_by is None:
        return None
    return db.get_session().scalar(select(Admin.name).where(Admin.id == inquiry.answered_by))


def reply_link(inquiry: Inquiry) -> str:
    """A ``mailto:`` link to the inquirer: subject "Re: <first line>", the message quoted (RFC 6068 encoding)."""
    subject = _("Re: %(topic)s", topic=_topic(form_answers.summary(inquiry)))
    body = "\r\n".join(
        [
            "",
            "",
            _("On %(when)s, %(name)s wrote:", when=local_time(inquiry.created_at), name=display.who(inquiry)),
            *(f"> {line}" for line in _quoted(inquiry.message).splitlines()),
        ]
    )
    return f"mailto:{quote(inquiry.email, safe='@')}?subject={quote(subject, safe='')}&body={quote(body, safe='')}"


def _topic(message: str) -> str:
    line = next((part.strip() for part in message.splitlines() if part.strip()), "")
    return line if len(line) <= SUBJECT_MAX else line[: SUBJECT_MAX - 1].rstrip() + "…"


def _quoted(message: str) -> str:
    return message if len(message) <= QUOTE_MAX else message[:QUOTE_MAX].rstrip() + "\n[…]"


def _visible(session, inquiry_id: int) -> bool:
    """Whether this admin may see the inquiry (``get_inquiry_or_404``'s rule), read inside the caller's write
    transaction: a cleanup or a colleague may have deleted it since any earlier check."""
    return (
        session.scalar(select(Inquiry.id).where(Inquiry.id == inquiry_id, visible_now(session, None), in_scope()))
        is not None
    )


def _change(inquiry_id: int, unless_done: ColumnElement[bool], action: AuditAction, **values) -> bool:
    """Apply ``values`` if the inquiry is visible and ``unless_done`` holds; audit it. Whether it changed.

    Its own short write transaction (on SQLite the write lock first, then a
    fresh read), so admins racing to mark one inquiry wait their turn instead
    of failing to upgrade a read transaction; the loser changes nothing.
    """
    with db.transaction(write=True) as session:
        result = session.execute(
            update(Inquiry).where(Inquiry.id == inquiry_id, unless_done, visible_now(session, None)).values(**values),
            execution_options={"synchronize_session": False},
        )
        if db.rowcount(result) != 1:
            return False
        audit.record(session, current_user, action, 1, f"inquiry #{inquiry_id}")
    return True
