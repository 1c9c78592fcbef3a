"""Replies through the outbox: queued with their e-mail's outbox row, sent to the person, outcome kept.

A reply (or an acknowledgement) is one ``replies`` row and one ``deliveries``
row (channel ``email``, kind ``reply`` or ``ack``) written in the caller's
transaction, so a commit means a send, with the notifications' lease,
retries and delivery health (``app.outbox``). The outbox's send loop hands
these rows to ``app.replies.delivery``, which mails each to the inquiry's
address, never to the site's recipients, and never in a digest.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from app.core import clock
from app.models import Admin, Delivery, DeliveryChannel, DeliveryKind, Inquiry, Reply, ReplyKind, ReplyStatus
from app.outbox import store
from app.replies import message

RETRYING = "retrying"  # shown, never stored: a queued reply whose last attempt failed


def queue(
    session: Session,
    inquiry_id: int,
    kind: ReplyKind,
    subject: str,
    body: str,
    locale: str,
    reply_to: str | None = None,
    admin_id: int | None = None,
) -> int:
    """Add a reply and its outbox row in the caller's transaction; the reply's id."""
    if kind == ReplyKind.REPLY:  # the thread's last message: retention counted from it keeps the inquiry longer
        session.execute(update(Inquiry).where(Inquiry.id == inquiry_id).values(last_message_at=clock.now()))
    [delivery_id] = store.add(session, [(inquiry_id, DeliveryChannel.EMAIL, DeliveryKind(kind))])
    return session.execute(
        insert(Reply)
        .values(
            inquiry_id=inquiry_id,
            admin_id=admin_id,
            kind=kind,
            subject=subject,
            body=body,
            locale=locale,
            reply_to=reply_to,
            message_id=message.new_message_id(),
            status=ReplyStatus.QUEUED,
            delivery_id=delivery_id,
            created_at=clock.now(),
        )
        .returning(Reply.id)
    ).scalar_one()


@dataclass(frozen=True)
class Shown:
    """A reply as the detail page shows it: its state (a ``ReplyStatus``, or ``RETRYING``), last error, author."""

    reply: Reply
    state: str
    attempts: int
    last_error: str | None
    author: str | None


def of_inquiry(session: Session, inquiry_id: int) -> list[Shown]:
    """The replies and acknowledgements sent about an inquiry, oldest first, with their outbox state."""
    rows = session.execute(
        select(Reply, Delivery.status, Delivery.attempts, Delivery.last_error, Admin.name)
        .outerjoin(Delivery, Delivery.id == Reply.delivery_id)
        .outerjoin(Admin, Admin.id == Reply.admin_id)
        .where(Reply.inquiry_id == inquiry_id)
        .order_by(Reply.created_at, Reply.id)
    ).all()
    return [
        Shown(reply, _state(reply, status, attempts or 0), attempts or 0, error, author)
        for reply, status, attempts, error, author in rows
    ]


def _state(reply: Reply, status: str | None, attempts: int) -> str:
    if reply.status in (ReplyStatus.SENT, ReplyStatus.FAILED) or status is None:
        return reply.status
    return RETRYING if attempts else ReplyStatus.QUEUED
