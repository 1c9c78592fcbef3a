"""How each database deletes a batch best: the cleanup's dialect differences.

SQLite has one write lock. Live writers take it up front, polling every
millisecond (``app.core.db``); the cleanup's batches take it the same way
and pause after each one as long as their waits for it teach
(``app.core.pacing``), so the visitors queued meanwhile get in; batches are
sized to hold the lock about 30 ms, and after each one the cleanup merges
the search index a step (more while a level is crowded) and copies the
WAL back into the database file itself (``app.inquiries.merging.IndexMerging.after_batch``), so
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

from app.core import db
from app.inquiries import search

log = logging.getLogger(__name__)


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
