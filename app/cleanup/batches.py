"""The batch delete: every target's expired rows, oldest first, in short transactions.

A target names a table, the predicate of its expired rows at a run's
``Moment``, and the indexed column its batches follow, oldest first. The
dry-run counts with the very same predicate the delete uses.

Each batch is its own short transaction, so live writes keep flowing. On
SQLite that is not enough: at a high rate live writers hold its one write
lock most of the time themselves, and a loop that starts its next batch
right after a commit keeps them queued. So each batch takes the lock as a
background writer and, after it, the loop pauses as long as its wait for
the lock taught (``app.core.pacing``), plus a fraction (``CLEANUP_YIELD``)
of the batch's own duration: live writers that queued meanwhile get in.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, delete, func, select
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import InstrumentedAttribute, Session

from app.cleanup import plans
from app.core import db
from app.core.pacing import Pacer
from app.inquiries import merging, retention, tally

# A batch refused SQLite's write lock for a whole busy timeout waits this long before it tries again, twice as
# long after each refusal up to the most, for as long as the run's time budget lasts.
LOCKED_PAUSE, LOCKED_PAUSE_MOST = 0.05, 1.0

log = logging.getLogger(__name__)

MIN_BATCH, MAX_BATCH = 100, 50_000


@dataclass(frozen=True)
class Moment:
    """A run's fixed point in time: ``now`` for expiring rows, ``cutoff`` for inquiries (one per form)."""

    now: datetime
    cutoff: retention.Cutoffs


@dataclass(frozen=True)
class Target:
    """A table the cleanup empties of expired rows: rows matching ``where(moment)``, oldest ``age`` first.

    ``most`` caps a batch's rows where rows are heavy (a file's pieces), so a
    batch stays bounded by bytes too; ``dated`` is False when ``age`` is an
    id, not a time, and the dry-run then names no oldest row. ``form``, when
    set, is the column naming each row's form: each batch then counts its rows
    per form, for the retention report (``app.inquiries.tally``), from the
    ``RETURNING`` of its delete. ``act``, when set, does to a batch's rows what
    the target does instead of deleting them (``app.cleanup.anonymise``), and
    returns the form of each row it did.
    """

    name: str
    model: type
    where: Callable[[Moment], ColumnElement[bool]]
    age: InstrumentedAttribute
    most: int | None = None
    dated: bool = True
    form: InstrumentedAttribute | None = None
    act: Callable[[Connection, ColumnElement[bool], Moment], list[int | None]] | None = None

    def batch_of(self, size: int) -> int:
        """``size`` rows, or ``most`` if fewer."""
        return size if self.most is None else min(size, self.most)


@dataclass(frozen=True)
class Done:
    """A batch's outcome: rows done, rows per form (targets with a ``form``), whether more may remain, and
    where the next batch starts."""

    rows: int
    forms: dict[int, int]
    more: bool
    following: Any = None


@dataclass(frozen=True)
class Batch:
    """A batch's statements, made before its transaction takes the lock: ``condition`` matches the expired
    rows left, ``chosen`` the oldest ``size`` of them, ``key`` orders them."""

    condition: ColumnElement[bool]
    chosen: ColumnElement[bool]
    key: Any
    size: int


def choose(connection: Connection, target: Target, moment: Moment, size: int, start: Any = None) -> Batch:
    """The ``size`` oldest expired rows of ``target``, none older than ``start``: where the previous batch
    ended (``delete_batch``)."""
    key = plans.batch_key(connection, target.age)
    condition = target.where(moment)
    if start is not None:
        condition = and_(condition, key >= start)
    return Batch(condition, plans.oldest_rows(connection, target.model, condition, target.age, size), key, size)


