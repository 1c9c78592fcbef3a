"""The delivery log of the Notifications page: every notification of the last 30 days, newest first, paged.

Each entry is an outbox row (``deliveries``) with its inquiry's form: when
it was made, on which channel, how many attempts, the last error (never an
address or a secret: ``Outcome.error``), the next try or when it ended. The
cleanup deletes finished rows after the same 30 days
(``app.cleanup.targets.DELIVERIES_KEEP``, kept equal by a test), so the
log shows what is kept.
Replies and acknowledgements to the people who wrote are not notifications
and are left out. ``send_again`` makes a failed notification a new row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.core import clock
from app.models import Delivery, DeliveryKind, DeliveryStatus, Form, Inquiry
from app.outbox import store

KEEP = timedelta(days=30)
PER_PAGE = 50
MAX_PAGE = 1000  # 50,000 rows: further than 30 days of notifications reach at any sane rate
KINDS = (DeliveryKind.INQUIRY, DeliveryKind.CAPPED, DeliveryKind.TEST, DeliveryKind.MESSAGE, DeliveryKind.ASSIGNEE)


@dataclass(frozen=True)
class Entry:
    """One delivery as the log shows it, with its inquiry's form (None for a test, or a form deleted)."""

    delivery: Delivery
    form: str | None

    @property
    def next_try(self) -> datetime | None:
        """When a pending delivery is tried next; None once it is done or failed."""
        return self.delivery.next_attempt_at if self.delivery.status == DeliveryStatus.PENDING else None


@dataclass(frozen=True)
class Page:
    """A page of the log: its entries, its number (from 1) and whether an older page follows."""

    entries: list[Entry]
    number: int
    more: bool


def page(session: Session, number: int, channel: str | None = None) -> Page:
    """Page ``number`` of the last 30 days' notifications, on ``channel`` alone when given."""
    number = min(max(number, 1), MAX_PAGE)
    since = clock.now() - KEEP
    statement = (
        select(Delivery, Form.slug)
        .outerjoin(Inquiry, Inquiry.id == Delivery.inquiry_id)
        .outerjoin(Form, Form.id == Inquiry.form_id)
        .where(Delivery.created_at >= since, Delivery.kind.in_(KINDS))
        .order_by(Delivery.id.desc())
        .offset((number - 1) * PER_PAGE)
        .limit(PER_PAGE + 1)
    )
    if channel is not None:
        statement = statement.where(Delivery.channel == channel)
    rows = session.execute(statement).all()
    entries = [Entry(delivery, slug) for delivery, slug in rows[:PER_PAGE]]
    return Page(entries, number, len(rows) > PER_PAGE)


def send_again(session: Session, delivery_id: int) -> Delivery | None:
    """A new pending row, due now, for the failed notification ``delivery_id`` (one held back by the hourly
    cap goes on its own); the failed row, or None when there is no such failed notification."""
    row = session.get(Delivery, delivery_id)
    if row is None or row.status != DeliveryStatus.FAILED or row.kind not in KINDS:
        return None
    kind = DeliveryKind.INQUIRY if row.kind == DeliveryKind.CAPPED else row.kind
    store.add(session, [(row.inquiry_id, row.channel, kind)])
    return row
