"""A cleanup run: claim, delete in batches, record in the ledger, release the claim.

``run`` is what every trigger ends in (after a response, ``flask cleanup``,
``POST /internal/cleanup``, the admin's "Run cleanup now"). The claim and the
opening ledger row commit together; the batches follow, with a cutoff fixed
once per run; the closing ledger row and the claim's release commit together.
A run that deleted rows then makes them gone from SQLite's search index and WAL
(``app.inquiries.gone``), and records when that ended (the ledger's ``forgotten_at``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from flask import current_app
from sqlalchemy import update

from app import audit
from app.cleanup import alarm, chain, claim, ledger, plans, state
from app.cleanup.batches import (
    Limits,
    Moment,
    Progress,
    Target,
    count,
    count_and_oldest,
    delete_all,
    patiently,
)
from app.core import clock, db, metrics
from app.inquiries import gone, retention, tally
from app.models import CleanupRun, CleanupStatus

log = logging.getLogger(__name__)

CLOSE_PATIENCE = 60.0  # seconds the closing writes of a run keep trying while live writers hold SQLite's lock


def run(trigger: str, force: bool = False, should_stop: Callable[[], bool] = lambda: False) -> CleanupRun | None:
    """Claim, then clean up now; None when another run holds the claim or none is due.

    ``force`` ignores the interval but still takes the claim, so it never
    overlaps a running cleanup. Errors while deleting end the run as ``error``.
    When ``should_stop`` turns true (the process is shutting down) the run
    ends after its current batch as ``partial`` and is due again at once.
    """
    moment = clock.now()
    row = _claim_and_open_ledger(trigger, moment, force)
    if row is None:
        _learn_next_due(moment)
        return None
    with db.transaction() as session:
        clocks = (
            retention.from_last_message(session),
            retention.counting_from(session, retention.Clock.CLOSED),
            retention.anonymising(session),
        )
    times = Moment(now=moment, cutoff=recorded_cutoffs(row, *clocks))
    progress = delete_all(state.current().targets, times, batch_limits(), _recorder(row), should_stop)
    patiently(lambda: _close_ledger(row, progress, times), CLOSE_PATIENCE)
    if any(progress.deleted.values()):
        patiently(_scrub_audit_log, CLOSE_PATIENCE)  # a deleted inquiry's hold reason does not stay in the audit log
        inquiries = progress.deleted.get("inquiries", 0) + progress.deleted.get("spam", 0)
        gone.forget_now(should_stop, inquiries)  # the deleted rows leave SQLite's search index and WAL too
        patiently(lambda: _record_forgotten(row), CLOSE_PATIENCE)
    ledger.log_run(row)
    alarm.forget()  # this process's banner and /healthz read the outcome at once
    metrics.count_cleanup_run(row.status, progress.deleted)
    return row


def recorded_cutoffs(
    row: CleanupRun,
    from_last_message: frozenset[int] = frozenset(),
    from_closing: frozenset[int] = frozenset(),
    anonymising: frozenset[int] = frozenset(),
) -> retention.Cutoffs:
    """The inbox cutoffs a run captured with its claim: the site's and each form's, from its ledger row, with
    the forms whose retention counts from the last message or from closing, and those that anonymise (read
    as the run starts)."""
    own = {
        int(form_id): retention.cutoff_for(row.started_at, days)
        for form_id, days in (row.form_retention_days or {}).items()
    }
    return retention.Cutoffs(row.cutoff, own, from_last_message, from_closing, anonymising)


def run_if_due(trigger: str, should_stop: Callable[[], bool] = lambda: False) -> CleanupRun | None:
    """Like ``run``, but without touching the database when this process knows none is due."""
    return run(trigger, should_stop=should_stop) if is_due() else None


def is_due() -> bool:
    """Whether this process's memory allows that the claim is due (the database decides)."""
    return state.current().is_due()


def dry_run() -> dict[str, tuple[int, datetime | None]]:
    """Per target: how many rows a run now would delete, and the oldest (by the target's age column).

    Uses the very predicates of the delete, at the same cutoff a run would use.
    """
    moment = clock.now()
    with db.transaction() as session:
        times = Moment(now=moment, cutoff=retention.cutoffs_at(session, moment))
        return {target.name: count_and_oldest(session, target, times) for target in state.current().targets}


def next_due_at(session) -> datetime | None:
    """When the claim next falls due; None before the first run (due at the next trigger)."""
    stored = claim.stored(session)
    if stored is None:
        return None
    due_ms = abs(stored) + _ms(current_app.config["CLEANUP_INTERVAL"])
    return datetime.fromtimestamp(due_ms / 1000, UTC)


def _claim_and_open_ledger(trigger: str, moment: datetime, force: bool) -> CleanupRun | None:
    """The claim and the ledger row commit together, or not at all."""
    config = current_app.config
    with db.transaction() as session:
        won = claim.take(
            session, clock.epoch_ms(moment), _ms(config["CLEANUP_INTERVAL"]), _ms(config["CLEANUP_LEASE"]), force
        )
        if not won:
            return None
        _close_abandoned(session, moment)
        days = retention.retention_days(session)
        own = retention.form_retentions(session)
        row = CleanupRun(
            trigger=trigger[:40],
            started_at=moment,
            cutoff=retention.cutoff_for(moment, days),
            retention_days=days,
            form_retention_days={str(form_id): each for form_id, each in own.items()} or None,
            deleted="{}",
            remaining=0,
            status=CleanupStatus.RUNNING,
        )
        session.add(row)
    return row


