"""The batch delete: resuming where the last batch ended, and batches sized by time."""

from __future__ import annotations

import sqlite3
import threading
from datetime import timedelta

import psycopg
import pytest
from sqlalchemy import event, func, select

from app import cleanup
from app.cleanup.batches import Limits
from app.core import db
from app.models import Inquiry
from tests.factories import add_inquiries, aged_inquiries


def test_resuming_batches_skip_no_row_written_in_another_timestamp_format(app, db_session, clock, db_kind):
    ids = add_inquiries(db_session, aged_inquiries(clock, [200] * 6, legal_hold=False))
    if db_kind == "sqlite":
        # The same second, stored without microseconds (as another writer might): it sorts
        # first as text, and a resume point compared as a parsed time would skip it.
        whole_second = (clock() - timedelta(days=200)).strftime("%Y-%m-%d %H:%M:%S")
        for row_id in ids[3:]:
            db_session.connection().exec_driver_sql(
                "UPDATE submissions SET created_at = ? WHERE id = ?", (whole_second, row_id)
            )
        db_session.commit()
    app.config["CLEANUP_BATCH_SIZE"] = 2
    with app.app_context():
        run = cleanup.run("test")
    assert (run.status, run.remaining) == ("ok", 0)
    db_session.rollback()
    assert list(db_session.scalars(select(Inquiry.id))) == []


def test_batches_resume_past_held_rows_instead_of_rescanning_them(app, db_session, clock):
    add_inquiries(db_session, aged_inquiries(clock, [300] * 5, legal_hold=True))
    add_inquiries(db_session, aged_inquiries(clock, [250 - day for day in range(6)]))
    deletes = []

    def record(_conn, _cursor, statement, parameters, *_args):
        # The inbox's batches (the spam target deletes from the same table, with 'spam').
        if statement.lstrip().upper().startswith("DELETE FROM SUBMISSIONS") and "inbox" in str(parameters):
            deletes.append(statement)

    event.listen(db.engine_of(app), "before_cursor_execute", record)
    app.config["CLEANUP_BATCH_SIZE"] = 2
    with app.app_context():
        run = cleanup.run("test")
    assert (run.status, run.remaining) == ("ok", 0)
    assert len(deletes) == 3  # three batches of two; the third finds nothing left to resume at
    assert ">=" not in deletes[0] and all(">=" in statement for statement in deletes[1:])
    db_session.rollback()
    assert len(list(db_session.scalars(select(Inquiry.id)))) == 5  # the held rows stay


@pytest.mark.parametrize(
    "size, rows, seconds, expected",
    [
        (1000, 1000, 0.010, 2000),  # fast batch: grow, at most doubling
        (1000, 1000, 0.040, 500),  # slow batch: shrink toward 20 ms
        (1000, 10, 0.001, 1000),  # a short batch says nothing about the size
        (150, 150, 1.0, 100),  # never below the floor
        (40_000, 40_000, 0.001, 50_000),  # never above the ceiling
    ],
)
def test_a_batch_is_sized_to_hold_its_transaction_about_the_target_time(size, rows, seconds, expected):
    limits = Limits(batch_size=1000, time_budget=10, yield_ratio=1.0, batch_seconds=0.02)
    assert limits.next_size(size, rows, seconds) == expected


def test_a_batch_size_that_is_set_is_kept(app, db_kind):
    app.config["CLEANUP_BATCH_SIZE"] = 300
    with app.app_context():
        from app.cleanup.runs import batch_limits

        limits = batch_limits()
    assert limits.batch_seconds is None and limits.next_size(300, 300, 5.0) == 300


@pytest.mark.parametrize("db_kind", ["sqlite"])  # SQLite's one write lock
def test_a_batch_refused_the_write_lock_is_tried_again_not_failed(app_config, make_app, clock):
    """Live writers poll for SQLite's lock; a batch that loses to them waits its turn (``LOCKED_PAUSE``)."""
    app = make_app({**app_config, "DB_STATEMENT_TIMEOUT": 0.01})  # the busy handler gives up after 10 ms
    with app.app_context():
        add_inquiries(db.get_session(), aged_inquiries(clock, [200] * 3, legal_hold=False))
    path = db.engine_of(app).url.database
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    held = []

    def hold_the_lock_once():
        holder.execute("BEGIN IMMEDIATE")  # a live writer got in first, for 300 ms
        held.append(threading.Timer(0.3, holder.execute, ["COMMIT"]))
        held[0].start()

    before_the_runs_first_write(db.engine_of(app), hold_the_lock_once)
    try:
        with app.app_context():
            run = cleanup.run("test", force=True)
    finally:
        held[0].join()
        holder.close()
    assert held and (run.status, run.remaining) == ("ok", 0)
    with app.app_context():
        assert db.get_session().scalar(select(func.count()).select_from(Inquiry)) == 0


