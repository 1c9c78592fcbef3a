"""The retention rule: how long inquiries are kept, and which ones that hides and deletes.

One rule, used by the cleanup, the admin pages, the export and the privacy
page:

* the stored value: the ``retention_days`` setting, ``MIN_DAYS`` to
  ``MAX_DAYS``, ``DEFAULT_DAYS`` (or ``SUNDOWN_DEFAULT_RETENTION_DAYS``) when
  missing or invalid;
* the cutoff: ``now - retention``;
* ``visible(cutoff)``, the read predicate: an inquiry past retention is hidden
  at once, even before a cleanup deletes it, unless it is on legal hold;
* ``expired(cutoff)``, the delete predicate: its exact complement.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from flask import current_app
from sqlalchemy import ColumnElement, and_, func, or_, select
from sqlalchemy.orm import Session

from app import clock, dialect
from app.models import Inquiry, Setting

log = logging.getLogger(__name__)

DEFAULT_DAYS = 180
MIN_DAYS = 1
MAX_DAYS = 3650
KEY = "retention_days"


def default_days() -> int:
    """The retention used before an admin sets one (``SUNDOWN_DEFAULT_RETENTION_DAYS``)."""
    return current_app.config["DEFAULT_RETENTION_DAYS"]


def in_bounds(days: int) -> bool:
    """Whether ``days`` is a retention an admin may choose."""
    return MIN_DAYS <= days <= MAX_DAYS


def retention_days(session: Session) -> int:
    """The stored retention in days; the default when missing or invalid (a warning for invalid)."""
    raw = session.scalar(select(Setting.value).where(Setting.key == KEY))
    if raw is None:
        return default_days()
    try:
        days = int(raw)
    except ValueError:
        days = 0
    if not in_bounds(days):
        log.warning("invalid stored retention_days; using %d", default_days())
        return default_days()
    return days


def parse(raw: str) -> int | None:
    """The whole number of days in ``raw`` if it is a retention in bounds, else None."""
    raw = raw.strip()
    if not raw.isascii() or not raw.isdigit() or len(raw) > 6:
        return None
    days = int(raw)
    return days if in_bounds(days) else None


def save(session: Session, days: int) -> None:
    """Store ``days`` as the retention (the caller commits)."""
    statement = dialect.upsert(session, Setting.__table__).values(key=KEY, value=str(days))
    session.execute(
        statement.on_conflict_do_update(index_elements=["key"], set_={"value": statement.excluded.value})
    )


def cutoff_for(moment: datetime, days: int) -> datetime:
    """The oldest ``created_at`` kept at ``moment`` with a retention of ``days``."""
    return moment - timedelta(days=days)


def current_cutoff(session: Session) -> datetime:
    """The cutoff in force now, from the stored retention."""
    return cutoff_for(clock.now(), retention_days(session))


def visible(cutoff: datetime) -> ColumnElement[bool]:
    """The read predicate: inquiries admins may see at ``cutoff`` (held ones always)."""
    return or_(Inquiry.legal_hold.is_(True), Inquiry.created_at >= cutoff)


def visible_now(session: Session) -> ColumnElement[bool]:
    """The read predicate at the cutoff in force now."""
    return visible(current_cutoff(session))


def expired(cutoff: datetime) -> ColumnElement[bool]:
    """The delete predicate: older than ``cutoff`` and not on hold."""
    return and_(Inquiry.legal_hold.is_(False), Inquiry.created_at < cutoff)


@dataclass(frozen=True)
class Preview:
    """What a retention of ``retention_days`` would delete at the next cleanup."""

    retention_days: int
    count: int
    oldest: datetime | None


def preview(session: Session, days: int) -> Preview:
    """Count (and date the oldest of) the inquiries a retention of ``days`` would delete now."""
    condition = expired(cutoff_for(clock.now(), days))
    count, oldest = session.execute(
        select(func.count(), func.min(Inquiry.created_at)).where(condition)
    ).one()
    if oldest is not None and oldest.tzinfo is None:
        oldest = oldest.replace(tzinfo=timezone.utc)
    return Preview(days, count, oldest)
