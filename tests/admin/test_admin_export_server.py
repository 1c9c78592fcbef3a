"""The export against a real gunicorn server: a client that stalls or hangs up leaks nothing."""

from __future__ import annotations

import csv
import io
import socket
import sqlite3
import struct
import time
import urllib.request

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.core.db import make_engine
from devtools.admins import log_in_to
from devtools.pgcluster import free_port
from devtools.server import running_server
from tests.factories import add_inquiries, numbered_inquiries, wall_clock

ROWS = 15_000  # about 7 MB of CSV: more than the kernel buffers hold (at most 4 MB on loopback)
MESSAGE = "A long enough message to make the export far larger than every socket buffer. " * 6
READ_BEFORE_STALL = 256 * 1024

pytestmark = pytest.mark.slow


def open_export(port: int, cookie: str) -> socket.socket:
    """Start an export on a raw socket with a small receive buffer; return the socket."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(
        (
            f"GET /admin/export.csv HTTP/1.1\r\nHost: localhost:{port}\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n"
        ).encode()
    )
    return sock


def read_at_least(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the export early"
        data += chunk
    return data


def hang_up(sock: socket.socket) -> None:
    """Close with a reset, as a browser tab that is closed mid-download."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def full_export(base_url: str, cookie: str) -> list[list[str]]:
    request = urllib.request.Request(f"{base_url}/admin/export.csv", headers={"Cookie": cookie})
    with urllib.request.urlopen(request, timeout=60) as response:
        text = response.read().decode("utf-8-sig")
    return list(csv.reader(io.StringIO(text, newline="")))


def open_transactions(engine, db_kind: str) -> int:
    """Transactions the server holds open right now (none should outlive a page)."""
    if db_kind == "postgresql":
        with engine.connect() as conn:
            return conn.execute(
                sa.text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'"
                )
            ).scalar_one()
    # SQLite: after a write, a reader still holding an older snapshot makes a
    # TRUNCATE checkpoint report busy. Plain sqlite3, so no BEGIN wraps the pragma.
    conn = sqlite3.connect(engine.url.database, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout=100")
        # A real change: SQLite skips writing a row whose bytes do not change.
        conn.execute(
            "UPDATE submissions SET user_agent = hex(randomblob(8)) WHERE id = (SELECT min(id) FROM submissions)"
        )
        busy, _log, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return busy
    finally:
        conn.close()


def settled_open_transactions(engine, db_kind: str) -> int:
    """Open transactions once the server settles: a page may be mid-read when we look.

    A page's transaction lasts milliseconds; one held across a yield never ends,
    so polling for a few seconds tells them apart (no assertion on time).
    """
    for _ in range(100):
        count = open_transactions(engine, db_kind)
        if count == 0:
            return 0
        time.sleep(0.05)
    return count


def test_stalled_and_vanished_client_leaks_no_transaction(db_kind, database_url, tmp_path):
    engine = make_engine(database_url)
    port = free_port()
    env = {
        "SUNDOWN_DATABASE_URL": database_url,
        "SUNDOWN_SECRET_KEY": "test-secret-key-long-enough-for-production",
        "SUNDOWN_ORIGIN": f"http://localhost:{port}",
        "SUNDOWN_RP_ID": "localhost",
    }
    with Session(engine) as session:
        add_inquiries(session, numbered_inquiries(wall_clock, ROWS, message=MESSAGE))
    cookie = log_in_to(env).cookie_header
    try:
        with running_server(env, tmp_path / "server.log", port=port) as (base_url, _process):
            sock = open_export(port, cookie)
            try:
                head = read_at_least(sock, READ_BEFORE_STALL)
                assert head.startswith(b"HTTP/1.1 200") and b"\xef\xbb\xbfid,received_utc" in head
                # The client stops reading: the server blocks on a full socket, between pages.
                assert settled_open_transactions(engine, db_kind) == 0
            finally:
                hang_up(sock)

            with urllib.request.urlopen(f"{base_url}/healthz", timeout=10) as health:
                assert health.status == 200
            rows = full_export(base_url, cookie)
            assert len(rows) == ROWS + 1
            assert settled_open_transactions(engine, db_kind) == 0
        assert "Traceback" not in (tmp_path / "server.log").read_text()
    finally:
        engine.dispose()
