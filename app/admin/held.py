"""E-mails held apart (``app.conversations``): the messages no inquiry matched, or that came from another
address than the inquiry's, for owners to look at; never put into a thread without an owner's decision.

An owner may put a held message into the inquiry it named (its sender then
was another address: a person writing from their work address, say), or
delete it, forgotten then as a deleted inquiry is (``app.inquiries.gone``). Unanswered, the cleanup
deletes it after ``HELD_KEEP``. Its files wait with it (``Attachment.held_message_id``): listed here and
downloaded as an inquiry's are, moved to the inquiry when it joins the thread, deleted with it.
"""

from __future__ import annotations

from flask import abort, flash, redirect, render_template, url_for
from flask_babel import gettext as _
from flask_login import current_user
from sqlalchemy import delete, select, update

from app import audit
from app.admin import bp
from app.admin.attachments import stream_file
from app.cleanup.targets import HELD_KEEP
from app.conversations import store
from app.core import clock, db
from app.inquiries import gone
from app.models import AuditAction, InboundMessage, Inquiry, MessageKind, MessageState


@bp.get("/held")
def held_messages():
    """The messages held apart, newest first, with the inquiry each one named, if any."""
    session = db.get_session()
    messages = store.held(session)
    files = store.held_files(session, [message.id for message in messages])
    return render_template("admin/held.html", messages=messages, files=files, keep_days=HELD_KEEP.days)


@bp.get("/held/<int:message_id>/files/<int:attachment_id>")
def download_held_file(message_id: int, attachment_id: int):
    """File ``attachment_id`` of held message ``message_id``, as a download under its display name."""
    attachment = store.held_file(db.get_session(), message_id, attachment_id)
    if attachment is None:
        abort(404, _("This file does not exist, or its message was deleted or put into a conversation."))
    return stream_file(attachment, "attachment")


def _held_or_404(session, message_id: int) -> InboundMessage:
    message = session.scalar(
        select(InboundMessage).where(InboundMessage.id == message_id, InboundMessage.state == MessageState.HELD)
    )
    if message is None:
        abort(404)
    return message


@bp.post("/held/<int:message_id>/thread")
def thread_held(message_id: int):
    """Put a held message into the thread of the inquiry it named; it reopens it as an answer does."""
    session = db.get_session(write=True)
    message = _held_or_404(session, message_id)
    if message.inquiry_id is None or session.get(Inquiry, message.inquiry_id) is None:
        abort(404)
    session.execute(
        update(InboundMessage).where(InboundMessage.id == message_id).values(state=MessageState.THREAD, reason=None)
    )
    store.thread_files(session, message_id, message.inquiry_id)
    if message.kind == MessageKind.MESSAGE:
        store.reopen(session, message.inquiry_id, clock.now())
    audit.record(session, current_user, AuditAction.HELD_MESSAGE_THREADED, 1, f"inquiry {message.inquiry_id}")
    session.commit()
    flash(_("The message is now in the inquiry's conversation."))
    return redirect(url_for("admin.detail", inquiry_id=message.inquiry_id), 303)


@bp.post("/held/<int:message_id>/delete")
def delete_held(message_id: int):
    """Delete a held message, its files with it (``ON DELETE CASCADE``)."""
    session = db.get_session(write=True)
    _held_or_404(session, message_id)
    session.execute(delete(InboundMessage).where(InboundMessage.id == message_id))
    audit.record(session, current_user, AuditAction.HELD_MESSAGE_DELETED, 1)
    session.commit()
    gone.forget_after_response()  # its text leaves the database file and the WAL, as a deleted inquiry's does
    flash(_("The message was deleted."))
    return redirect(url_for("admin.held_messages"), 303)
