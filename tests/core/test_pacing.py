"""A background writer's pauses learn from its waits for SQLite's write lock (``app.core.pacing``).

How much that leaves live writers is a performance claim: the backlog
benchmark measures it (at 40 and 100 submissions a second, with a control
whose pauses do not learn). These tests check what the pacer learns.
"""

from __future__ import annotations

import sqlite3
import threading

import pytest
from sqlalchemy import select, update
from sqlalchemy.exc import OperationalError

from app.core import db, pacing
from app.core.pacing import Pacer
from app.models import Setting

HELD = 0.2  # seconds another writer keeps the lock


def background(engine):
    return engine.connect().execution_options(**{db.WRITE_OPTION: True})


def held_lock(path: str) -> tuple[sqlite3.Connection, threading.Timer]:
    """Another writer (a live one, say) holding SQLite's write lock; released after ``HELD`` seconds."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(HELD, holder.execute, ["COMMIT"])
    release.start()
    return holder, release


def test_a_paced_transaction_commits_its_work_and_rolls_back_on_error(database_url):
    engine = db.make_engine(database_url)
    pacer = Pacer()
    try:
        with background(engine) as connection:
            with pacer.transaction(connection):
                connection.execute(update(Setting).where(Setting.key == "nothing").values(value="x"))
                connection.execute(Setting.__table__.insert().values(key="paced", value="1"))
            with pytest.raises(RuntimeError), pacer.transaction(connection):
                connection.execute(Setting.__table__.insert().values(key="undone", value="1"))
                raise RuntimeError("the transaction's work failed")
            pacer.pause()
            keys = set(connection.scalars(select(Setting.key).where(Setting.key.in_(["paced", "undone"]))))
        assert keys == {"paced"}
    finally:
        engine.dispose()


@pytest.mark.parametrize("db_kind", ["sqlite"])  # SQLite's one write lock: a background writer waits for it
def test_a_wait_for_the_lock_lengthens_the_next_pauses_and_fades(database_url):
    engine = db.make_engine(database_url)
    pacer = Pacer(ratio=0.0)
    holder, release = held_lock(engine.url.database)
    try:
        with background(engine) as connection:
            with pacer.transaction(connection):  # waits for the holder
                waited = pacer.learned
            with pacer.transaction(connection):  # nothing in the way: what it learned fades
                pass
        assert waited >= HELD / 2  # released HELD seconds after it was taken, just before the transaction
        assert pacer.learned < waited
    finally:
        release.join()
        holder.close()
        engine.dispose()


@pytest.mark.parametrize("db_kind", ["sqlite"])  # only SQLite refuses a lock after a busy timeout
def test_a_lock_refused_for_a_whole_busy_timeout_teaches_the_longest_pause(database_url):
    engine = db.make_engine(database_url, busy_timeout=0.02)
    pacer = Pacer()
    holder, release = held_lock(engine.url.database)
    try:
        with background(engine) as connection, pytest.raises(OperationalError, match="locked"):
            with pacer.transaction(connection):
                pass
        assert pacer.learned == pacing.MOST
    finally:
        release.join()
        holder.close()
        engine.dispose()
