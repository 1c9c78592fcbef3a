"""Benchmark databases: make one, fill it with realistic rows, copy it, read its ledger.

Raw SQL lives here on purpose: bulk loading, copies and server statistics are
not app code, and each database has its own fastest way to do them. Rows come
from ``devtools.realistic`` (200–5000-character messages, ~5% held among the
expired rows, 10% out of ``created_at`` order), in the same order on both
databases for the same seed.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import sqlalchemy as sa

from app.core.db import WRITE_OPTION, make_engine
from app.core.migrate import upgrade
from app.models import Form, InboundMessage, Inquiry
from devtools.realistic import Rows, expired_span

COLUMNS = ("name", "email", "message", "user_agent", "created_at", "legal_hold")
RECENT_DAYS = (100, 1)  # rows kept by the default retention of 180 days
STASH = "bench_stash"  # a copy of rows to put back between rounds (not part of the app's schema)


def epoch_ms(moment: datetime) -> int:
    """Milliseconds since the Unix epoch, as the claim stores them."""
    return int(moment.timestamp() * 1000)


def epoch_of(value) -> float:
    """Epoch seconds of a ledger timestamp (SQLite returns naive UTC text, PostgreSQL aware datetimes)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def utcnow() -> datetime:
    """The wall clock (benchmarks run against real time)."""
    return datetime.now(UTC)


def realistic_rows(expired: int, recent: int = 0, seed: int = 1) -> Iterator[dict]:
    """``expired`` rows past the default retention (~5% held), then ``recent`` rows within it."""
    rows = Rows(seed)
    now = utcnow()
    yield from rows.inquiries(expired, *expired_span(now))
    newest = now - timedelta(days=RECENT_DAYS[1])
    yield from rows.inquiries(recent, now - timedelta(days=RECENT_DAYS[0]), newest, holds=False)


