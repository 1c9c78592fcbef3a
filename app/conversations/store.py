"""A received e-mail matched to its inquiry and stored, or held apart; its effects on the inquiry.

Matching, in order (``match``): a bounce by the ``Message-ID`` of the reply it
reports on; otherwise the signed tag of the address it was sent to, the
signed thread id in ``In-Reply-To``/``References``, or the ``Message-ID`` of
one of the inquiry's replies there. The inquiry must still exist, and a
person's message must come from the inquiry's own address (``mailbox_key``:
case, ``+tag`` and a provider's dots aside); anything else is held apart for
owners (``MessageState.HELD``), never put in a thread by guesswork.

A person's message in a thread reopens the inquiry: unread again, no longer
answered, open again (``app.inquiries.triage``: a closed one's ``closed_at``
cleared, so a form counting from closing keeps it), its ``last_message_at``
moved (a form whose retention counts from the last message then keeps it
longer), and the site's recipients notified on the form's channels
(``app.notify.enqueue_message``). Automatic replies and bounces are kept in
the thread but change nothing; a bounce marks its reply failed.
One e-mail is stored once: a ``Message-ID`` seen before is skipped, so an
IMAP fetch that stops between storing and deleting does no harm.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from app import notify
from app.conversations import references
from app.conversations.parse import Parsed
from app.core import clock
from app.inquiries import reads, triage
from app.inquiries.addresses import mailbox_key
from app.models import (
    Attachment,
    AttachmentChunk,
    InboundMessage,
    Inquiry,
    InquiryState,
    MessageKind,
    MessageState,
    Reply,
    ReplyStatus,
)

CHUNK_SIZE = 256 * 1024  # as the form's files (``app.attachments.store``)
UNMATCHED, OTHER_SENDER = "unmatched", "other_sender"


@dataclass(frozen=True)
class Stored:
    """What became of a message: ``thread``, ``held`` or ``duplicate``; its inquiry when matched."""

    outcome: str
    inquiry_id: int | None
    message_id: int | None = None
    kind: str = MessageKind.MESSAGE


def match(session: Session, parsed: Parsed) -> int | None:
    """The inquiry ``parsed`` is about, by the references Sundown signed or sent; None when none."""
    if parsed.kind == MessageKind.BOUNCE:
        return _inquiry_of_reply(session, parsed.reported_ids + parsed.references)
    found = references.from_addresses(parsed.recipients) or references.from_references(parsed.references)
    return found or _inquiry_of_reply(session, parsed.references)


def _inquiry_of_reply(session: Session, message_ids: list[str]) -> int | None:
    if not message_ids:
        return None
    return session.scalar(select(Reply.inquiry_id).where(Reply.message_id.in_(message_ids[:50])).limit(1))


def receive(session: Session, parsed: Parsed) -> Stored:
    """Store ``parsed`` in its inquiry's thread or held apart, with its effects (in the caller's transaction)."""
    inquiry_id = match(session, parsed)
    inquiry = session.get(Inquiry, inquiry_id) if inquiry_id is not None else None
    if _seen(session, parsed.message_id):
        return Stored("duplicate", inquiry.id if inquiry else None, kind=parsed.kind)
    reason = _held_because(inquiry, parsed)
    now = clock.now()
    state = MessageState.HELD if reason else MessageState.THREAD
    stored_id = session.execute(
        insert(InboundMessage)
        .values(
            inquiry_id=inquiry.id if inquiry else None,
            state=state,
            kind=parsed.kind,
            reason=reason or (f"bounce {parsed.status}" if parsed.status else None),
            sender=(parsed.sender or "")[:254],
            sender_key=mailbox_key(parsed.sender),
            sender_name=parsed.sender_name,
            subject=parsed.subject,
            body=parsed.text,
            message_id=parsed.message_id,
            files_refused=parsed.files_refused,
            received_at=now,
        )
        .returning(InboundMessage.id)
    ).scalar_one()
    if state == MessageState.THREAD and inquiry is not None:
        _save_files(session, {"inquiry_id": inquiry.id}, stored_id, parsed, now)
        _effects(session, inquiry.id, parsed, now)
    else:  # held apart: its files wait with it, for an owner to put into a thread or delete
        _save_files(session, {"held_message_id": stored_id}, stored_id, parsed, now)
    return Stored(state.value, inquiry.id if inquiry else None, stored_id, parsed.kind)


def hold(session: Session, parsed: Parsed, reason: str) -> int:
    """Hold ``parsed`` apart for ``reason`` without matching it (a note of a refused message)."""
    return session.execute(
        insert(InboundMessage)
        .values(
            inquiry_id=None,
            state=MessageState.HELD,
            kind=parsed.kind,
            reason=reason,
            sender=(parsed.sender or "")[:254],
            sender_name=parsed.sender_name,
            subject=parsed.subject,
            body=parsed.text,
            message_id=None,
            files_refused=parsed.files_refused,
            received_at=clock.now(),
        )
        .returning(InboundMessage.id)
    ).scalar_one()


def has_written(session: Session, address: str) -> bool:
    """Whether ``address`` (its mailbox, ``mailbox_key``) has written to us: a message of its in a thread."""
    key = mailbox_key(address)
    return (
        key is not None
        and session.scalar(
            select(InboundMessage.id)
            .where(InboundMessage.sender_key == key, InboundMessage.state == MessageState.THREAD)
            .limit(1)
        )
        is not None
    )


def _seen(session: Session, message_id: str | None) -> bool:
    return (
        message_id is not None
        and session.scalar(select(InboundMessage.id).where(InboundMessage.message_id == message_id).limit(1))
        is not None
    )


def _held_because(inquiry: Inquiry | None, parsed: Parsed) -> str | None:
    """Why ``parsed`` is held apart; None when it belongs in ``inquiry``'s thread."""
    if inquiry is None:
        return UNMATCHED
    if parsed.kind == MessageKind.BOUNCE:
        return None
    if mailbox_key(parsed.sender) is None or mailbox_key(parsed.sender) != mailbox_key(inquiry.email):
        return OTHER_SENDER
    return None


