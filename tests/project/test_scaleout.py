"""Scale-out with real processes: several gunicorn workers (and servers) on one database.

PostgreSQL: two servers on two loopback ports, 3 gthread workers each.
SQLite: one server with 3 workers. On each, 500 submissions arrive at once at
the moment the claim is due (the workers are fresh, so none has learned a due
time yet); then the shared rate limit and a login are checked on every
server. The servers are stopped gracefully before the ledger is read, so any
after-response work still in flight has ended by then.
"""

from __future__ import annotations

import http.client
from contextlib import ExitStack, contextmanager
from datetime import timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.core.db import WRITE_OPTION, make_engine
from app.models import CleanupRun, Inquiry, Setting
from bench.client import burst_submissions, port_of
from devtools.admins import log_in_to
from devtools.server import running_server
from tests.conftest import new_database_url
from tests.factories import add_inquiries, inquiry, wall_clock

pytestmark = pytest.mark.slow

BURST = 500
EXTRA = 40
# One window of about 30 years, so no window boundary falls inside the test.
LIMIT = BURST + EXTRA // 2
EXPIRED_ROWS = 30


def _env(url: str) -> dict[str, str]:
    return {
        "SUNDOWN_ENV": "production",
        "SUNDOWN_SECRET_KEY": "scale-out-secret-key-long-enough-for-it",
        "SUNDOWN_DATABASE_URL": url,
        "SUNDOWN_ORIGIN": "http://localhost",
        "SUNDOWN_RP_ID": "localhost",
        "SUNDOWN_SUBMIT_RATE_LIMITS": f"{LIMIT}/1000000000",
        "SUNDOWN_SUBMIT_GLOBAL_RATE_LIMITS": "1000000/60",
    }


def _arrange(engine, url: str) -> str:
    """Expired inquiries and an admin with a live login; the login's ``Cookie`` header."""
    old = inquiry(wall_clock, days_old=400, name="Old", email="old@example.com", message="old")
    with Session(engine) as session:
        add_inquiries(session, [old] * EXPIRED_ROWS)
    return log_in_to(_env(url)).cookie_header


def _make_due(engine) -> None:
    two_hours_ago = int((wall_clock() - timedelta(hours=2)).timestamp() * 1000)
    with Session(engine) as session, session.begin():
        # SQLite: the write lock first, as the app's writers take it; a read that
        # later wants to write fails at once if a server wrote in between.
        session.connection(execution_options={WRITE_OPTION: True})
        session.merge(Setting(key="last_cleanup_at", value=str(two_hours_ago)))


def _get(port: int, path: str, cookie: str | None = None) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Host": "localhost", **({"Cookie": cookie} if cookie else {})}
    connection.request("GET", path, headers=headers)
    status = connection.getresponse().status
    connection.close()
    return status


@pytest.fixture(scope="module", params=["postgresql", "sqlite"])
def scaled_out(request, tmp_path_factory):
    """Start the servers, fire the burst, then probe limits and logins; results after a graceful stop."""
    kind = request.param
    tmp = tmp_path_factory.mktemp(f"scaleout-{kind}")
    url = new_database_url(kind, request, tmp)
    engine = make_engine(url)
    cookie = _arrange(engine, url)
    servers = 2 if kind == "postgresql" else 1
    results = {"kind": kind}
    with _servers(url, tmp, servers) as ports:
        _make_due(engine)
        results["burst"] = burst_submissions(ports, BURST)
        results["extra"] = [burst_submissions([ports[i % len(ports)]], 1)[0] for i in range(EXTRA)]
        results["with_cookie"] = [_get(port, "/admin/retention", cookie) for port in ports for _ in range(6)]
        results["without_cookie"] = [_get(port, "/admin/retention") for port in ports]
    with Session(engine) as session:
        results["runs"] = session.scalars(sa.select(CleanupRun)).all()
        results["expired_left"] = session.scalar(sa.select(sa.func.count()).where(Inquiry.name == "Old"))
    engine.dispose()
    return results


@contextmanager
def _servers(url: str, tmp, count: int):
    """``count`` gunicorn servers with 3 gthread workers each, on one database; yields their ports."""
    with ExitStack() as stack:
        yield [
            port_of(stack.enter_context(running_server(_env(url), tmp / f"server-{i}.log", workers=3, threads=4))[0])
            for i in range(count)
        ]


def test_concurrent_requests_at_the_due_moment_start_exactly_one_cleanup_run(scaled_out):
    runs = scaled_out["runs"]
    assert len(runs) == 1, [(r.trigger, r.status) for r in runs]
    assert runs[0].status == "ok"
    assert scaled_out["expired_left"] == 0


def test_no_concurrent_request_gets_an_error(scaled_out):
    assert sorted(set(scaled_out["burst"])) == [201]


def test_rate_limit_is_shared_by_every_worker_and_server(scaled_out):
    extra = scaled_out["extra"]
    assert extra.count(201) == LIMIT - BURST
    assert extra.count(429) == EXTRA - (LIMIT - BURST)


def test_login_created_once_works_on_every_server_and_worker(scaled_out):
    assert set(scaled_out["with_cookie"]) == {200}
    assert all(status in (302, 303) for status in scaled_out["without_cookie"])
