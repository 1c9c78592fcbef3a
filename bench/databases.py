"""Benchmark databases: make one, bulk-load expired rows fast, read counters.

Raw SQL lives here on purpose: bulk loading and server statistics are not app
code, and each database has its own fastest way to make a million rows.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import sqlalchemy as sa

from app.db import make_engine
from app.migrate import upgrade

# Rows this old are past the default retention (180 days) and due for pruning.
EXPIRED_FROM_DAYS = 400
EXPIRED_TO_DAYS = 200


def epoch_ms(moment: datetime) -> int:
    """Milliseconds since the Unix epoch, as the claim stores them."""
    return int(moment.timestamp() * 1000)


def utcnow() -> datetime:
    """The wall clock (benchmarks run against real time)."""
    return datetime.now(timezone.utc)


class Database:
    """One migrated database of ``kind`` ("sqlite" or "postgresql") at ``url``."""

    def __init__(self, kind: str, url: str):
        self.kind = kind
        self.url = url
        self.engine = make_engine(url)

    @classmethod
    def sqlite(cls, directory: Path, name: str) -> "Database":
        """A fresh migrated SQLite file."""
        path = directory / f"{name}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        database = cls("sqlite", f"sqlite:///{path}")
        upgrade(database.engine)
        return database

    @classmethod
    def postgresql(cls, cluster, name: str) -> "Database":
        """A fresh migrated database on ``cluster``."""
        admin = sa.create_engine(cluster.url("postgres"), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")
            conn.exec_driver_sql(f"CREATE DATABASE {name}")
        admin.dispose()
        database = cls("postgresql", cluster.url(name))
        upgrade(database.engine)
        return database

    @property
    def path(self) -> str:
        """The SQLite file path."""
        return self.url.removeprefix("sqlite:///")

    def dispose(self) -> None:
        """Close pooled connections."""
        self.engine.dispose()

    def load_expired(self, rows: int) -> float:
        """Insert ``rows`` inquiries past retention, ``created_at`` growing with id; return seconds."""
        return self.load(rows, EXPIRED_FROM_DAYS, EXPIRED_TO_DAYS)

    def load(self, rows: int, from_days: float, to_days: float) -> float:
        """Insert ``rows`` inquiries aged ``from_days`` down to ``to_days``; return seconds."""
        start = utcnow() - timedelta(days=from_days)
        step = int((from_days - to_days) * 86400 / max(rows, 1)) or 1
        started = time.perf_counter()
        with self.engine.begin() as conn:
            if self.kind == "sqlite":
                conn.exec_driver_sql(_SQLITE_LOAD, (rows, start.strftime("%Y-%m-%d %H:%M:%S"), step))
            else:
                conn.exec_driver_sql(_POSTGRES_LOAD, (start, step, rows))
        if self.kind == "postgresql":
            with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("VACUUM ANALYZE submissions")
        return time.perf_counter() - started

    def count(self, table: str = "submissions") -> int:
        """Rows in ``table``."""
        with self.engine.connect() as conn:
            return conn.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar_one()

    def expired_cutoff(self) -> datetime:
        """A cutoff that the default retention of 180 days would use now."""
        return utcnow() - timedelta(days=180)

    def plain_delete(self, cutoff: datetime) -> tuple[int, float]:
        """One ``DELETE`` of every expired, non-held inquiry; return (rows, seconds)."""
        value = cutoff.strftime("%Y-%m-%d %H:%M:%S.%f") if self.kind == "sqlite" else cutoff
        marker = "?" if self.kind == "sqlite" else "%s"
        started = time.perf_counter()
        with self.engine.begin() as conn:
            deleted = conn.exec_driver_sql(
                f"DELETE FROM submissions WHERE legal_hold = {_false(self.kind)} AND created_at < {marker}",
                (value,),
            ).rowcount
        return deleted, time.perf_counter() - started

    def set_last_cleanup(self, moment: datetime) -> None:
        """Store the claim's last run time (epoch ms), creating the row if needed."""
        with self.engine.begin() as conn:
            conn.exec_driver_sql(_upsert_setting(self.kind), ("last_cleanup_at", str(epoch_ms(moment))))

    def prune_runs(self) -> list[dict]:
        """The ledger, oldest first."""
        with self.engine.connect() as conn:
            rows = conn.exec_driver_sql("SELECT * FROM prune_runs ORDER BY id").mappings().all()
        return [dict(row) for row in rows]

    def clear_prune_runs(self) -> None:
        """Empty the ledger (between benchmark phases)."""
        with self.engine.begin() as conn:
            conn.exec_driver_sql("DELETE FROM prune_runs")

    def wait_for_runs_to_finish(self, timeout: float, at_least: int = 1, settle: float = 0.0) -> list[dict]:
        """Poll the ledger until it has ``at_least`` runs and none is ``running``; return it.

        ``settle`` waits that long again afterwards and re-reads, for runs that start late.
        """
        deadline = time.monotonic() + timeout
        while True:
            runs = self.prune_runs()
            finished = len(runs) >= at_least and all(r["status"] != "running" for r in runs)
            if finished or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if settle:
            time.sleep(settle)
            return self.wait_for_runs_to_finish(max(0.0, deadline - time.monotonic()), len(runs))
        return runs

    def write_counters(self) -> dict[str, int]:
        """PostgreSQL cluster-wide: transaction ids handed out (one per writing transaction), WAL bytes.

        Both move the moment a write happens (unlike pg_stat_database, which
        backends flush lazily), and reading them writes nothing.
        """
        with self.engine.connect() as conn:
            row = conn.exec_driver_sql(
                "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS transactions, "
                "(pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint AS wal_bytes"
            ).one()
        return {"transactions": row.transactions, "wal_bytes": row.wal_bytes}