def _effects(session: Session, inquiry_id: int, parsed: Parsed, now: datetime) -> None:
    """A person's message reopens its inquiry; a bounce marks its reply failed; an automatic reply does nothing."""
    if parsed.kind == MessageKind.BOUNCE:
        returned = (parsed.reported_ids + parsed.references)[:50]
        session.execute(
            update(Reply)
            .where(Reply.message_id.in_(returned), Reply.inquiry_id == inquiry_id)
            .values(status=ReplyStatus.FAILED, sent_at=None)
        )
    elif parsed.kind == MessageKind.MESSAGE:
        reopen(session, inquiry_id, now)


def reopen(session: Session, inquiry_id: int, now: datetime) -> None:
    """The inquiry unread (for every admin), unanswered and open again, its thread's last message ``now``; the
    site's recipients told through the outbox."""
    session.execute(
        update(Inquiry).where(Inquiry.id == inquiry_id).values(answered_at=None, answered_by=None, last_message_at=now)
    )
    triage.set_state(session, inquiry_id, InquiryState.OPEN, now)
    reads.unread_for_everyone(session, inquiry_id)
    notify.enqueue_message(session, inquiry_id)


def file_key(stored_id: int) -> str:
    """The ``Attachment.field_key`` of a message's files: ``mail:<message id>``."""
    return f"mail:{stored_id}"


def _save_files(session: Session, owner: dict[str, int], stored_id: int, parsed: Parsed, now: datetime) -> None:
    """The message's files as the form's are stored: a row each, their bytes in pieces; ``owner`` is the
    inquiry's id (``inquiry_id``) for a message in its thread, the message's own (``held_message_id``) for one
    held apart."""
    for file in parsed.files:
        attachment_id = session.execute(
            insert(Attachment)
            .values(
                **owner,
                field_key=file_key(stored_id),
                name=file.name,
                content_type=file.content_type,
                size=len(file.data),
                created_at=now,
            )
            .returning(Attachment.id)
        ).scalar_one()
        for seq, start in enumerate(range(0, len(file.data), CHUNK_SIZE)):
            session.execute(
                insert(AttachmentChunk).values(
                    attachment_id=attachment_id, seq=seq, data=file.data[start : start + CHUNK_SIZE]
                )
            )


def of_inquiry(session: Session, inquiry_id: int) -> list[InboundMessage]:
    """The messages in an inquiry's thread, oldest first."""
    return list(
        session.scalars(
            select(InboundMessage)
            .where(InboundMessage.inquiry_id == inquiry_id, InboundMessage.state == MessageState.THREAD)
            .order_by(InboundMessage.received_at, InboundMessage.id)
        )
    )


def held(session: Session, limit: int = 200) -> list[InboundMessage]:
    """The messages held apart, newest first."""
    return list(
        session.scalars(
            select(InboundMessage)
            .where(InboundMessage.state == MessageState.HELD)
            .order_by(InboundMessage.received_at.desc(), InboundMessage.id.desc())
            .limit(limit)
        )
    )


def held_files(session: Session, message_ids: list[int]) -> dict[int, list[Attachment]]:
    """The files of each of the held messages ``message_ids``, in the order they were sent, in one query."""
    if not message_ids:
        return {}
    files = list(
        session.scalars(select(Attachment).where(Attachment.held_message_id.in_(message_ids)).order_by(Attachment.id))
    )
    return {message_id: [each for each in files if each.held_message_id == message_id] for message_id in message_ids}


def held_file(session: Session, message_id: int, attachment_id: int) -> Attachment | None:
    """File ``attachment_id`` if it came with held message ``message_id``."""
    return session.scalar(
        select(Attachment).where(Attachment.id == attachment_id, Attachment.held_message_id == message_id)
    )


def thread_files(session: Session, message_id: int, inquiry_id: int) -> None:
    """A held message's files move to ``inquiry_id`` as it joins that thread (their ``field_key`` already names
    the message, so the thread lists them under it)."""
    session.execute(
        update(Attachment)
        .where(Attachment.held_message_id == message_id)
        .values(inquiry_id=inquiry_id, held_message_id=None)
    )
