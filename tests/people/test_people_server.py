"""A person's export against a real gunicorn server, while the same person is erased.

The client stalls mid-download; the erasure commits meanwhile, whole. When
the client reads on, the server stops the export and drops the connection
before the end of the chunked body: a failed download, never a
complete-looking half.
"""

from __future__ import annotations

import socket

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from app import audit
from app.core.db import make_engine
from app.inquiries import gone
from app.models import Erasure, Inquiry
from app.people import erasure
from devtools.admins import app_for, log_in_to
from devtools.pgcluster import free_port
from devtools.server import running_server
from tests.factories import add_inquiries, inquiry, wall_clock

pytestmark = pytest.mark.slow

ADA = "ada@example.com"
ROWS = 10_000  # about 6.5 MB of JSON: more than the kernel buffers hold (at most 4 MB on loopback)
MESSAGE = "A long enough message to make the export far larger than every socket buffer. " * 8


def open_export(port: int, cookie: str) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(
        (
            f"GET /admin/people/export.json?email={ADA} HTTP/1.1\r\nHost: localhost:{port}\r\n"
            f"Cookie: {cookie}\r\nConnection: close\r\n\r\n"
        ).encode()
    )
    return sock


def read(sock: socket.socket, at_least: int | None = None) -> bytes:
    """At least ``at_least`` bytes, or (None) everything until the server closes."""
    data = b""
    while at_least is None or len(data) < at_least:
        chunk = sock.recv(65536)
        if not chunk:
            assert at_least is None, "the server closed the export early"
            return data
        data += chunk
    return data


def test_an_erasure_during_a_stalled_export_commits_whole_and_the_download_fails(db_kind, database_url, tmp_path):
    engine = make_engine(database_url)
    port = free_port()
    env = {
        "SUNDOWN_DATABASE_URL": database_url,
        "SUNDOWN_SECRET_KEY": "test-secret-key-long-enough-for-production",
        "SUNDOWN_ORIGIN": f"http://localhost:{port}",
        "SUNDOWN_RP_ID": "localhost",
    }
    with Session(engine) as session:
        add_inquiries(session, [inquiry(wall_clock, 1 + i / 10_000, email=ADA, message=MESSAGE) for i in range(ROWS)])
    cookie = log_in_to(env).cookie_header
    try:
        with running_server(env, tmp_path / "server.log", port=port) as (_base_url, _process):
            sock = open_export(port, cookie)
            try:
                head = read(sock, at_least=128 * 1024)
                assert head.startswith(b"HTTP/1.1 200") and b'"format": "sundown.person-export.v1"' in head
                with app_for(env) as app, app.app_context():  # the operator's `flask people erase`
                    outcome = erasure.erase(ADA, audit.OPERATOR)
                    gone.forget_now()
                assert outcome.erased == ROWS
                rest = read(sock)
            finally:
                sock.close()
        body = head + rest
        assert not body.endswith(b"0\r\n\r\n")  # no end of the chunked body: the client sees a failed download
        assert b"\n]}\n" not in body
        with engine.connect() as connection:
            assert connection.execute(sa.select(sa.func.count()).select_from(Inquiry)).scalar() == 0
            assert connection.execute(sa.select(Erasure.count)).scalars().all() == [ROWS]
        assert "PersonChanged" in (tmp_path / "server.log").read_text()
    finally:
        engine.dispose()
