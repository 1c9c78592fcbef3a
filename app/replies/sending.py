"""Replies through the outbox: queued with their e-mail's outbox row, sent to the person, outcome kept.

A reply (or an acknowledgement) is one ``replies`` row and one ``deliveries``
row (channel ``email``, kind ``reply`` or ``ack``) written in the caller's
transaction, so a commit means a send, with the notifications' lease,
retries and delivery health (``app.notify.outbox``). The send loop
(``app.notify.deliver``) hands these rows to ``send``, which reads the reply
and mails it to the inquiry's address, never to the site's recipients, and
never in a digest. ``record`` keeps the outcome on the reply, since finished
outbox rows are cleaned up after 30 days.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from app import clock, db
from app.models import Admin, Delivery, DeliveryStatus, Inquiry, Reply
from app.notify import email, outbox
from app.notify.outbox import Outcome
from app.replies import KINDS, message

QUEUED, SENT, RETRYING, FAILED = "queued", "sent", "retrying", "failed"


def queue(session: Session, inquiry_id: int, kind: str, subject: str, body: str, locale: str,
          reply_to: str | None = None, admin_id: int | None = None) -> int:
    """Add a reply and its outbox row in the caller's transaction; the reply's id."""
    now = clock.now()
    delivery_id = session.execute(insert(Delivery).values(
        inquiry_id=inquiry_id, channel="email", kind=kind, status=DeliveryStatus.PENDING, attempts=0,
        next_attempt_at=now, idempotency_key=outbox.new_key(), created_at=now,
    ).returning(Delivery.id)).scalar_one()
    return session.execute(insert(Reply).values(
        inquiry_id=inquiry_id, admin_id=admin_id, kind=kind, subject=subject, body=body, locale=locale,
        reply_to=reply_to, message_id=message.new_message_id(), status=QUEUED, delivery_id=delivery_id,
        created_at=now,
    ).returning(Reply.id)).scalar_one()


def is_reply(delivery: Delivery) -> bool:
    """Whether an outbox row carries a reply or an acknowledgement (sent to the person, not the site)."""
    return delivery.kind in KINDS


def send(delivery: Delivery, inquiry: Inquiry, relay: Callable[[], email.Relay]) -> Outcome:
    """One attempt at the reply ``delivery`` carries, to ``inquiry``'s address, over the batch's ``relay()``."""
    if not email.configured():
        return Outcome("e-mail not configured")
    with db.transaction() as session:
        reply = session.scalar(select(Reply).where(Reply.delivery_id == delivery.id))
        if reply is not None:
            session.expunge(reply)
    if reply is None:
        return Outcome("reply gone")
    try:
        mail = message.build(reply, inquiry, clock.now())
    except ValueError:
        return Outcome("the address cannot be used in an e-mail")
    return relay().send(mail)


def record(session: Session, outcomes: list[tuple[Delivery, str, datetime]]) -> None:
    """Keep each finished reply's outcome ``(outbox row, its new status, when)`` on the reply."""
    for delivery, status, at in outcomes:
        if not is_reply(delivery) or status == DeliveryStatus.PENDING:
            continue
        done = status == DeliveryStatus.DONE
        session.execute(update(Reply).where(Reply.delivery_id == delivery.id)
                        .values(status=SENT if done else FAILED, sent_at=at if done else None))


@dataclass(frozen=True)
class Shown:
    """A reply as the detail page shows it: its state (queued, sent, retrying, failed), last error, author."""

    reply: Reply
    state: str
    attempts: int
    last_error: str | None
    author: str | None


def of_inquiry(session: Session, inquiry_id: int) -> list[Shown]:
    """The replies and acknowledgements sent about an inquiry, oldest first, with their outbox state."""
    rows = session.execute(
        select(Reply, Delivery.status, Delivery.attempts, Delivery.last_error, Admin.name)
        .outerjoin(Delivery, Delivery.id == Reply.delivery_id).outerjoin(Admin, Admin.id == Reply.admin_id)
        .where(Reply.inquiry_id == inquiry_id).order_by(Reply.created_at, Reply.id)
    ).all()
    return [Shown(reply, _state(reply, status, attempts or 0), attempts or 0, error, author)
            for reply, status, attempts, error, author in rows]


def _state(reply: Reply, status: str | None, attempts: int) -> str:
    if reply.status in (SENT, FAILED) or status is None:
        return reply.status
    return RETRYING if attempts else QUEUED
