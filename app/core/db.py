"""The database: one engine per app, one session per request, short transactions.

SQLite gets WAL, a busy timeout, foreign keys and ``secure_delete`` on every
connection. "Deleted" means gone from the file: ``secure_delete`` zeroes the
bytes a deleted row leaves in the database file, and ``forget_deleted``
(after a cleanup run, a manual delete or an erasure that removed rows)
checkpoints the WAL and truncates it, so the old pages do not linger there
either. PostgreSQL keeps dead tuples until vacuum, and WAL: docs/cleanup.md.

Timeouts, so that a database that hangs costs a request a 503 in bounded
time (app.web.errors), never a hung worker thread:

* PostgreSQL: ``connect_timeout`` on every new connection, the same wait for
  a free pooled connection, and ``statement_timeout`` set once on every new
  connection of the app's engine (not in every transaction: that was a round
  trip of its own each time). The cleanup's batches and migrations lift it
  for their own transactions (``unlimited``).
* SQLite: the busy timeout, how long a write waits for the write lock (on
  every connection, the cleanup's too).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, cast

from flask import Flask, current_app, g
from sqlalchemy import Connection, CursorResult, Engine, Result, create_engine, event, exc
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

log = logging.getLogger(__name__)

WRITE_OPTION = "sundown_write"  # execution option: this transaction will write
UNICODE_LOWER = "unicode_lower"  # SQL function on SQLite connections: Python's str.lower()
WRITE_POLL = 0.001  # seconds between tries for SQLite's write lock
CONNECT_TIMEOUT = 5  # seconds (libpq counts whole seconds, at least 2)
STATEMENT_TIMEOUT = 5.0  # seconds; SQLite's busy timeout too
FORGET_PATIENCE = 0.5  # seconds a truncating checkpoint keeps trying after a delete
FORGET_RETRY = 0.02  # seconds between its tries


def init_app(app: Flask) -> None:
    """Create the app's engine and session factory and close sessions after requests."""
    statement_timeout = app.config["DB_STATEMENT_TIMEOUT"]
    engine = make_engine(
        app.config["DATABASE_URL"],
        app.config["DB_POOL_SIZE"],
        connect_timeout=app.config["DB_CONNECT_TIMEOUT"],
        busy_timeout=statement_timeout,
    )
    factory = sessionmaker(engine, expire_on_commit=False)
    if engine.dialect.name == "postgresql":
        event.listen(engine, "connect", partial(_limit_statements, _milliseconds(statement_timeout)))
    if engine.dialect.name == "sqlite" and engine.url.database not in (None, "", ":memory:"):
        event.listen(
            engine, "connect", partial(_keep_private, Path(engine.url.database), Path(app.instance_path)), once=True
        )
    app.extensions["sundown.engine"] = engine
    app.extensions["sundown.sessionmaker"] = factory
    app.teardown_appcontext(_close_request_session)


def make_engine(
    url: str,
    pool_size: int = 5,
    *,
    connect_timeout: int = CONNECT_TIMEOUT,
    busy_timeout: float = STATEMENT_TIMEOUT,
) -> Engine:
    """An engine for ``url``: psycopg 3 for PostgreSQL, tuned connections for SQLite.

    ``connect_timeout`` (PostgreSQL) bounds a new connection and the wait for a
    free pooled one; ``busy_timeout`` (SQLite) bounds the wait for the write lock.
    """
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(parsed, connect_args={"timeout": busy_timeout}, hide_parameters=True)
        event.listen(engine, "connect", partial(_tune_sqlite, _milliseconds(busy_timeout)))
        # pysqlite's own BEGIN handling defers the write lock in a way that
        # breaks SAVEPOINT and lock upgrades; issue BEGIN ourselves.
        event.listen(engine, "begin", partial(_begin_sqlite, busy_timeout))
        return engine
    return create_engine(
        parsed,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=True,
        hide_parameters=True,
        pool_timeout=connect_timeout,
        connect_args={"connect_timeout": connect_timeout},
    )