class Database:
    """One migrated database of ``kind`` ("sqlite" or "postgresql") at ``url``.

    ``admin_url`` (PostgreSQL) reaches the cluster's maintenance database, for copies.
    """

    def __init__(self, kind: str, url: str, admin_url: str | None = None):
        self.kind = kind
        self.url = url
        self.admin_url = admin_url
        self.engine = make_engine(url)

    @classmethod
    def sqlite(cls, directory: Path, name: str) -> Database:
        """A fresh migrated SQLite file."""
        _remove_sqlite_files(directory / f"{name}.db")
        database = cls("sqlite", f"sqlite:///{directory / f'{name}.db'}")
        upgrade(database.engine)
        return database

    @classmethod
    def postgresql(cls, cluster, name: str) -> Database:
        """A fresh migrated database on ``cluster``."""
        admin_url = cluster.url("postgres")
        _admin_sql(admin_url, f"DROP DATABASE IF EXISTS {name}", f"CREATE DATABASE {name}")
        database = cls("postgresql", cluster.url(name), admin_url)
        upgrade(database.engine)
        return database

    @classmethod
    def existing_sqlite(cls, directory: Path, name: str) -> Database | None:
        """The SQLite file ``name`` in ``directory`` if it is there, else None."""
        path = directory / f"{name}.db"
        return cls("sqlite", f"sqlite:///{path}") if path.exists() else None

    @classmethod
    def existing_postgresql(cls, cluster, name: str) -> Database | None:
        """The database ``name`` on ``cluster`` if it is there, else None."""
        admin_url = cluster.url("postgres")
        if name not in _database_names(admin_url):
            return None
        return cls("postgresql", cluster.url(name), admin_url)

    def rename(self, name: str) -> Database:
        """This database under ``name`` (a file move; on PostgreSQL ``ALTER DATABASE ... RENAME``)."""
        self.dispose()
        if self.kind == "sqlite":
            target = Path(self.path).with_name(f"{name}.db")
            Path(self.path).replace(target)
            return Database("sqlite", f"sqlite:///{target}")
        _admin_sql(self.admin_url, f"ALTER DATABASE {self.name} RENAME TO {name}")
        return Database("postgresql", self.url.rsplit("/", 1)[0] + f"/{name}", self.admin_url)

    def drop_stale_templates(self, prefix: str) -> None:
        """Remove the other databases beside this one whose names start with ``prefix`` (older templates)."""
        if self.kind == "sqlite":
            for path in Path(self.path).parent.glob(f"{prefix}*.db"):
                if str(path) != self.path:
                    _remove_sqlite_files(path)
            return
        stale = [n for n in _database_names(self.admin_url) if n.startswith(prefix) and n != self.name]
        _admin_sql(self.admin_url, *(f"DROP DATABASE IF EXISTS {n}" for n in stale))

    @property
    def path(self) -> str:
        """The SQLite file path."""
        return self.url.removeprefix("sqlite:///")

    @property
    def name(self) -> str:
        """The PostgreSQL database name (or the SQLite file's stem)."""
        return self.url.rsplit("/", 1)[1].removesuffix(".db")

    def dispose(self) -> None:
        """Close pooled connections."""
        self.engine.dispose()

    # --- loading and copying -------------------------------------------------

    def load_rows(self, rows: Iterator[dict], table: str = "submissions") -> float:
        """Insert ``rows`` (realistic dicts) into ``table``; return seconds."""
        started = time.perf_counter()
        if self.kind == "sqlite":
            self._insert_sqlite(rows, table)
        else:
            self.copy_postgresql(rows, table)
        self.settle()
        return time.perf_counter() - started

    def _insert_sqlite(self, rows: Iterator[dict], table: str) -> None:
        statement = f"INSERT INTO {table} ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
        values = (
            (
                r["name"],
                r["email"],
                r["message"],
                r["user_agent"],
                r["created_at"].strftime("%Y-%m-%d %H:%M:%S.%f"),
                int(r["legal_hold"]),
            )
            for r in rows
        )
        with self.engine.begin() as conn:
            conn.connection.driver_connection.executemany(statement, values)

    def copy_postgresql(self, rows: Iterator[dict], table: str, columns: tuple[str, ...] = COLUMNS) -> None:
        """PostgreSQL: ``rows`` into ``table`` (``columns`` of each) with one ``COPY``."""
        raw = self.engine.raw_connection()
        try:
            with raw.driver_connection.cursor() as cursor:
                with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                    for r in rows:
                        copy.write_row(tuple(r[column] for column in columns))
            raw.commit()
        finally:
            raw.close()

    def settle(self) -> None:
        """After a bulk change: SQLite folds its WAL into the file, PostgreSQL vacuums and analyzes."""
        if self.kind == "sqlite":
            with self.engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            return
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE")

    def copy(self, name: str) -> Database:
        """An identical copy named ``name`` (a file copy; on PostgreSQL a template copy)."""
        self.dispose()
        if self.kind == "sqlite":
            target = Path(self.path).with_name(f"{name}.db")
            _remove_sqlite_files(target)
            shutil.copyfile(self.path, target)
            return Database("sqlite", f"sqlite:///{target}")
        _admin_sql(self.admin_url, f"DROP DATABASE IF EXISTS {name}", f"CREATE DATABASE {name} TEMPLATE {self.name}")
        return Database("postgresql", self.url.rsplit("/", 1)[0] + f"/{name}", self.admin_url)

    def drop(self) -> None:
        """Remove this database (copies of a million realistic rows take gigabytes)."""
        self.dispose()
        if self.kind == "sqlite":
            _remove_sqlite_files(Path(self.path))
        else:
            _admin_sql(self.admin_url, f"DROP DATABASE IF EXISTS {self.name}")

    def make_stash(self, rows: Iterator[dict]) -> None:
        """Keep ``rows`` aside in a table of the same columns, to put back with ``restore_stash``."""
        with self.engine.begin() as conn:
            conn.exec_driver_sql(f"CREATE TABLE {STASH} AS SELECT {', '.join(COLUMNS)} FROM submissions WHERE 1 = 0")
        self.load_rows(rows, STASH)

    def restore_stash(self) -> None:
        """Insert the stashed rows into ``submissions`` again (new ids), then settle."""
        columns = ", ".join(COLUMNS)
        with self.engine.begin() as conn:
            conn.exec_driver_sql(f"INSERT INTO submissions ({columns}) SELECT {columns} FROM {STASH}")
        self.settle()

    def add_forms(self, retentions: dict[str, int | None]) -> dict[str, int]:
        """Forms after Contact (migration 0009's, id 1), each with Contact's fields and its retention in days
        (``None``: the site's), Contact's own from ``retentions["contact"]`` if given; return {slug: id}."""
        table = Form.__table__
        with self.engine.begin() as conn:
            fields = conn.execute(sa.select(table.c.fields).where(table.c.id == 1)).scalar_one()
            now = utcnow()
            conn.execute(
                table.insert(),
                [
                    {
                        "slug": slug,
                        "title": {"en": slug.replace("-", " ").title()},
                        "description": {},
                        "fields": fields,
                        "email_field": "email",
                        "enabled": True,
                        "retention_days": days,
                        "created_at": now,
                        "updated_at": now,
                    }
                    for slug, days in retentions.items()
                    if slug != "contact"
                ],
            )
            if "contact" in retentions:
                conn.execute(table.update().where(table.c.id == 1).values(retention_days=retentions["contact"]))
            return dict(conn.execute(sa.select(table.c.slug, table.c.id)).all())

    def spread_over_forms(self, forms: list[int]) -> None:
        """Give the inquiries the ``forms`` in turn by id (``id % len(forms)``), then settle."""
        table = Inquiry.__table__
        choice = sa.case({i: form for i, form in enumerate(forms)}, value=table.c.id % len(forms))
        with self.engine.begin() as conn:
            conn.execute(table.update().values(form_id=choice))
        self.settle()

    def add_threads(self, per_inquiry: int) -> None:
        """Give every inquiry ``per_inquiry`` answers in its thread (``inbound_messages``, its own text as
        their body, received with it), then settle: the cleanup deletes them with their inquiry."""
        table, messages = Inquiry.__table__, InboundMessage.__table__
        columns = ["inquiry_id", "state", "kind", "sender", "sender_name", "subject", "body", "files_refused"]
        with self.engine.begin() as conn:
            for number in range(per_inquiry):
                rows = sa.select(
                    table.c.id,
                    sa.literal("thread"),
                    sa.literal("message"),
                    table.c.email,
                    sa.literal(""),
                    sa.literal(f"Re: Contact ({number + 1})"),
                    table.c.message,
                    sa.literal(0),
                    table.c.created_at,
                )
                conn.execute(messages.insert().from_select([*columns, "received_at"], rows))
        self.settle()

    # --- reading and setting -------------------------------------------------

    def count(self, table: str = "submissions") -> int:
        """Rows in ``table``."""
        with self.engine.connect() as conn:
            return conn.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar_one()

    def plain_delete(self, cutoff: datetime) -> tuple[int, float]:
        """One ``DELETE`` of every expired, non-held inquiry; return (rows, seconds)."""
        value = cutoff.strftime("%Y-%m-%d %H:%M:%S.%f") if self.kind == "sqlite" else cutoff
        marker = "?" if self.kind == "sqlite" else "%s"
        false = "0" if self.kind == "sqlite" else "false"
        started = time.perf_counter()
        # As a live writer takes SQLite's write lock (up front, polled finely): with the stock busy
        # handler the one DELETE could be starved by the submissions it competes with.
        with self.engine.connect().execution_options(**{WRITE_OPTION: True}) as conn, conn.begin():
            deleted = conn.exec_driver_sql(
                f"DELETE FROM submissions WHERE legal_hold = {false} AND created_at < {marker}", (value,)
            ).rowcount
        return deleted, time.perf_counter() - started

    def set_setting(self, key: str, value: str) -> None:
        """Store one ``settings`` row, creating it if needed."""
        marker = "?" if self.kind == "sqlite" else "%s"
        with self.engine.begin() as conn:
            conn.exec_driver_sql(
                f"INSERT INTO settings (key, value) VALUES ({marker}, {marker}) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def set_last_cleanup(self, moment: datetime) -> None:
        """Store the claim's last run time (epoch ms): due ``CLEANUP_INTERVAL`` after ``moment``."""
        self.set_setting("last_cleanup_at", str(epoch_ms(moment)))

    def cleanup_runs(self) -> list[dict]:
        """The ledger (table ``cleanup_runs``), oldest first."""
        with self.engine.connect() as conn:
            rows = conn.exec_driver_sql("SELECT * FROM cleanup_runs ORDER BY id").mappings().all()
        return [dict(row) for row in rows]

    def wait_for_runs(self, timeout: float, at_least: int = 1, settle: float = 0.0) -> list[dict]:
        """Poll the ledger until it has ``at_least`` runs and none is ``running``; return it.

        ``settle`` waits that long again afterwards and re-reads, for runs that start late.
        """
        deadline = time.monotonic() + timeout
        while True:
            runs = self.cleanup_runs()
            finished = len(runs) >= at_least and all(r["status"] != "running" for r in runs)
            if finished or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if settle:
            time.sleep(settle)
            return self.wait_for_runs(max(0.0, deadline - time.monotonic()), len(runs))
        return runs


def _remove_sqlite_files(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _database_names(admin_url: str) -> list[str]:
    admin = sa.create_engine(admin_url)
    try:
        with admin.connect() as conn:
            return list(conn.exec_driver_sql("SELECT datname FROM pg_database").scalars())
    finally:
        admin.dispose()


def _admin_sql(admin_url: str, *statements: str) -> None:
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            for statement in statements:
                conn.exec_driver_sql(statement)
    finally:
        admin.dispose()
