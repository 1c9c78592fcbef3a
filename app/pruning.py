"""The pruner: after ordinary requests, one atomic claim, bounded batch deletes, a ledger.

Read it in three parts:

1. **When**: views call ``trigger(name)``; after the response has been handed
   to the server (``Response.call_on_close``), the pruner runs if this
   process's memory says the claim may be due. The memory is a shortcut
   only: ``claim.take`` in the database decides.
2. **What**: ``TARGETS``, deleted in batches by ``prune_batches.delete_all``
   with a cutoff fixed once per run.
3. **Record**: a ``prune_runs`` ledger row and one structured log line per run.

Retention is exact for readers: ``visible(cutoff)`` hides inquiries past
retention at once, even before a run deletes them.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import partial
from typing import Any

from flask import Flask, current_app, g
from sqlalchemy import ColumnElement, and_, func, or_, select
from sqlalchemy.orm import Session

from app import claim, clock, db, dialect
from app.config import ConfigurationError
from app.models import AdminSession, PruneRun, RateLimit, Setting, Submission, Verification
from app.prune_batches import Limits, Moment, Progress, Target, count, count_and_oldest, delete_all

log = logging.getLogger(__name__)

DEFAULT_RETENTION_DAYS = 180
MAX_RETENTION_DAYS = 3650
LEDGER_KEEP = timedelta(days=90)


# --- Retention: the shared predicates -------------------------------------


def retention_days(session: Session) -> int:
    """The stored retention in days; the default (180) when missing or invalid (a warning for invalid)."""
    default = current_app.config.get("DEFAULT_RETENTION_DAYS", DEFAULT_RETENTION_DAYS)
    raw = session.scalar(select(Setting.value).where(Setting.key == "retention_days"))
    if raw is None:
        return default
    try:
        days = int(raw)
    except ValueError:
        days = 0
    if not 1 <= days <= MAX_RETENTION_DAYS:
        log.warning("invalid stored retention_days; using %d", default)
        return default
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


# --- What it deletes --------------------------------------------------------

TARGETS: list[Target] = [
    Target("submissions", Submission, lambda m: expired(m.cutoff), Submission.created_at),
    Target("verification", Verification, lambda m: Verification.expires_at < m.now, Verification.expires_at),
    Target("session", AdminSession, lambda m: AdminSession.expires_at < m.now, AdminSession.expires_at),
    Target("rate_limits", RateLimit, lambda m: RateLimit.expires_at < m.now, RateLimit.expires_at),
    Target("prune_runs", PruneRun, lambda m: PruneRun.started_at < m.now - LEDGER_KEEP, PruneRun.started_at),
]


# --- When it runs: the after-response hook ----------------------------------


@dataclass
class _Schedule:
    """This process's memory of when the claim can next be due (epoch ms); 0 = ask."""

    next_due_ms: int = 0


def init_app(app: Flask) -> None:
    """Register the targets, the per-process schedule and the after-response hook."""
    if app.config["PRUNE_LEASE"] <= app.config["PRUNE_TIME_BUDGET"]:
        raise ConfigurationError("SUNDOWN_PRUNE_LEASE must be longer than SUNDOWN_PRUNE_TIME_BUDGET.")
    app.extensions["sundown.prune_targets"] = list(TARGETS)
    app.extensions["sundown.prune_schedule"] = _Schedule()
    app.after_request(_prune_after_response)


def trigger(name: str) -> None:
    """Ask for a prune after the current response, named ``name`` in the ledger."""
    g.prune_trigger = name


def _prune_after_response(response):
    name = g.pop("prune_trigger", None)
    if name is not None and _is_due():
        response.call_on_close(partial(_run_quietly, current_app._get_current_object(), name))
    return response


def _run_quietly(app: Flask, name: str) -> None:
    """Run in a fresh app context after the response; log failures, never raise."""
    with app.app_context():
        try:
            run_if_due(name)
        except Exception:  # noqa: BLE001 - the response is already sent; log and move on
            log.exception("prune after %s failed", name)


def run_if_due(trigger: str) -> PruneRun | None:
    """Like ``run``, but without touching the database when this process knows it is not due."""
    return run(trigger) if _is_due() else None


def _is_due() -> bool:
    return clock.epoch_ms(clock.now()) >= _schedule().next_due_ms


def _schedule() -> _Schedule:
    return current_app.extensions["sundown.prune_schedule"]


# --- A run ------------------------------------------------------------------


def run(trigger: str, force: bool = False) -> PruneRun | None:
    """Claim, then prune now; None when another run holds the claim or it is not due.

    ``force`` ignores the interval but still takes the claim, so it never
    overlaps a running prune. Errors while deleting end the run as ``error``.
    """
    moment = clock.now()
    ledger = _claim_and_open_ledger(trigger, moment, force)
    if ledger is None:
        _learn_next_due(moment)
        return None
    times = Moment(now=moment, cutoff=ledger.cutoff)
    progress = delete_all(_targets(), times, _limits())
    _close_ledger(ledger, progress, times)
    _log_run(ledger)
    return ledger


