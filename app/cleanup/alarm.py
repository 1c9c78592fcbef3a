"""The alarm when nothing is deleted: expired inquiries still stored, and whether the cleanup is overdue.

The cleanup runs only after ordinary requests, so on an idle site, or with
a run that fails every time, expired data can wait. It is *overdue* when an
expired inquiry (inbox or spam) has waited past its retention longer than
twice ``SUNDOWN_CLEANUP_INTERVAL`` plus ``SUNDOWN_CLEANUP_TIME_BUDGET``: a
healthy site deletes it within one interval, or two with a backlog.

``/metrics`` reads the figures at each scrape (``expired``), ``/healthz``
and the admin pages' banner read ``overdue_now``: one indexed ``EXISTS`` per
policy, remembered by the process for ``FRESH_FOR``, so that neither reads
the stored retentions (the ``settings`` table) on every request.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from flask import current_app
from prometheus_client.core import GaugeMetricFamily
from sqlalchemy import func, or_, select, true
from sqlalchemy.orm import Session

from app.core import clock, db
from app.inquiries import retention
from app.models import CleanupRun, CleanupStatus, Inquiry

FRESH_FOR = timedelta(seconds=60)  # how long a process keeps its answer to "is the cleanup overdue?"
EXTENSION = "sundown.cleanup_alarm"


@dataclass(frozen=True)
class Expired:
    """Inquiries past retention still stored: how many, and how long the oldest has waited (seconds)."""

    count: int
    oldest_wait: float


@dataclass(frozen=True)
class Alarm:
    """Whether the cleanup is overdue, and the last error the ledger names (None when none)."""

    overdue: bool
    last_error: str | None = None


def allowance() -> timedelta:
    """How long expired data may wait before the cleanup counts as overdue."""
    config = current_app.config
    return timedelta(seconds=2 * config["CLEANUP_INTERVAL"] + config["CLEANUP_TIME_BUDGET"])


def expired(session: Session, now: datetime) -> Expired:
    """How many inquiries are past retention at ``now`` (inbox and spam), and the oldest one's wait."""
    total, waits = 0, [0.0]
    for policy in retention.POLICIES:
        cutoffs = retention.cutoffs_at(session, now, policy)
        condition = retention.expired_in(policy, cutoffs)
        total += session.execute(select(func.count()).select_from(Inquiry).where(condition)).scalar_one()
        waits.extend(_waits(session, policy, cutoffs))
    return Expired(total, max(waits))


def _waits(session: Session, policy: retention.Policy, cutoffs: retention.Cutoffs) -> list[float]:
    """Per cutoff (the site's, each form's own): how long its oldest expired inquiry has waited.

    Each is the first row of an index range in ``created_at`` order (``LIMIT 1``), never a scan.
    """
    own = cutoffs.own()
    others = or_(Inquiry.form_id.is_(None), Inquiry.form_id.not_in(list(own))) if own else true()
    groups = [(cutoffs.default, others), *((cutoff, Inquiry.form_id == form_id) for form_id, cutoff in own.items())]
    waits = []
    for cutoff, group in groups:
        first = session.execute(
            select(Inquiry.created_at, Inquiry.last_message_at, Inquiry.form_id)
            .where(retention.expired_in(policy, cutoffs), group)
            .order_by(Inquiry.created_at)
            .limit(1)
        ).first()
        if first is not None:
            counted = first.created_at
            if first.form_id in cutoffs.from_last_message and first.last_message_at is not None:
                counted = max(counted, first.last_message_at)
            waits.append(max(0.0, (cutoff - counted).total_seconds()))
    return waits


def overdue(session: Session, now: datetime) -> bool:
    """Whether some inquiry was already past retention ``allowance()`` ago and is still stored."""
    then = now - allowance()
    for policy in retention.POLICIES:
        condition = retention.expired_in(policy, retention.cutoffs_at(session, then, policy))
        if session.scalar(select(Inquiry.id).where(condition).limit(1)) is not None:
            return True
    return False


def last_error(session: Session) -> str | None:
    """The error of the newest ledger row that has one."""
    return session.scalar(
        select(CleanupRun.error)
        .where(CleanupRun.error.is_not(None))
        .order_by(CleanupRun.started_at.desc(), CleanupRun.id.desc())
        .limit(1)
    )


def overdue_now() -> Alarm:
    """The alarm as this process last read it, read again once ``FRESH_FOR`` has passed."""
    memory = current_app.extensions.setdefault(EXTENSION, {})
    now = clock.now()
    cached = memory.get("alarm")
    if cached is None or not now - FRESH_FOR <= cached[0] <= now:
        session = db.get_session()
        late = overdue(session, now)
        cached = memory["alarm"] = (now, Alarm(late, last_error(session) if late else None))
    return cached[1]


def forget() -> None:
    """Read the alarm again at the next ask (after a run in this process)."""
    current_app.extensions.get(EXTENSION, {}).pop("alarm", None)


def gauges() -> list[GaugeMetricFamily]:
    """The alarm's figures for ``/metrics``, read at the scrape: the last success's age, the expired inquiries
    still stored and the oldest one's wait past retention."""
    session, now = db.get_session(), clock.now()
    finished = session.scalar(
        select(CleanupRun.finished_at)
        .where(CleanupRun.status.in_((CleanupStatus.OK, CleanupStatus.PARTIAL)))
        .order_by(CleanupRun.started_at.desc(), CleanupRun.id.desc())
        .limit(1)
    )
    figures = expired(session, now)
    families = [
        GaugeMetricFamily(
            "sundown_cleanup_expired_inquiries",
            "Inquiries past retention (inbox and spam, not on hold) still stored.",
            value=figures.count,
        ),
        GaugeMetricFamily(
            "sundown_cleanup_expired_oldest_wait_seconds",
            "Seconds the oldest expired inquiry still stored has waited since it passed retention; 0 when none.",
            value=figures.oldest_wait,
        ),
    ]
    if finished is not None:  # before the first success there is no age: alert on absent() or the timestamp
        families.append(
            GaugeMetricFamily(
                "sundown_cleanup_last_success_age_seconds",
                "Seconds since the last cleanup run that ended without an error (ok or partial) finished.",
                value=max(0.0, (now - finished).total_seconds()),
            )
        )
    return families