def delete_batch(connection: Connection, target: Target, moment: Moment, batch: Batch) -> Done:
    """Delete the rows ``batch`` chose (or do the target's ``act`` to them).

    Returns how many were deleted (per form too, for a target with a
    ``form``), whether more may remain, and where the next batch starts: at
    the oldest expired row left, so no batch scans again what earlier batches
    skipped (rows on legal hold; on PostgreSQL also deleted rows that stay in
    the index until vacuumed, which would make a long run quadratic). Call it inside a transaction: it writes before it
    reads, so that on SQLite no concurrent commit can invalidate its snapshot.
    """
    deleted, forms = _remove(connection, target, batch.chosen, moment)
    if deleted < batch.size:
        return Done(deleted, forms, False)
    following = connection.scalar(select(func.min(batch.key)).where(batch.condition))
    return Done(deleted, forms, following is not None, following)


def _remove(
    connection: Connection, target: Target, chosen: ColumnElement[bool], moment: Moment
) -> tuple[int, dict[int, int]]:
    """Delete (or ``act`` on) the rows ``chosen``: how many, and how many per form when the target counts so."""
    if target.act is not None:
        done = target.act(connection, chosen, moment)
    elif target.form is not None:
        done = list(connection.scalars(delete(target.model).where(chosen).returning(target.form)))
    else:
        return connection.execute(delete(target.model).where(chosen)).rowcount, {}
    return len(done), dict(tally.per_form(done)) if target.form is not None else {}


def count_and_oldest(session: Session, target: Target, moment: Moment) -> tuple[int, datetime | None]:
    """How many rows of ``target`` a run at ``moment`` would delete, and the oldest ``age``."""
    count, oldest = session.execute(select(func.count(), func.min(target.age)).where(target.where(moment))).one()
    return count, oldest if target.dated else None


def count(session: Session, target: Target, moment: Moment) -> int:
    """How many rows of ``target`` are expired at ``moment``."""
    return session.execute(select(func.count()).select_from(target.model).where(target.where(moment))).scalar_one()


@dataclass(frozen=True)
class Limits:
    """How much one run may do: rows per batch, seconds in all, pause per batch.

    With ``batch_seconds`` set, ``batch_size`` is only the first batch's size:
    each next batch is sized so that it holds its transaction about that long.
    """

    batch_size: int
    time_budget: float
    yield_ratio: float
    batch_seconds: float | None = None

    def next_size(self, size: int, rows: int, seconds: float) -> int:
        """The size of the batch after one of ``size`` that deleted ``rows`` in ``seconds``."""
        if self.batch_seconds is None or rows < size or seconds <= 0:
            return size
        scaled = int(size * self.batch_seconds / seconds)
        return max(MIN_BATCH, min(MAX_BATCH, scaled, size * 2))


@dataclass
class Progress:
    """What a run has done so far: rows deleted per target, targets left, error, whether told to stop."""

    deleted: dict[str, int]
    unfinished: list[Target]
    error: str | None = None
    interrupted: bool = False


# Called inside each batch's transaction with the counts as they will be once it commits, the batch's
# target and its rows per form (empty for a target without a ``form``).
Recorder = Callable[[Connection, dict[str, int], str, dict[int, int]], None]


def delete_all(
    targets: list[Target],
    moment: Moment,
    limits: Limits,
    record: Recorder,
    should_stop: Callable[[], bool],
) -> Progress:
    """Delete every target's expired rows in batches until done, out of time, told to stop, or failing.

    At least one batch that deletes always runs; the budget and ``should_stop``
    are checked after each such batch (``time.monotonic``: a duration, not a date, so not the
    app clock). One connection serves the whole run; each batch is its own
    transaction on it, and ``record`` writes the running counts in that same
    transaction, so a crash loses no committed batch's count.
    """
    progress = Progress({target.name: 0 for target in targets}, list(targets))
    deadline = time.monotonic() + limits.time_budget

    def stop_asked() -> bool:
        if should_stop():
            progress.interrupted = True
            return True
        return False

    def must_stop() -> bool:
        return stop_asked() or time.monotonic() >= deadline

    def purged_after() -> bool:  # a run that deleted rows leaves the index's merging to the purge after it
        return any(progress.deleted.values())

    pacer = Pacer(ratio=limits.yield_ratio)
    pace = (limits, pacer, merging.IndexMerging())
    engine = db.get_engine()
    with (
        engine.connect().execution_options(**{db.WRITE_OPTION: True}) as connection,
        plans.index_merged_by_batches(connection, purged_after),
    ):
        for target in targets:
            try:
                locked_out = not _delete_target(
                    connection, target, moment, pace, progress, record, (deadline, must_stop, stop_asked)
                )
            except Exception as exc:  # noqa: BLE001 - recorded in the ledger, logged with the run
                progress.error = f"{type(exc).__name__} while deleting from {target.name}"
                log.exception("cleanup batch failed on %s", target.name)
                return progress
            if locked_out:
                return progress
            # A stop is heard after any target; the budget is spent only by one
            # that deleted something (an empty target costs one short query).
            if progress.unfinished and (must_stop() if progress.deleted[target.name] else stop_asked()):
                return progress
    return progress


