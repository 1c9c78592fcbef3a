"""The pruner (being built): read predicate, retention and trigger hook."""

from __future__ import annotations

import logging

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from flask import Flask
from sqlalchemy import ColumnElement, and_, func, or_, select
from sqlalchemy.orm import Session

from app import clock
from app.models import Setting, Submission

log = logging.getLogger(__name__)

DEFAULT_RETENTION_DAYS = 180
MAX_RETENTION_DAYS = 3650


def init_app(app: Flask) -> None:
    """Nothing to set up yet."""


def trigger(name: str) -> None:
    """Ask for a prune after the current response (not wired yet)."""


def retention_days(session: Session) -> int:
    """The stored retention in days; 180 when missing or invalid (a warning for invalid)."""
    raw = session.scalar(select(Setting.value).where(Setting.key == "retention_days"))
    if raw is None:
        return DEFAULT_RETENTION_DAYS
    try:
        days = int(raw)
    except ValueError:
        days = 0
    if not 1 <= days <= MAX_RETENTION_DAYS:
        log.warning("invalid stored retention_days; using %d", DEFAULT_RETENTION_DAYS)
        return DEFAULT_RETENTION_DAYS
    return days


def visible(cutoff: datetime) -> ColumnElement[bool]:
    """The shared read predicate: inquiries admins may see at ``cutoff``.

    A row past retention is hidden at once, even before a run deletes it,
    unless it is on legal hold.
    """
    return or_(Submission.legal_hold.is_(True), Submission.created_at >= cutoff)


def expired(cutoff: datetime) -> ColumnElement[bool]:
    """The delete predicate for inquiries: older than ``cutoff`` and not on hold."""
    return and_(Submission.legal_hold.is_(False), Submission.created_at < cutoff)


def cutoff_for(moment: datetime, days: int) -> datetime:
    """The oldest ``created_at`` kept at ``moment`` with a retention of ``days``."""
    return moment - timedelta(days=days)


def current_cutoff(session: Session) -> datetime:
    """The cutoff in force now, from the stored retention."""
    return cutoff_for(clock.now(), retention_days(session))


@dataclass(frozen=True)
class Preview:
    """What a retention of ``retention_days`` would delete at the next run."""

    retention_days: int
    count: int
    oldest: datetime | None


def preview(session: Session, days: int) -> Preview:
    """Count (and date the oldest of) the inquiries a retention of ``days`` would delete now."""
    condition = expired(cutoff_for(clock.now(), days))
    count, oldest = session.execute(
        select(func.count(), func.min(Submission.created_at)).where(condition)
    ).one()
    if oldest is not None and oldest.tzinfo is None:
        oldest = oldest.replace(tzinfo=timezone.utc)
    return Preview(days, count, oldest)
