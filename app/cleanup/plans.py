"""How each database deletes a batch best: the cleanup's dialect differences.

SQLite has one write lock. Live writers take it up front, polling every
millisecond (``app.db``), while the cleanup's batches wait with SQLite's
stock busy handler, so a visitor's insert gets in as soon as a batch
commits, with no pause needed after it; batches are sized to hold the lock
about 30 ms, and after each one the cleanup copies the WAL back into the
database file itself (``after_batch``), so no visitor's commit does it.
Measured on 190,000 realistic expired rows (200-5000 characters, 5% held)
under open-loop inserts every 10 ms: 0.45x one plain DELETE's rows/s at
20 ms batches with insert p99 1.4x idle, where one DELETE stalled inserts
for 3.5 s; the earlier design (1000 rows, a pause as long as the batch,
stock busy handler for everyone) reached 0.20x.

PostgreSQL locks rows, so inserts never wait for a delete batch: there,
large batches without a pause cost live traffic nothing and save a commit
and an index descent per thousand rows (see docs/benchmarks.md).
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, Connection, Engine, String, any_, func, literal_column, select, type_coerce

_BATCH_SIZE = {"sqlite": 1000, "postgresql": 50_000}
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


def after_batch(connection: Connection) -> None:
    """SQLite: copy the batch's pages from the WAL into the database file now, on this connection.

    Deleting long messages writes megabytes of WAL per batch (``SECURE_DELETE``
    zeroes every freed byte). Left to the automatic checkpoint, that copy is
    done by whichever connection commits past the threshold: often a
    visitor's insert, which then waits a second or more. Done here, it costs
    the cleanup, and it holds no write lock: live writers get in meanwhile.
    """
    if connection.dialect.name == "sqlite":
        # On the driver's connection: a checkpoint cannot run inside a transaction.
        connection.connection.driver_connection.execute("PRAGMA wal_checkpoint(PASSIVE)").close()


def lock_refused(error: Exception) -> bool:
    """SQLite: whether ``error`` is its ``database is locked`` (another connection held the write lock)."""
    return "database is locked" in str(getattr(error, "orig", error))


def batch_key(connection: Connection, age):
    """``age`` as batches compare it to resume where the previous one ended.

    SQLite stores timestamps as text and orders the index by that text: the
    resume point is compared as the stored text itself, so a row written in
    another timestamp format (no microseconds, say) is neither skipped nor
    repeated. PostgreSQL compares the typed column.
    """
    return type_coerce(age, String) if connection.dialect.name == "sqlite" else age


def oldest_rows(connection: Connection, model, condition, age, size: int) -> ColumnElement[bool]:
    """A ``WHERE`` for a ``DELETE`` of the ``size`` rows of ``model`` with the lowest ``age`` matching ``condition``.

    SQLite: ``key IN (SELECT key ... LIMIT n)``, run as lookups by primary
    key. PostgreSQL may plan ``IN (subquery)`` as a hash join over a
    sequential scan of the whole table (33 ms for 1000 of 200,000 rows,
    measured); ``ctid = ANY(ARRAY(SELECT ctid ...))`` instead fetches each
    row straight from the heap (a TID scan, about 1 ms). The subquery and the
    delete share one snapshot, so a ``ctid`` cannot point at another row.
    """
    key = model.__mapper__.primary_key[0]
    if connection.dialect.name == "postgresql":
        ctid = literal_column("ctid")
        chosen = select(ctid).select_from(model).where(condition).order_by(age).limit(size)
        return ctid == any_(func.array(chosen.scalar_subquery()))
    chosen = select(key).where(condition).order_by(age).limit(size)
    return key.in_(chosen)
