"""How each database deletes a batch best: the cleanup's dialect differences.

SQLite has one write lock. Live writers take it up front, polling every
millisecond (``app.core.db``); the cleanup's batches take it the same way
and pause after each one as long as their waits for it teach
(``app.core.pacing``), so the visitors queued meanwhile get in; batches are
sized to hold the lock about 30 ms, and after each one the cleanup merges
the search index a step (more while a level is crowded) and copies the
WAL back into the database file itself (``IndexMerging.after_batch``), so
no visitor's commit does either.
Under steady inserts this keeps a good part of one plain DELETE's rows/s
with inserts' p99 close to idle, where one DELETE stalls inserts for
seconds; the earlier design (1000 rows, a pause as long as the batch,
stock busy handler for everyone) was much slower
(figures: docs/benchmarks.md, "Figures behind the code").

PostgreSQL locks rows, so inserts never wait for a delete batch: there,
large batches without a pause cost live traffic nothing and save a commit
and an index descent per thousand rows (see docs/benchmarks.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    Integer,
    String,
    any_,
    func,
    literal_column,
    select,
    type_coerce,
)
from sqlalchemy.exc import OperationalError

from app.core import db
from app.core.pacing import Pacer
from app.inquiries import search

log = logging.getLogger(__name__)

# Pages merged per batch: a short merge on realistic rows, where twice as many could hold the lock
# several times as long (figures: docs/benchmarks.md, "Figures behind the code").
MERGE_STEP_PAGES = 64  # the first step's; the next ones are sized by time (``search.next_pages``)
# A level this crowded after a batch's merge step is merged further before the next batch, up to the most
# steps: FTS5 merges a level whole inside the write that takes it to ``search.QUIET_CRISISMERGE``.
MERGE_CROWDED, MERGE_STEPS_MOST = 32, 16

_BATCH_SIZE = {"sqlite": 100, "postgresql": 50_000}  # SQLite: the first batch; the next ones are sized by time
_YIELD = {"sqlite": 0.0, "postgresql": 0.0}
_BATCH_SECONDS = {"sqlite": 0.03}


def default_batch_size(engine: Engine) -> int:
    """The default number of rows in one cleanup batch on this database."""
    return _BATCH_SIZE.get(engine.dialect.name, 1000)


def default_yield(engine: Engine) -> float:
    """The default pause after a cleanup batch, as a fraction of the batch's duration."""
    return _YIELD.get(engine.dialect.name, 1.0)


def default_batch_seconds(engine: Engine) -> float | None:
    """How long a batch should hold its transaction; None to keep a fixed row count.

    SQLite: about 30 ms, whatever the rows weigh (a 1000-row batch of long
    messages is a several-megabyte write transaction, of short ones a
    fraction of that). PostgreSQL: fixed batches, since no insert waits.
    """
    return _BATCH_SECONDS.get(engine.dialect.name)


@dataclass
class IndexMerging:
    """SQLite: the run's own merging of the search index, a few steps after each batch (see
    ``index_merged_by_batches``), each step a transaction of its own sized by time and paced as the purge's
    are (``search.next_pages``; a pause at least as long as the step)."""

    pacer: Pacer = field(default_factory=lambda: Pacer(ratio=1.0, least=search.FORGET_PAUSE))
    pages: int = MERGE_STEP_PAGES
    table: str = search.FTS_TABLE  # the index being rebuilt beside it too (``app.inquiries.reindex``)

    def after_batch(self, connection: Connection) -> None:
        """SQLite: a step of the search index's merging, more while a level stays crowded, each followed by a
        copy of the WAL into the database file, on this connection.

        One step after each batch falls behind at 100 submissions a second:
        each visitor's insert adds a segment to the lowest level, pacing spaces
        the batches out, and a level reaching ``search.QUIET_CRISISMERGE``
        segments is merged whole inside whichever write adds the last one, a
        visitor's most often (49 of them in a 300,000-row run, one holding the
        lock a second). So while a level holds ``MERGE_CROWDED`` segments or
        more the merge goes on, up to ``MERGE_STEPS_MOST`` steps before the
        next batch, each after a pause at least as long as the step before it
        (steps back to back kept visitors waiting up to 430 ms).

        Deleting long messages writes megabytes of WAL per batch (``SECURE_DELETE``
        zeroes every freed byte). Left to the automatic checkpoint, that copy is
        done by whichever connection commits past the threshold: often a
        visitor's insert, which then waits a second or more. Done here, it costs
        the cleanup, and it holds no write lock: live writers get in meanwhile.
        """
        if connection.dialect.name != "sqlite":
            return
        # On the driver's connection: the checkpoint must run outside any transaction of SQLAlchemy's.
        driver_connection = db.sqlite_driver(connection)
        db.checkpoint(driver_connection)  # the batch's pages first
        for step in range(MERGE_STEPS_MOST):
            if step:
                self.pacer.pause()
            merged = self._step(connection, driver_connection)
            db.checkpoint(driver_connection)
            if not merged or search.crowded_level(driver_connection, self.table) < MERGE_CROWDED:
                return

    def _step(self, connection: Connection, driver_connection) -> bool:
        """One merge step, its pages sized by the last one's hold; False if live writers kept the lock for a
        whole busy timeout (the next batch's step catches up)."""
        try:
            with self.pacer.transaction(connection):
                search.merge_step(driver_connection, self.pages, self.table)
        except OperationalError as error:
            if not lock_refused(error):
                raise
            return False
        self.pages = search.next_pages(self.pages, self.pacer.held())
        return True


