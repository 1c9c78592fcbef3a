"""Every write transaction and every cleanup statement of a server, logged, to find what held the write lock.

A p99 can miss a single long hold of SQLite's write lock (a crisis merge
of the search index inside one visitor's submission, a candidate query
that reads every expired row inside one batch); these counts cannot. With
``BENCH_TXN_LOG`` set to a folder, ``bench.wsgi`` calls ``install``: each
worker appends one JSON line per event to a file of its own there, line by
line (the servers are killed, never stopped):

* ``txn``: a transaction that changed rows, from its ``BEGIN`` (for a live
  writer, once it has the write lock: ``app.core.db`` takes it there) to
  the end of its ``COMMIT``: milliseconds held and rows changed, SQLite's
  ``total_changes`` (FTS5's shadow-table writes included) or PostgreSQL's
  summed row counts; the search index's merge steps between the cleanup's
  batches are transactions of their own too.
* ``stmt``: each statement of the cleanup (the background runner: its
  batches, merge steps, the purge's steps), and its milliseconds.
* ``merging``: FTS5's ``automerge`` set on the index in use (the run turns
  it off, the purge after it back on). At FTS5's defaults about one insert
  in fifty does a step of its automerge, 1,000-2,300 rows changed (measured
  on the 50,000-row template): a visitor's big write then is the index's
  ordinary upkeep, as in the idle phase, not a merge the cleanup left to it.

``who`` is ``visitor`` inside a request, ``cleanup`` on the background runner.
``read`` (the benchmark's side) summarises a trial's window.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from flask import Flask, has_request_context
from sqlalchemy import event

from app.core import db
from app.inquiries import search

ENV = "BENCH_TXN_LOG"
BIG_CHANGES, BIG_MS = 1000, 100.0  # a write transaction above either counts as big
CLAIM = ("INSERT INTO settings", "UPDATE settings")

_state = threading.local()
_open: dict[int, tuple[float, int]] = {}  # id(DBAPI connection) -> (began, changes before)
_lock = threading.Lock()
_file = None


def _who() -> str:
    return "visitor" if has_request_context() else "cleanup"


def _write(record: dict) -> None:
    global _file
    with _lock:
        if _file is None:  # opened in the worker, after gunicorn's fork
            _file = open(Path(os.environ[ENV]) / f"txn-{os.getpid()}.jsonl", "a", buffering=1)  # noqa: SIM115
        _file.write(json.dumps(record) + "\n")


def _changes(dbapi_connection) -> int:
    total = getattr(dbapi_connection, "total_changes", None)
    return total if total is not None else getattr(_state, "rows", 0)


def _began(conn) -> None:
    _state.rows = 0
    dbapi_connection = conn.connection.dbapi_connection
    _open[id(dbapi_connection)] = (time.perf_counter(), _changes(dbapi_connection))


def _before(_conn, _cursor, _statement, *_args) -> None:
    _state.started = time.perf_counter()


def _after(_conn, cursor, statement, *_args) -> None:
    if cursor.rowcount and cursor.rowcount > 0:
        _state.rows = getattr(_state, "rows", 0) + cursor.rowcount
    if _who() == "cleanup":
        _write(
            {
                "t": time.time(),
                "type": "stmt",
                "who": "cleanup",
                "ms": (time.perf_counter() - _state.started) * 1000,
                "what": " ".join(statement.split()[:4]),
            }
        )


def _wrap_commit(dialect) -> None:
    commit = dialect.do_commit

    def do_commit(proxied) -> None:
        commit(proxied)
        dbapi_connection = getattr(proxied, "dbapi_connection", proxied)  # the pool's proxy: the driver's own
        began = _open.pop(id(dbapi_connection), None)
        if began is None:
            return
        changes = _changes(dbapi_connection) - began[1]
        if changes > 0:
            _write(
                {
                    "t": time.time(),
                    "type": "txn",
                    "who": _who(),
                    "ms": (time.perf_counter() - began[0]) * 1000,
                    "changes": changes,
                }
            )

    dialect.do_commit = do_commit


def _wrap_merge_step() -> None:
    step = search.merge_step

    def merge_step(driver_connection, pages: int, table: str = search.FTS_TABLE) -> None:
        own = not driver_connection.in_transaction  # between batches: a transaction of its own
        started, before = time.perf_counter(), driver_connection.total_changes
        step(driver_connection, pages, table)
        ms, changes = (time.perf_counter() - started) * 1000, driver_connection.total_changes - before
        _write({"t": time.time(), "type": "stmt", "who": _who(), "ms": ms, "what": f"merge {pages}"})
        if own and changes > 0:
            _write({"t": time.time(), "type": "txn", "who": _who(), "ms": ms, "changes": changes})

    search.merge_step = merge_step


def _wrap_set_merging() -> None:
    set_within = search.set_merging_within

    def set_merging_within(connection, automerge: int, crisismerge: int, table: str = search.FTS_TABLE) -> None:
        set_within(connection, automerge, crisismerge, table)
        if table == search.FTS_TABLE:
            _write({"t": time.time(), "type": "merging", "who": _who(), "automerge": automerge})

    search.set_merging_within = set_merging_within


def install(app: Flask) -> None:
    """Log the app's write transactions and the cleanup's statements (see the module docstring)."""
    engine = db.engine_of(app)
    event.listen(engine, "begin", _began)  # after the app's own listener, which took the lock
    event.listen(engine, "before_cursor_execute", _before)
    event.listen(engine, "after_cursor_execute", _after)
    _wrap_commit(engine.dialect)
    if engine.dialect.name == "sqlite":
        _wrap_merge_step()
        _wrap_set_merging()


# --- the benchmark's side --------------------------------------------------------------------------------


@dataclass
class Writes:
    """What a trial's log says about one window: big write transactions, the longest of each kind.

    ``merges``: those of more than ``BIG_CHANGES`` rows, by who held them: a submission makes 11-17, a
    cleanup batch of 100 rows about 345, so these are merges of the search index. ``big`` counts those
    and the ones that took over ``BIG_MS`` (on SQLite, of its one write lock; on a loaded machine also
    a thread held off the CPU while it held the lock).
    """

    merges: dict[str, int] = field(default_factory=dict)  # who -> write transactions of > BIG_CHANGES rows
    # visitors' write transactions of > BIG_CHANGES rows while FTS5's automerge was at its default on SQLite
    # (before the run turned it off, after the purge turned it back on): its ordinary steps, not in ``merges``
    upkeep: int = 0
    big: dict[str, int] = field(default_factory=dict)  # who -> how many big write transactions
    biggest: dict[str, tuple[float, int]] = field(default_factory=dict)  # who -> (ms, changes) of the longest
    longest_cleanup_statement: tuple[float, str] = (0.0, "")
    longest_visitor_write: float = 0.0
    transactions: int = 0
    held: dict[str, float] = field(default_factory=dict)  # who -> milliseconds of write transactions, summed
    counted: dict[str, int] = field(default_factory=dict)  # who -> how many write transactions
    by_time: bool = True  # PostgreSQL has no one write lock: its transactions count by rows only

    def merges_in(self, who: str) -> int:
        return self.merges.get(who, 0)

    def describe(self) -> str:
        held = (
            "; ".join(
                f"{who} {count} (of them > {BIG_CHANGES} rows: {self.merges.get(who, 0)}; longest "
                f"{self.biggest[who][0]:.0f} ms, {self.biggest[who][1]} rows)"
                for who, count in sorted(self.big.items())
            )
            or "none"
        )
        return (
            f"write transactions > {BIG_CHANGES} rows or > {BIG_MS:.0f} ms: {held}; longest cleanup statement "
            f"{self.longest_cleanup_statement[0]:.0f} ms ({self.longest_cleanup_statement[1]}); longest "
            f"visitor write {self.longest_visitor_write:.0f} ms; {self.transactions} write transactions; "
            f"visitors' automerge steps at FTS5's defaults {self.upkeep}"
        )


def read(folder: Path, start: float, end: float, by_time: bool = True) -> Writes:
    """The events of every worker's log in ``folder`` that ended within [start, end], in time order;
    ``by_time`` False: big write transactions count by rows only (PostgreSQL, which has no FTS5: every
    visitor's big write is a merge)."""
    writes = Writes(by_time=by_time)
    records = []
    for path in sorted(folder.glob("txn-*.jsonl")):
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:  # a line cut short by the kill
                continue
            if start <= record["t"] <= end:
                records.append(record)
    at_defaults = by_time  # every window starts before the run turns FTS5's automerge off
    for record in sorted(records, key=lambda each: each["t"]):
        if record["type"] == "merging":
            at_defaults = by_time and record["automerge"] > 0
        else:
            _count(writes, record, at_defaults)
    return writes


def _count(writes: Writes, record: dict, at_defaults: bool) -> None:
    who, ms = record["who"], record["ms"]
    if record["type"] == "stmt":
        if record["what"].startswith(CLAIM):  # the claim and its release wait for the lock as any write does
            return
        if ms > writes.longest_cleanup_statement[0] and who == "cleanup":
            writes.longest_cleanup_statement = (ms, record["what"])
        return
    writes.transactions += 1
    writes.held[who] = writes.held.get(who, 0.0) + ms
    writes.counted[who] = writes.counted.get(who, 0) + 1
    if who == "visitor":
        writes.longest_visitor_write = max(writes.longest_visitor_write, ms)
    if record["changes"] > BIG_CHANGES and who == "visitor" and at_defaults:
        writes.upkeep += 1
    elif record["changes"] > BIG_CHANGES:
        writes.merges[who] = writes.merges.get(who, 0) + 1
    if record["changes"] > BIG_CHANGES or (ms > BIG_MS and writes.by_time):
        writes.big[who] = writes.big.get(who, 0) + 1
        if ms > writes.biggest.get(who, (0.0, 0))[0]:
            writes.biggest[who] = (ms, record["changes"])