def _close_abandoned(session, moment: datetime) -> None:
    """Close the rows of runs whose process died: a won claim means no other run is alive."""
    stale = (
        session.execute(
            update(CleanupRun)
            .where(CleanupRun.status == CleanupStatus.RUNNING)
            .values(status=CleanupStatus.ABANDONED, finished_at=moment, error="its process ended mid-run")
            .returning(CleanupRun.id)
        )
        .scalars()
        .all()
    )
    for run_id in sorted(stale):
        log.warning("cleanup run %s was abandoned (its process ended mid-run); its lease expired", run_id)
        # Sealed here, under the claim just won, before the new run's row: the chain keeps the ledger's order.
        chain.seal(session, session.get_one(CleanupRun, run_id))


def _recorder(row: CleanupRun):
    """Writes a run's counts so far into its ledger row, and a batch's inquiries per form into the run's
    tallies (``app.inquiries.tally``), inside each batch's transaction."""

    def record(connection, counts: dict[str, int], target: str, forms: dict[int, int]) -> None:
        connection.execute(update(CleanupRun).where(CleanupRun.id == row.id).values(deleted=json.dumps(counts)))
        tally.add_batch(connection, row.id, row.started_at, target, forms)

    return record


def _close_ledger(row: CleanupRun, progress: Progress, times: Moment) -> None:
    """Record the outcome and release the claim, in one transaction."""
    remaining = 0 if progress.error else _count_remaining(progress.unfinished, times)
    # The transaction writes first: on SQLite, a read before the first write
    # pins a snapshot that any concurrent commit makes unusable for writing.
    with db.transaction() as session:
        row.finished_at = finished = clock.now()
        row.deleted = json.dumps(progress.deleted)
        row.remaining = remaining
        row.error = progress.error
        row.status = _status(progress, remaining)
        session.add(row)
        # The hash chains onto the previous row's. No other run can chain onto that same row meanwhile: the
        # claim, still held until the release below, serialises runs, and a later run seals abandoned rows
        # only under its own won claim (``_close_abandoned``).
        chain.seal(session, row)
        counted_from = _counted_from(row, finished, progress.interrupted)
        claim.release(session, clock.epoch_ms(row.started_at), counted_from)
    state.current().next_due_ms = counted_from + _ms(current_app.config["CLEANUP_INTERVAL"])


def _scrub_audit_log() -> None:
    with db.transaction(write=True) as session:
        audit.scrub_deleted(session)


def _record_forgotten(row: CleanupRun) -> None:
    """When the forgetting after the run ended (the index purge and the WAL checkpoint): the ledger's
    ``forgotten_at``. Until then the run still writes, on SQLite for about as long as its batches did."""
    with db.transaction(write=True) as session:
        row.forgotten_at = clock.now()
        session.execute(update(CleanupRun).where(CleanupRun.id == row.id).values(forgotten_at=row.forgotten_at))


def _status(progress: Progress, remaining: int) -> CleanupStatus:
    if progress.error:
        return CleanupStatus.ERROR
    return CleanupStatus.PARTIAL if remaining else CleanupStatus.OK


def _count_remaining(unfinished: list[Target], times: Moment) -> int:
    with db.transaction() as session:
        return sum(count(session, target, times) for target in unfinished)


def _counted_from(row: CleanupRun, finished: datetime, interrupted: bool) -> int:
    """Where the interval counts from: the claim; with a backlog, so it is due again soon (at once if interrupted)."""
    config = current_app.config
    if row.status != CleanupStatus.PARTIAL:
        return clock.epoch_ms(row.started_at)
    retry = 0 if interrupted else min(config["CLEANUP_BACKLOG_RETRY"], config["CLEANUP_INTERVAL"])
    return clock.epoch_ms(finished) - _ms(config["CLEANUP_INTERVAL"]) + _ms(retry)


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
        next_due = now_ms + _ms(min(config["CLEANUP_BACKLOG_RETRY"], config["CLEANUP_INTERVAL"]))
    else:
        next_due = stored + _ms(config["CLEANUP_INTERVAL"])
    state.current().next_due_ms = next_due


def batch_limits() -> Limits:
    """How much a run may do: batch size and pause (per-database defaults unless set), time budget."""
    config = current_app.config
    size, ratio, engine = config["CLEANUP_BATCH_SIZE"], config["CLEANUP_YIELD"], db.get_engine()
    return Limits(
        batch_size=plans.default_batch_size(engine) if size is None else int(size),
        time_budget=float(config["CLEANUP_TIME_BUDGET"]),
        yield_ratio=plans.default_yield(engine) if ratio is None else float(ratio),
        # A batch size that is set is kept; the default adapts to the rows' weight.
        batch_seconds=plans.default_batch_seconds(engine) if size is None else None,
    )


def _ms(seconds: float) -> int:
    return int(seconds * 1000)
