"""The stored forecast: computed after a response, read by the pages in one lookup.

Computing the forecast (``app.inquiries.forecast``) reads every inquiry in
its horizon, seconds at a million rows: no page waits for that. The
``settings`` row ``forecast`` holds the last one, with the moment it was
computed and a fingerprint of what it followed (each retention, each
form's clock, the day). A page shows it while the fingerprint matches
(a changed retention or a new day makes it wrong, not just old) and asks
for a new one, after its response, when it is missing, wrong or older than
``FRESH``. The refresh is claimed like the cleanup (``app.cleanup.claim``,
row ``forecast_claim``), so one process computes it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from flask import Flask, current_app, g
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.cleanup import claim
from app.core import background, clock, db, dialect
from app.inquiries import forecast, retention
from app.models import Form, Setting

KEY = "forecast"
CLAIM_KEY = "forecast_claim"
JOB = "forecast"
FRESH = timedelta(minutes=15)
CLAIM_INTERVAL_MS = 10_000  # two refreshes at most this close together, whatever asks
LEASE_MS = 600_000  # a refresh that died releases its claim after this
LISTENERS = "forecast_listeners"  # app.extensions: who hears of each stored forecast (``on_stored``)
START_WAIT = 1.0  # seconds a refresh waits, at most, for a quiet moment


@dataclass(frozen=True)
class Snapshot:
    """A stored forecast and when it was computed."""

    forecast: forecast.Forecast
    computed_at: datetime


def init_app(app: Flask) -> None:
    """Refresh the forecast after a response that asked for it."""
    background.after_response(app, JOB, _wanted, _refresh_when_quiet)


def fingerprint(session: Session, now: datetime) -> str:
    """What the forecast follows at ``now``: the day, each policy's retention, each form's own, its clock and
    its expiry."""
    forms = session.execute(
        select(
            Form.id, Form.retention_days, Form.spam_retention_days, Form.retention_clock, Form.expiry_action
        ).order_by(Form.id)
    )
    parts = [now.astimezone(UTC).date().isoformat()]
    parts += [str(retention.retention_days(session, policy)) for policy in retention.POLICIES]
    parts += [":".join(str(value) for value in row) for row in forms]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def current(session: Session) -> Snapshot | None:
    """The stored forecast if it still follows today's retentions, else None; asks for a refresh when it is
    missing, wrong or older than ``FRESH``."""
    now = clock.now()
    raw = session.scalar(select(Setting.value).where(Setting.key == KEY))
    stored = _parsed(raw)
    if stored is None or stored["fingerprint"] != fingerprint(session, now):
        g.forecast_wanted = True
        return None
    computed_at = datetime.fromisoformat(stored["computed_at"])
    if now - computed_at > FRESH:
        g.forecast_wanted = True
    return Snapshot(forecast.from_json(stored["forecast"]), computed_at)


def stored(session: Session) -> Snapshot | None:
    """The stored forecast as it is, whatever it follows (a notification sent later reads what was stored)."""
    data = _parsed(session.scalar(select(Setting.value).where(Setting.key == KEY)))
    if data is None:
        return None
    return Snapshot(forecast.from_json(data["forecast"]), datetime.fromisoformat(data["computed_at"]))


def _parsed(raw: str | None) -> dict | None:
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        return data if isinstance(data, dict) and {"fingerprint", "computed_at", "forecast"} <= data.keys() else None
    except ValueError:
        return None


def refresh() -> Snapshot | None:
    """Compute and store the forecast if this process wins the claim; the new snapshot, or None."""
    now_ms = clock.epoch_ms(clock.now())
    with db.transaction(write=True) as session:
        if not claim.take(session, now_ms, CLAIM_INTERVAL_MS, LEASE_MS, key=CLAIM_KEY):
            return None
    try:
        return store()
    finally:
        with db.transaction(write=True) as session:
            claim.release(session, now_ms, now_ms, key=CLAIM_KEY)


def store() -> Snapshot:
    """Compute the forecast now and store it (its reads in one transaction, its write in a short one)."""
    now = clock.now()
    with db.transaction() as session:
        computed = forecast.compute(session, now)
        mark = fingerprint(session, now)
    data = {"fingerprint": mark, "computed_at": now.isoformat(), "forecast": forecast.as_json(computed)}
    with db.transaction(write=True) as session:
        statement = dialect.upsert(session, Setting.__table__).values(key=KEY, value=json.dumps(data))
        session.execute(
            statement.on_conflict_do_update(index_elements=["key"], set_={"value": statement.excluded.value})
        )
    snapshot = Snapshot(computed, now)
    for listener in current_app.extensions.get(LISTENERS, ()):
        listener(snapshot)
    return snapshot


def on_stored(app: Flask, listener: Callable[[Snapshot], object]) -> None:
    """Call ``listener`` with each forecast this process stores (in the refresh that won the claim)."""
    app.extensions.setdefault(LISTENERS, []).append(listener)


def _wanted() -> str | None:
    return "asked" if g.pop("forecast_wanted", False) else None


def _refresh_when_quiet(_reason: str, should_stop: Callable[[], bool]) -> None:
    background.activity_of(current_app).wait_for_quiet(time.monotonic() + START_WAIT, should_stop)
    if not should_stop():
        refresh()
