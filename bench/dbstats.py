"""What the database itself saw touch the ``settings`` table during a block of requests.

* PostgreSQL: ``pg_stat_user_tables`` for ``settings``: rows inserted,
  updated or deleted (writes) and sequential plus index scans (statements
  that read it). A backend reports its counts lazily: at the end of a
  transaction at most once a second, else when it has been idle for 10 s
  (PostgreSQL 15's ``PGSTAT_IDLE_INTERVAL``), and always when it exits. So
  before the first reading the server's backends are ended
  (``pg_terminate_backend``; its pool reconnects, ``pool_pre_ping``), and the
  caller stops the server inside the block, before the second.
* SQLite: the WAL. The block starts from an empty WAL (a TRUNCATE checkpoint)
  and this process holds a read transaction on it, so no checkpoint can reset
  it meanwhile; afterwards every frame is one page written by a commit, and
  frames whose page belongs to ``settings`` (its table or its key index) are
  writes to it. Reads leave no trace in a SQLite file, so there are no scans.

Both also count all writing transactions (PostgreSQL: transaction ids handed
out; SQLite: commit frames), for the note.
"""

from __future__ import annotations

import sqlite3
import struct
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

EXIT_WAIT = 5.0  # seconds for ended backends to be gone


@dataclass
class Touches:
    """Counts over a block: writes to ``settings``, scans of it (None on SQLite), writing transactions."""

    writes: int = 0
    scans: int | None = None
    transactions: int = 0


@contextmanager
def settings_touches(database):
    """Yield a ``Touches`` that is filled in when the block ends; stop the server inside the block."""
    touches = Touches()
    if database.kind == "sqlite":
        with _sqlite_wal(database.path, touches):
            yield touches
    else:
        _end_other_backends(database)
        before = _pg_counters(database)
        yield touches
        _end_other_backends(database)  # the stopped server's backends may still be exiting
        after = _pg_counters(database)
        touches.writes = after["writes"] - before["writes"]
        touches.scans = after["scans"] - before["scans"]
        touches.transactions = after["xids"] - before["xids"]


_PG_COUNTERS = """
SELECT n_tup_ins + n_tup_upd + n_tup_del AS writes, coalesce(seq_scan, 0) + coalesce(idx_scan, 0) AS scans,
       pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xids
FROM pg_stat_user_tables WHERE relname = 'settings'
"""


def _end_other_backends(database) -> None:
    """End every other backend on this database, and wait until they are gone (they report as they exit)."""
    others = "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    deadline = time.monotonic() + EXIT_WAIT
    with database.engine.connect() as conn:
        conn.exec_driver_sql(f"SELECT pg_terminate_backend(pid) {others}")
        while conn.exec_driver_sql(f"SELECT count(*) {others}").scalar_one() and time.monotonic() < deadline:
            conn.exec_driver_sql("SELECT pg_stat_clear_snapshot()")
            time.sleep(0.05)


def _pg_counters(database) -> dict[str, int]:
    with database.engine.connect() as conn:
        conn.exec_driver_sql("SELECT pg_stat_clear_snapshot()")
        return dict(conn.exec_driver_sql(_PG_COUNTERS).mappings().one())


@contextmanager
def _sqlite_wal(path: str, touches: Touches):
    """Pin an empty WAL for the block; then count its frames (all commits, and pages of ``settings``)."""
    connection = sqlite3.connect(path, isolation_level=None, timeout=30)
    try:
        _truncate_wal(connection)
        pages = _settings_pages(connection)
        connection.execute("BEGIN")
        connection.execute("SELECT count(*) FROM settings").fetchone()  # the snapshot that pins the WAL
        yield
        frames = list(wal_frames(Path(f"{path}-wal")))
        touches.writes = sum(1 for page, _ in frames if page in pages)
        touches.transactions = sum(1 for _, commit in frames if commit)
        connection.execute("COMMIT")
    finally:
        connection.close()


def _truncate_wal(connection: sqlite3.Connection) -> None:
    for _ in range(50):
        busy, _log, _done = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if not busy:
            return
        time.sleep(0.1)
    raise RuntimeError("could not empty the WAL: the server kept writing")


def _settings_pages(connection: sqlite3.Connection) -> set[int]:
    """The root pages of ``settings`` and its indexes (a two-row table has no other page)."""
    rows = connection.execute("SELECT rootpage FROM sqlite_master WHERE tbl_name = 'settings'").fetchall()
    return {row[0] for row in rows}


def wal_frames(path: Path):
    """Yield ``(page number, is commit)`` for each valid frame of a WAL file (salts match the header)."""
    if not path.exists():
        return
    with open(path, "rb") as wal:
        header = wal.read(32)
        if len(header) < 32:
            return
        page_size = struct.unpack(">I", header[8:12])[0]
        salts = header[16:24]
        while len(frame := wal.read(24)) == 24:
            page, size_after = struct.unpack(">II", frame[:8])
            if frame[8:16] != salts:
                return
            yield page, size_after != 0
            wal.seek(page_size, 1)
