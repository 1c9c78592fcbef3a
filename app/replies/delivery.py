"""Sending a reply or an acknowledgement, for the outbox's send loop (``app.notify.deliver``).

Kept apart from ``app.replies.sending`` so that the send loop's package
(``app.notify``, whose hook runs the loop) imports nothing that imports it
back: this module reads the reply, builds its e-mail and hands it to the
loop's relay, and keeps each finished attempt's outcome on the reply, since
finished outbox rows are cleaned up after 30 days.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.core import clock, db
from app.models import Delivery, DeliveryStatus, Inquiry, Reply
from app.replies import KINDS, message

QUEUED, SENT, RETRYING, FAILED = "queued", "sent", "retrying", "failed"


def is_reply(delivery: Delivery) -> bool:
    """Whether an outbox row carries a reply or an acknowledgement (sent to the person, not the site)."""
    return delivery.kind in KINDS


def send(delivery: Delivery, inquiry: Inquiry, relay: Callable[[], Any]) -> str | None:
    """One attempt at the reply ``delivery`` carries, to ``inquiry``'s address, over the batch's ``relay()``
    (an ``app.notify.email.Relay``); the error, or None when the relay took it."""
    with db.transaction() as session:
        reply = session.scalar(select(Reply).where(Reply.delivery_id == delivery.id))
        if reply is not None:
            session.expunge(reply)
    if reply is None:
        return "reply gone"
    try:
        mail = message.build(reply, inquiry, clock.now())
    except ValueError:
        return "the address cannot be used in an e-mail"
    return relay().send(mail).error


def record(session: Session, outcomes: list[tuple[Delivery, str, datetime]]) -> None:
    """Keep each finished reply's outcome ``(outbox row, its new status, when)`` on the reply."""
    for delivery, status, at in outcomes:
        if not is_reply(delivery) or status == DeliveryStatus.PENDING:
            continue
        done = status == DeliveryStatus.DONE
        session.execute(update(Reply).where(Reply.delivery_id == delivery.id)
                        .values(status=SENT if done else FAILED, sent_at=at if done else None))
