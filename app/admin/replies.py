"""Replying from the inbox: ``POST /admin/inquiries/<id>/reply``, behind the admin login like every page
under /admin, CSRF-checked like every admin form; the reply itself is ``app.replies``'.

``GET /admin/inquiries/<id>/replies.json`` gives the replies' states, read
as the detail page reads them, so ``static/replies.js`` can show a queued
reply become sent without a reload.
"""

from __future__ import annotations

from flask import flash, jsonify, redirect, url_for
from flask import request as http_request
from flask_babel import get_locale
from flask_babel import gettext as _
from flask_login import current_user
from sqlalchemy import update
from werkzeug.exceptions import BadRequest

from app import audit
from app.admin import bp
from app.admin.inbox import render_detail
from app.admin.inquiries import get_inquiry_or_404, get_writable_inquiry_or_403
from app.core import clock, db
from app.inquiries.retention import visible_now
from app.models import AuditAction, Inquiry, ReplyKind, ReplyStatus
from app.outbox.hook import wake
from app.replies import compose, sending


@bp.post("/inquiries/<int:inquiry_id>/reply")
def send_reply(inquiry_id: int):
    """Queue the admin's reply to the person who wrote; the inquiry becomes answered; audited."""
    inquiry = get_writable_inquiry_or_403(inquiry_id)
    if not compose.available(inquiry):
        raise BadRequest(
            _(
                "This inquiry cannot be answered from the inbox: e-mail is not set up, it has no "
                "address, or it is in the spam folder."
            )
        )
    written, errors = compose.check(http_request.form)
    if errors:
        return render_detail(inquiry, reply_draft=written, reply_errors=errors), 422
    with db.transaction(write=True) as session:
        if not _still_visible(session, inquiry_id):
            raise BadRequest(_("This inquiry was deleted meanwhile: nothing was sent."))
        sending.queue(
            session,
            inquiry_id,
            ReplyKind.REPLY,
            written.subject,
            written.body,
            str(get_locale()),
            compose.reply_to(current_user.email, inquiry_id),
            current_user.id,
        )
        _mark_answered(session, inquiry_id)
        audit.record(session, current_user, AuditAction.REPLY_SENT, 1, f"inquiry #{inquiry_id}")
    wake()
    flash(_("Reply queued: it is sent in a moment, and its state is shown below."))
    return redirect(url_for("admin.detail", inquiry_id=inquiry_id, _anchor="replies"), 303)


@bp.get("/inquiries/<int:inquiry_id>/replies.json")
def reply_states(inquiry_id: int):
    """The state of each reply about the inquiry, in words of the admin's language, and whether any still
    waits for the outbox; who may open the inquiry may ask (opening this records no access: it shows no
    more than the page already did)."""
    inquiry = get_inquiry_or_404(inquiry_id)
    shown = sending.of_inquiry(db.get_session(), inquiry.id)
    return jsonify(
        replies=[
            {
                "id": each.reply.id,
                "state": each.state,
                "words": state_words(each.state),
                # What a screen reader announces when the state changes: the words and which reply.
                "announce": _("%(state)s: %(subject)s", state=state_words(each.state), subject=each.reply.subject),
                "error": _("Last error: %(error)s", error=each.last_error) if _shows_error(each) else None,
            }
            for each in shown
        ],
        waiting=any(each.state in WAITING for each in shown),
    )


WAITING = frozenset({ReplyStatus.QUEUED, sending.RETRYING})


def state_words(state: str) -> str:
    """A reply's state as the detail page words it (``ReplyStatus`` or ``sending.RETRYING``)."""
    if state == ReplyStatus.SENT:
        return _("Sent")
    if state == ReplyStatus.FAILED:
        return _("Failed")
    if state == sending.RETRYING:
        return _("Retrying")
    return _("Queued")


def _shows_error(shown: sending.Shown) -> bool:
    return shown.state in (sending.RETRYING, ReplyStatus.FAILED) and bool(shown.last_error)


def _still_visible(session, inquiry_id: int) -> bool:
    """Whether the inquiry is still there and visible, inside the write transaction: a no-op update, so on
    PostgreSQL it also locks the row, and a delete racing the reply waits instead of failing its foreign key."""
    return (
        session.execute(
            update(Inquiry).where(Inquiry.id == inquiry_id, visible_now(session, None)).values(id=Inquiry.id),
            execution_options={"synchronize_session": False, "preserve_rowcount": True},
        ).rowcount
        == 1
    )


def _mark_answered(session, inquiry_id: int) -> None:
    """Answered by this admin, now, unless it was already (``app.admin.workflow``'s meaning)."""
    session.execute(
        update(Inquiry)
        .where(Inquiry.id == inquiry_id, Inquiry.answered_at.is_(None))
        .values(answered_at=clock.now(), answered_by=current_user.id),
        execution_options={"synchronize_session": False},
    )
