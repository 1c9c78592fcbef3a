"""Delivery health for the admin pages: pending, failed and the last success per channel
(each of ``app.notify.channels.CHANNELS``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from flask_babel import LazyString
from sqlalchemy import case, func, or_, select
from sqlalchemy.orm import Session

from app.core import clock
from app.models import Delivery, DeliveryStatus
from app.notify import channels

FAILING_ATTEMPTS = 3  # a pending delivery this many attempts in counts as failing
FAILING_LOOKBACK = timedelta(days=7)  # a failed delivery this recent keeps the banner up


@dataclass(frozen=True)
class ChannelHealth:
    """One channel's figures."""

    channel: str
    label: LazyString | str  # what the pages call it (``Channel.label``)
    pending: int
    failed: int
    last_success: datetime | None


def per_channel(session: Session) -> list[ChannelHealth]:
    """Pending and failed counts and the last success, for each channel (one grouped query)."""
    rows = session.execute(
        select(
            Delivery.channel,
            func.count(case((Delivery.status == DeliveryStatus.PENDING, 1))),
            func.count(case((Delivery.status == DeliveryStatus.FAILED, 1))),
            func.max(Delivery.delivered_at),
        ).group_by(Delivery.channel)
    ).all()
    found = {channel: (pending, failed, last) for channel, pending, failed, last in rows}
    return [
        ChannelHealth(channel.name, channel.label, *found.get(channel.name, (0, 0, None)))
        for channel in channels.CHANNELS
    ]


def failing(session: Session) -> bool:
    """Whether deliveries are failing: one failed lately, or one pending after several attempts."""
    since = clock.now() - FAILING_LOOKBACK
    return (
        session.scalar(
            select(Delivery.id)
            .where(
                or_(
                    (Delivery.status == DeliveryStatus.FAILED) & (Delivery.finished_at >= since),
                    (Delivery.status == DeliveryStatus.PENDING) & (Delivery.attempts >= FAILING_ATTEMPTS),
                )
            )
            .limit(1)
        )
        is not None
    )