def before_the_runs_first_write(engine, action) -> None:
    """Call ``action`` once, when the cleanup's batches get their connection, before its first transaction
    (the index's merging on SQLite, then the batches): each takes the write lock up front."""
    done = []

    def writer(_conn, options) -> None:
        if options.get(db.WRITE_OPTION) and not done:
            done.append(True)
            action()

    event.listen(engine, "set_connection_execution_options", writer)


class LockHolder:
    """Another connection takes the lock a batch needs and keeps it ``seconds``: SQLite's write lock (as a
    burst of live writers would), before the run's first write transaction; PostgreSQL's lock on ``table``
    (a batch there waits for it, with no statement timeout), the first time a batch deletes from it."""

    def __init__(self, app, db_kind: str, table: str, seconds: float):
        self.kind, self.table, self.seconds, self.timers = db_kind, table, seconds, []
        engine = db.engine_of(app)
        if db_kind == "sqlite":
            self.connection = sqlite3.connect(engine.url.database, isolation_level=None, check_same_thread=False)
        else:
            self.connection = psycopg.connect(
                engine.url.render_as_string(hide_password=False).replace("postgresql+psycopg", "postgresql"),
                autocommit=True,
            )
        if db_kind == "sqlite":  # the cleanup's transactions take the write lock up front
            before_the_runs_first_write(engine, self._hold)
        else:  # a batch's delete waits for the table
            event.listen(engine, "before_cursor_execute", self._before)

    def _before(self, _conn, _cursor, statement, *_args) -> None:
        if statement.startswith(f"DELETE FROM {self.table}"):
            self._hold()

    def _hold(self) -> None:
        if not self.timers:
            self.connection.execute("BEGIN IMMEDIATE" if self.kind == "sqlite" else "BEGIN")
            if self.kind == "postgresql":
                self.connection.execute(f"LOCK TABLE {self.table} IN SHARE MODE")
            self.timers.append(threading.Timer(self.seconds, self.connection.execute, ["COMMIT"]))
            self.timers[0].start()

    def close(self) -> None:
        """Wait for the lock's release, and close the connection."""
        for timer in self.timers:
            timer.join()
        self.connection.close()


def arrange_expired(app, clock) -> None:
    """Three expired inquiries, written by ``app`` (one with the usual timeouts: on a busy machine a write
    under a 50 ms statement timeout can fail before the test begins)."""
    with app.app_context():
        add_inquiries(db.get_session(), aged_inquiries(clock, [200] * 3, legal_hold=False))


def test_a_batch_refused_the_lock_past_the_busy_timeout_backs_off_and_the_run_finishes(
    app_config, make_app, clock, db_kind
):
    """A busy lock is not an error: with a busy timeout of 50 ms, the lock held for 5.5 s (longer than the
    five seconds a batch used to keep trying before the run ended in error), the batch backs off, tries
    again within the run's time budget, and the run deletes everything."""
    arrange_expired(make_app(app_config), clock)  # with the usual timeout: 50 ms is for the run alone
    app = make_app({**app_config, "DB_STATEMENT_TIMEOUT": 0.05, "CLEANUP_TIME_BUDGET": 60, "CLEANUP_LEASE": 120})
    holder = LockHolder(app, db_kind, "submissions", 5.5)
    try:
        with app.app_context():
            run = cleanup.run("test", force=True)
    finally:
        holder.close()
    assert holder.timers and (run.status, run.remaining, run.error) == ("ok", 0, None)
    with app.app_context():
        assert db.get_session().scalar(select(func.count()).select_from(Inquiry)) == 0


@pytest.mark.parametrize("db_kind", ["sqlite"])  # only SQLite refuses a lock after a busy timeout
def test_a_run_whose_budget_ends_while_the_lock_is_refused_ends_partial_not_in_error(app_config, make_app, clock):
    arrange_expired(make_app(app_config), clock)
    app = make_app({**app_config, "DB_STATEMENT_TIMEOUT": 0.05, "CLEANUP_TIME_BUDGET": 0.3, "CLEANUP_LEASE": 60})
    holder = LockHolder(app, "sqlite", "submissions", 0.6)
    try:
        with app.app_context():
            run = cleanup.run("test", force=True)
    finally:
        holder.close()
    assert (run.status, run.remaining, run.error) == ("partial", 3, None)