def _claim_and_open_ledger(trigger: str, moment: datetime, force: bool) -> PruneRun | None:
    """The claim and the ledger row commit together, or not at all."""
    config = current_app.config
    with db.transaction() as session:
        won = claim.take(
            session, clock.epoch_ms(moment), _ms(config["PRUNE_INTERVAL"]), _ms(config["PRUNE_LEASE"]), force
        )
        if not won:
            return None
        days = retention_days(session)
        ledger = PruneRun(
            trigger=trigger[:40], started_at=moment, cutoff=cutoff_for(moment, days),
            retention_days=days, deleted="{}", remaining=0, status="running",
        )
        session.add(ledger)
    return ledger


def _close_ledger(ledger: PruneRun, progress: Progress, times: Moment) -> None:
    """Record the outcome and release the claim, in one transaction."""
    remaining = 0 if progress.error else _count_remaining(progress.unfinished, times)
    # The transaction writes first: on SQLite, a read before the first write
    # pins a snapshot that any concurrent commit makes unusable for writing.
    with db.transaction() as session:
        ledger.finished_at = clock.now()
        ledger.deleted = json.dumps(progress.deleted)
        ledger.remaining = remaining
        ledger.error = progress.error
        ledger.status = "error" if progress.error else "partial" if remaining else "ok"
        session.add(ledger)
        counted_from = _counted_from(ledger)
        claim.release(session, clock.epoch_ms(ledger.started_at), counted_from)
    _schedule().next_due_ms = counted_from + _ms(current_app.config["PRUNE_INTERVAL"])


def _count_remaining(unfinished: list[Target], times: Moment) -> int:
    with db.transaction() as session:
        return sum(count(session, target, times) for target in unfinished)


def _counted_from(ledger: PruneRun) -> int:
    """Where the interval counts from: the claim, or, with a backlog, so it is due again soon."""
    config = current_app.config
    if ledger.status != "partial":
        return clock.epoch_ms(ledger.started_at)
    retry = min(config["PRUNE_BACKLOG_RETRY"], config["PRUNE_INTERVAL"])
    return clock.epoch_ms(ledger.finished_at) - _ms(config["PRUNE_INTERVAL"]) + _ms(retry)


def _learn_next_due(moment: datetime) -> None:
    """After a lost claim, remember when the stored claim falls due."""
    config = current_app.config
    with db.transaction() as session:
        stored = claim.stored(session)
    now_ms = clock.epoch_ms(moment)
    if stored is None:
        next_due = now_ms
    elif stored < 0:
        # A run is in progress and may end with a backlog: look again soon.
        next_due = now_ms + _ms(min(config["PRUNE_BACKLOG_RETRY"], config["PRUNE_INTERVAL"]))
    else:
        next_due = stored + _ms(config["PRUNE_INTERVAL"])
    _schedule().next_due_ms = next_due


def _targets() -> list[Target]:
    return current_app.extensions["sundown.prune_targets"]


def _limits() -> Limits:
    config = current_app.config
    size, ratio, engine = config["PRUNE_BATCH_SIZE"], config["PRUNE_YIELD"], db.get_engine()
    return Limits(
        batch_size=dialect.prune_batch_size(engine) if size is None else int(size),
        time_budget=float(config["PRUNE_TIME_BUDGET"]),
        yield_ratio=dialect.prune_yield(engine) if ratio is None else float(ratio),
    )


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


def _log_run(ledger: PruneRun) -> None:
    level = {"ok": logging.INFO, "partial": logging.WARNING}.get(ledger.status, logging.ERROR)
    log.log(level, "prune_run %s", json.dumps(as_dict(ledger), sort_keys=True))


# --- Reading: dry-run, status, ledger ----------------------------------------


def dry_run() -> dict[str, tuple[int, datetime | None]]:
    """Per target: how many rows a run now would delete, and the oldest (by the target's age column).

    Uses the very predicates of the delete, at the same cutoff a run would use.
    """
    moment = clock.now()
    with db.transaction() as session:
        times = Moment(now=moment, cutoff=cutoff_for(moment, retention_days(session)))
        return {target.name: count_and_oldest(session, target, times) for target in _targets()}


def next_due_at(session: Session) -> datetime | None:
    """When the claim next falls due; None before the first run (due at the next trigger)."""
    stored = claim.stored(session)
    if stored is None:
        return None
    due_ms = abs(stored) + _ms(current_app.config["PRUNE_INTERVAL"])
    return datetime.fromtimestamp(due_ms / 1000, timezone.utc)


def recent_runs(session: Session, limit: int = 20) -> list[PruneRun]:
    """The newest ledger rows first."""
    query = select(PruneRun).order_by(PruneRun.started_at.desc(), PruneRun.id.desc()).limit(limit)
    return list(session.scalars(query))


def as_dict(ledger: PruneRun) -> dict[str, Any]:
    """A ledger row as JSON-ready data (no personal data in it)."""
    def iso(moment: datetime | None) -> str | None:
        return moment.isoformat() if moment else None

    return {
        "id": ledger.id, "trigger": ledger.trigger, "status": ledger.status,
        "started_at": iso(ledger.started_at), "finished_at": iso(ledger.finished_at),
        "cutoff": iso(ledger.cutoff), "retention_days": ledger.retention_days,
        "deleted": json.loads(ledger.deleted or "{}"), "remaining": ledger.remaining,
        "error": ledger.error,
    }