def _false(kind: str) -> str:
    return "0" if kind == "sqlite" else "false"


def _upsert_setting(kind: str) -> str:
    marker = "?" if kind == "sqlite" else "%s"
    return (
        f"INSERT INTO settings (key, value) VALUES ({marker}, {marker}) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    )


_SQLITE_LOAD = """
WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < ?1 - 1)
INSERT INTO submissions (name, email, message, user_agent, created_at, legal_hold)
SELECT 'Bench ' || i, 'bench' || i || '@example.com',
       'Benchmark inquiry number ' || i || ', with a sentence or two of ordinary text in it.',
       'bench/1.0',
       strftime('%Y-%m-%d %H:%M:%S', ?2, '+' || (i * ?3) || ' seconds') || '.000000', 0
FROM seq
"""

_POSTGRES_LOAD = """
INSERT INTO submissions (name, email, message, user_agent, created_at, legal_hold)
SELECT 'Bench ' || i, 'bench' || i || '@example.com',
       'Benchmark inquiry number ' || i || ', with a sentence or two of ordinary text in it.',
       'bench/1.0', %s::timestamptz + i * %s * interval '1 second', false
FROM generate_series(0, %s - 1) AS i
"""


def admin_session_token(database: Database, name: str = "Bench admin", hours: float = 12) -> str:
    """Create an admin and a live session row directly; return the cookie's token."""
    import os
    import secrets

    from sqlalchemy.orm import Session

    from app.auth.logins import hash_token
    from app.models import Admin, AdminLogin

    token = secrets.token_hex(32)
    moment = utcnow()
    with Session(database.engine) as session, session.begin():
        admin = Admin(name=f"{name} {secrets.token_hex(3)}", user_handle=os.urandom(64), created_at=moment)
        session.add(admin)
        session.flush()
        session.add(AdminLogin(token_hash=hash_token(token), admin_id=admin.id, browser="bench",
                                 created_at=moment, last_seen_at=moment,
                                 expires_at=moment + timedelta(hours=hours)))
    return token