def _milliseconds(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def _limit_statements(milliseconds: int, dbapi_connection, _record) -> None:
    with dbapi_connection.cursor() as cursor:
        cursor.execute(f"SET statement_timeout = {milliseconds}")
    dbapi_connection.commit()


def unlimited(connection: Connection) -> None:
    """Lift the statement timeout for the rest of ``connection``'s transaction (PostgreSQL; ``SET LOCAL`` ends
    with it): for work no request waits for, the cleanup's batches and migrations."""
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql("SET LOCAL statement_timeout = 0")


PRIVATE_FILE, PRIVATE_FOLDER = 0o600, 0o700


def _keep_private(database: Path, instance: Path, _dbapi_connection, _record) -> None:
    """At the first connection: the SQLite file, its WAL and shared-memory files for this user only
    (SQLite gives the WAL and -shm files the database file's mode), and the instance folder when the file
    lives there. Personal data should not be readable by every account on the host."""
    for path in (database, database.with_name(database.name + "-wal"), database.with_name(database.name + "-shm")):
        make_private(path, PRIVATE_FILE)
    if database.resolve().parent == instance.resolve():
        make_private(instance, PRIVATE_FOLDER)


def make_private(path: Path, mode: int) -> None:
    """Give ``path`` ``mode`` when it exists, is ours and allows more; anything else is left as it is."""
    try:
        status = path.stat()
        if status.st_uid == os.getuid() and status.st_mode & 0o777 & ~mode:
            path.chmod(mode)
    except OSError:
        return


def _tune_sqlite(busy_timeout_ms: int, dbapi_connection, _record) -> None:
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    # Many builds (Debian's among them) default to it; it is set, not assumed.
    cursor.execute("PRAGMA secure_delete=ON")
    cursor.close()
    # SQLite's lower() and LIKE fold ASCII letters only; the search's walk needs every letter (app.inquiries.search).
    dbapi_connection.create_function(UNICODE_LOWER, 1, _unicode_lower, deterministic=True)


def _unicode_lower(text: str | None) -> str | None:
    return text.lower() if isinstance(text, str) else text


def _begin_sqlite(busy_timeout: float, connection) -> None:
    """``BEGIN``, or for a writer (``transaction(write=True)``) the write lock up front, polled finely.

    SQLite's own busy handler sleeps 1, 2, 5, 10 ... 100 ms between tries, so
    a writer that misses one short gap sleeps longer each time; behind the
    cleanup's batches live writers would starve. A writer that polls every
    millisecond instead gets in at the first pause between two batches,
    while the cleanup's batches keep the stock handler: live traffic goes
    first.
    """
    if not connection.get_execution_options().get(WRITE_OPTION):
        connection.exec_driver_sql("BEGIN")
        return
    cursor = connection.connection.dbapi_connection.cursor()
    deadline = time.monotonic() + busy_timeout
    cursor.execute("PRAGMA busy_timeout=0")
    try:
        while True:
            try:
                cursor.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() >= deadline:
                    # As SQLAlchemy would raise it, so it is a 503 like any database error.
                    raise exc.OperationalError("BEGIN IMMEDIATE", None, error) from error
                time.sleep(WRITE_POLL)
    finally:
        cursor.execute(f"PRAGMA busy_timeout={_milliseconds(busy_timeout)}")
        cursor.close()


def lock_refused(error: Exception) -> bool:
    """SQLite: whether ``error`` is its ``database is locked`` (another connection held the write lock)."""
    return "database is locked" in str(getattr(error, "orig", error))


def checkpoint(driver_connection) -> None:
    """SQLite: copy what the WAL holds into the database file, as far as readers allow, never waiting
    (``PASSIVE``), on the driver's connection outside any transaction. It holds no write lock."""
    driver_connection.execute("PRAGMA wal_checkpoint(PASSIVE)").close()


def forget_deleted(engine: Engine, patience: float = FORGET_PATIENCE) -> bool:
    """SQLite: after a delete, copy the WAL into the database file and truncate it; True when done.

    With ``secure_delete`` the database file holds no deleted bytes, but the
    WAL still holds the pages as they were before the delete until a
    checkpoint overwrites them; a ``TRUNCATE`` checkpoint empties it. It
    needs every reader to be on the newest snapshot, and while it waits for
    one it holds off new writers; so it never waits: it copies the WAL with a
    ``PASSIVE`` checkpoint first (no lock held, so the ``TRUNCATE`` only has
    the last pages to copy while it holds writers off), then tries every
    ``FORGET_RETRY`` seconds for ``patience`` seconds, and reports False
    when readers outlasted that (the next delete's checkpoint completes the
    job; each try that fails still copies what it can). A no-op on
    PostgreSQL (docs/cleanup.md says what remains there).
    """
    if engine.dialect.name != "sqlite":
        return True
    deadline = time.monotonic() + patience
    with engine.connect() as connection:
        # On the driver's connection: a checkpoint cannot run inside a transaction.
        driver = sqlite_driver(connection)
        reading = driver.execute("PRAGMA busy_timeout")
        busy_timeout = reading.fetchone()[0]  # restored after: the app's, not a default
        reading.close()
        driver.execute("PRAGMA busy_timeout=0").close()
        try:
            checkpoint(driver)
            while not _truncate_wal(driver) and time.monotonic() < deadline:
                time.sleep(FORGET_RETRY)
            done = _truncate_wal(driver)
        finally:
            driver.execute(f"PRAGMA busy_timeout={int(busy_timeout)}").close()
    if not done:
        log.warning("readers kept the WAL from being truncated after a delete; the next checkpoint completes it")
    return done


def sqlite_driver(connection: Connection) -> sqlite3.Connection:
    """The sqlite3 connection under ``connection`` (a checked-out connection always has its driver's)."""
    return cast(sqlite3.Connection, connection.connection.driver_connection)


def rowcount(result: Result[Any]) -> int:
    """The rows an INSERT, UPDATE or DELETE matched.

    ``Session.execute`` is typed as returning a ``Result``; for such a
    statement it is a ``CursorResult``, which has the count.
    """
    return cast(CursorResult[Any], result).rowcount


def _truncate_wal(driver) -> bool:
    cursor = driver.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    busy, _log_frames, _checkpointed = cursor.fetchone()
    cursor.close()
    return not busy


def get_engine() -> Engine:
    """The current app's engine."""
    return engine_of(current_app)


def get_session(write: bool = False) -> Session:
    """The request's session, opened on first use and closed at teardown.

    ``write=True``, before the request's first query, for a request that
    reads and then writes in it (an admin's form): on SQLite its transaction
    takes the write lock at its start. Begun as a reader, it could not write
    once any other connection had committed after its first read (SQLite
    refuses at once, "database is locked", whatever the busy timeout), and a
    cleanup run or a delivery pass commits at any moment.
    """
    if "db_session" not in g:
        g.db_session = current_app.extensions["sundown.sessionmaker"]()
    if write and not g.db_session.in_transaction():
        g.db_session.connection(execution_options={WRITE_OPTION: True})
    return g.db_session


@contextmanager
def transaction(write: bool = False) -> Iterator[Session]:
    """A fresh session whose work commits at the end of the block, or rolls back.

    For work that must not share the request's transaction: the export's
    pages, rate-limit counters, login bookkeeping. ``write=True`` for a short
    transaction that will write: on SQLite it takes the write lock at once,
    polling finely (see ``_begin_sqlite``); elsewhere it changes nothing.
    """
    with current_app.extensions["sundown.sessionmaker"]() as session, session.begin():
        if write:
            session.connection(execution_options={WRITE_OPTION: True})
        yield session


@contextmanager
def reading() -> Iterator[Session]:
    """A fresh session for reads only, ended (rolled back, no commit) with the block: a connection held
    only that long."""
    with current_app.extensions["sundown.sessionmaker"]() as session:
        yield session


def _close_request_session(_exc: BaseException | None) -> None:
    session = g.pop("db_session", None)
    if session is not None:
        session.close()


def engine_of(app: Flask) -> Engine:
    """The engine of ``app``, outside any app context (tests, benchmarks, shutdown)."""
    return app.extensions["sundown.engine"]