@contextmanager
def index_merged_by_batches(connection: Connection, purged_after: Callable[[], bool] = lambda: False) -> Iterator[None]:
    """SQLite: while a run deletes, and until the purge after it ends, only the run merges the search index.

    FTS5 records each batch's deletions as a new segment and merges segments
    as writes go by: every 64 pages written, the write that crosses the mark
    merges 64 pages per level (``automerge``), and the write that adds a
    level's 16th segment merges that whole level, then the next one up if
    it now holds 16 (``crisismerge``). Either lands in whichever write comes
    along, most often a visitor's insert, and grows with the rows deleted so
    far: a crisis merge inside one submission made 42,510 row changes and held
    the write lock 1.5 s in a 300k-row run. So for the run ``automerge`` is
    off, ``crisismerge`` is raised to ``search.QUIET_CRISISMERGE`` (never
    reached while the batches merge), and each batch is followed by a merge
    step sized to hold the lock about as long as a batch, in a paced
    transaction of its own, more while a level is crowded (``IndexMerging``):
    no writer, visitor or batch, does an unbounded merge.
    A run that deleted rows (``purged_after``) leaves them so: the purge of
    the index after it (``search.forget_deleted``) restores FTS5's defaults
    when it ends; otherwise they come back here. A run that dies in between
    leaves them until the next run's end; the raised crisis merge still
    bounds the segments meanwhile (docs/cleanup.md; figures:
    docs/benchmarks.md).
    """
    if connection.dialect.name != "sqlite":
        yield
        return
    search.set_merging_or_warn(connection, 0, search.QUIET_CRISISMERGE)
    try:
        yield
    finally:
        if not purged_after():
            search.set_merging_or_warn(connection, search.FTS5_AUTOMERGE, search.FTS5_CRISISMERGE)


lock_refused = db.lock_refused


def batch_key(connection: Connection, age):
    """``age`` as batches compare it to resume where the previous one ended.

    SQLite stores timestamps as text and orders the index by that text: the
    resume point is compared as the stored text itself, so a row written in
    another timestamp format (no microseconds, say) is neither skipped nor
    repeated. PostgreSQL compares the typed column, as both do an id.
    """
    is_time = not isinstance(age.type, Integer)
    return type_coerce(age, String) if connection.dialect.name == "sqlite" and is_time else age


def oldest_rows(connection: Connection, model, condition, age, size: int) -> ColumnElement[bool]:
    """A ``WHERE`` for a ``DELETE`` of the ``size`` rows of ``model`` with the lowest ``age`` matching ``condition``.

    SQLite: ``key IN (SELECT key ... LIMIT n)``, run as lookups by primary
    key. PostgreSQL may plan ``IN (subquery)`` as a hash join over a
    sequential scan of the whole table; ``ctid = ANY(ARRAY(SELECT ctid ...))``
    instead fetches each row straight from the heap (a TID scan), far
    cheaper for a batch (figures: docs/benchmarks.md, "Figures behind the
    code"). The subquery and the delete share one snapshot, so a ``ctid`` cannot point at another row.
    """
    key = model.__mapper__.primary_key[0]
    if connection.dialect.name == "postgresql":
        ctid: ColumnElement[Any] = literal_column("ctid")
        chosen = select(ctid).select_from(model).where(condition).order_by(age).limit(size)
        return ctid == any_(func.array(chosen.scalar_subquery()))
    chosen = select(key).where(condition).order_by(age).limit(size)
    return key.in_(chosen)
