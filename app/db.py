"""The database: one engine per app, one session per request, short transactions.

SQLite gets WAL, a busy timeout and foreign keys on every connection.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from flask import Flask, current_app, g
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

SQLITE_BUSY_TIMEOUT_MS = 5000


def init_app(app: Flask) -> None:
    """Create the app's engine and session factory and close sessions after requests."""
    engine = make_engine(app.config["DATABASE_URL"], app.config["DB_POOL_SIZE"])
    app.extensions["sundown.engine"] = engine
    app.extensions["sundown.sessionmaker"] = sessionmaker(engine, expire_on_commit=False)
    app.teardown_appcontext(_close_request_session)


def make_engine(url: str, pool_size: int = 5) -> Engine:
    """An engine for ``url``: psycopg 3 for PostgreSQL, tuned connections for SQLite."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(parsed, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
        event.listen(engine, "connect", _tune_sqlite)
        # pysqlite's own BEGIN handling defers the write lock in a way that
        # breaks SAVEPOINT and lock upgrades; issue BEGIN ourselves.
        event.listen(engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN"))
        return engine
    return create_engine(parsed, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True)


def _tune_sqlite(dbapi_connection, _record) -> None:
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def get_engine() -> Engine:
    """The current app's engine."""
    return engine_of(current_app)


def get_session() -> Session:
    """The request's session, opened on first use and closed at teardown."""
    if "db_session" not in g:
        g.db_session = current_app.extensions["sundown.sessionmaker"]()
    return g.db_session


@contextmanager
def transaction() -> Iterator[Session]:
    """A fresh session whose work commits at the end of the block, or rolls back.

    For work that must not share the request's transaction: the pruner's
    batches, the export's pages, rate-limit counters.
    """
    with current_app.extensions["sundown.sessionmaker"]() as session, session.begin():
        yield session


def _close_request_session(_exc: BaseException | None) -> None:
    session = g.pop("db_session", None)
    if session is not None:
        session.close()


def engine_of(app: Flask) -> Engine:
    """The engine of ``app``, outside any app context (tests, benchmarks, shutdown)."""
    return app.extensions["sundown.engine"]