def _delete_target(
    connection: Connection,
    target: Target,
    moment: Moment,
    pace: tuple[Limits, Pacer, merging.IndexMerging],
    progress: Progress,
    record: Recorder,
    stops: tuple[float, Callable[[], bool], Callable[[], bool]],
) -> bool:
    """Batches on one target until it has no expired rows left or the run must stop; False when the run's
    time ran out (or it was told to stop) while live writers kept SQLite's write lock."""
    deadline, must_stop, stop_asked = stops
    limits, pacer, merging = pace
    start, size = None, target.batch_of(limits.batch_size)
    while True:
        done = _one_batch(connection, target, moment, size, start, progress, record, (deadline, stop_asked, pacer))
        if done is None:
            return False
        deleted, more, start = done.rows, done.more, done.following
        size = target.batch_of(limits.next_size(size, deleted, pacer.held()))
        progress.deleted[target.name] += deleted
        merging.after_batch(connection)
        pacer.pause()
        if not more:
            progress.unfinished.remove(target)
            return True
        if must_stop():
            return True


def patiently(action: Callable[[], Any], seconds: float) -> Any:
    """``action()`` (a transaction of its own), tried again after ``LOCKED_PAUSE`` (doubling) while SQLite
    refuses its write lock, for up to ``seconds``: a run's ledger row is written even under a burst."""
    deadline, pause = time.monotonic() + seconds, LOCKED_PAUSE
    while True:
        try:
            return action()
        except OperationalError as error:
            if not db.lock_refused(error) or time.monotonic() + pause >= deadline:
                raise
        time.sleep(pause)
        pause = min(2 * pause, LOCKED_PAUSE_MOST)


def _one_batch(
    connection: Connection,
    target: Target,
    moment: Moment,
    size: int,
    start: Any,
    progress: Progress,
    record: Recorder,
    until: tuple[float, Callable[[], bool], Pacer],
) -> Done | None:
    """One batch and its ledger counts in one transaction; on SQLite, tried again while the lock is busy.

    Live writers take SQLite's write lock by polling every millisecond, so
    under a burst of submissions (a flood, a loaded machine) a batch can be
    refused the lock (``database is locked``) for its whole busy timeout. A
    busy lock is not an error: the batch is rolled back, and tried again
    after a pause that doubles each time (``LOCKED_PAUSE``), for as long as
    the run's time budget lasts. None when it ran out meanwhile (or the run
    was told to stop): the run ends with the rows left, as a run out of
    time does. Live traffic goes first; the cleanup waits. Any other error
    is raised and ends the run in error.
    """
    deadline, stop_asked, pacer = until
    pause, batch = LOCKED_PAUSE, choose(connection, target, moment, size, start)
    while True:
        try:
            with pacer.transaction(connection):
                db.unlimited(connection)
                done = delete_batch(connection, target, moment, batch)
                counts = {**progress.deleted, target.name: progress.deleted[target.name] + done.rows}
                record(connection, counts, target.name, done.forms)
            return done
        except OperationalError as error:
            if not db.lock_refused(error):
                raise
        if time.monotonic() + pause >= deadline or stop_asked():
            log.warning("cleanup: live writers kept the database locked until the run's end, on %s", target.name)
            return None
        time.sleep(pause)
        pause = min(2 * pause, LOCKED_PAUSE_MOST)
