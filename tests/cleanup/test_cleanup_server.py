"""The cleanup under real processes: after the response in gunicorn, and killed mid-run."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from app import cleanup
from app.cleanup import claim
from app.core.db import make_engine
from app.models import CleanupRun, Inquiry
from devtools.pgcluster import free_port
from devtools.server import ROOT, running_server
from tests.conftest import require
from tests.helpers import VALID

pytestmark = pytest.mark.slow

WAIT = 60  # seconds before a wait gives up (a failure, never a timing assertion)


def wait_for(condition, what: str):
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.05)
    pytest.fail(f"gave up waiting for {what}")


def server_env(database_url: str, directory: Path, mode: str) -> dict[str, str]:
    return {
        "SUNDOWN_SECRET_KEY": "test-secret-key-long-enough-for-production",
        "SUNDOWN_ORIGIN": "http://localhost",
        "SUNDOWN_RP_ID": "localhost",
        "SUNDOWN_DATABASE_URL": database_url,
        "CLEANUP_TEST_MODE": mode,
        "CLEANUP_TEST_DIR": str(directory),
    }


def post_inquiry(base_url: str) -> tuple[int, bytes, int]:
    """POST a JSON inquiry; return status, the whole body and the announced Content-Length."""
    request = urllib.request.Request(
        f"{base_url}/api/inquiries",
        data=json.dumps(VALID).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    # A cleanup run before or during the response would hold it past this timeout.
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.read(), int(response.headers["Content-Length"])


def statuses(engine) -> list[str]:
    with engine.connect() as connection:
        return list(connection.scalars(select(CleanupRun.status).order_by(CleanupRun.id)))


@pytest.fixture
def engine(database_url):
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


@pytest.mark.parametrize("worker_class", ["gthread", "sync"])
def test_the_client_has_the_whole_response_while_the_cleanup_is_held(database_url, engine, tmp_path, worker_class):
    env = server_env(database_url, tmp_path, "barrier")
    app_module = "tests.apps.cleanup_hooks:app"
    threads = 1 if worker_class == "sync" else 4  # gunicorn runs gthread for sync with threads > 1
    with running_server(env, tmp_path / "server.log", app_module, worker_class=worker_class, threads=threads) as (
        base_url,
        _,
    ):
        status, body, length = post_inquiry(base_url)
        assert (status, json.loads(body), len(body)) == (201, {"ok": True}, length)
        wait_for(lambda: (tmp_path / "blocked").exists(), "the cleanup to reach the barrier")
        assert statuses(engine) == ["running"]  # the response is complete; the cleanup is not
        (tmp_path / "release").touch()
        wait_for(lambda: statuses(engine) == ["ok"], "the cleanup to finish")


def test_a_cleanup_that_raises_leaves_the_response_a_success(database_url, engine, tmp_path):
    env = server_env(database_url, tmp_path, "raise")
    with running_server(env, tmp_path / "server.log", "tests.apps.cleanup_hooks:app") as (base_url, _):
        status, body, _length = post_inquiry(base_url)
        assert (status, json.loads(body)) == (201, {"ok": True})
        wait_for(lambda: statuses(engine) == ["error"], "the failed run in the ledger")
    with engine.connect() as connection:
        error = connection.scalar(select(CleanupRun.error))
    assert error == "RuntimeError while deleting from raise"


def add_rows(session, now, ages_in_days, hold=False):
    for age in ages_in_days:
        session.add(
            Inquiry(name="n", email="e@example.com", message="m", created_at=now - timedelta(days=age), legal_hold=hold)
        )
    session.commit()


def test_a_run_killed_mid_way_keeps_its_batches_and_a_later_run_completes(
    app, db_session, clock, database_url, tmp_path
):
    add_rows(db_session, clock(), [181 + day for day in range(50)])  # expired, oldest last
    add_rows(db_session, clock(), [0, 10, 179])
    add_rows(db_session, clock(), [400, 500], hold=True)
    cutoff = clock() - timedelta(days=180)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SUNDOWN_SECRET_KEY": "k" * 32,
        "SUNDOWN_ORIGIN": "http://localhost",
        "SUNDOWN_RP_ID": "localhost",
        "SUNDOWN_DATABASE_URL": database_url,
        "CLEANUP_TEST_DIR": str(tmp_path),
        "CLEANUP_TEST_NOW": clock().isoformat(),
    }
    child = subprocess.Popen([sys.executable, "-m", "tests.apps.cleanup_crash"], cwd=ROOT, env=env)
    try:
        wait_for(lambda: (tmp_path / "blocked").exists() or child.poll() is not None, "the run to be held")
        assert child.poll() is None, "the crashing run ended on its own"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()

    db_session.rollback()
    survivors = list(db_session.execute(select(Inquiry.created_at, Inquiry.legal_hold)))
    expired_left = sorted(created for created, held in survivors if created < cutoff and not held)
    assert len(expired_left) == 30  # two batches of ten committed and stay deleted
    assert expired_left[0] == clock() - timedelta(days=210)  # the oldest twenty went first
    assert sum(created >= cutoff for created, _ in survivors) == 3  # nothing newer was touched
    assert sum(held for _, held in survivors) == 2
    [crashed] = db_session.scalars(select(CleanupRun))
    assert crashed.status == "running"
    assert json.loads(crashed.deleted)["inquiries"] == 20  # counted as each batch committed
    assert claim.stored(db_session) < 0  # the claim still says "running"

    clock.advance(hours=1)  # the next due run: the claim, not the ledger, decides
    db_session.rollback()
    with app.app_context():
        later = cleanup.run("later")
    assert (later.status, json.loads(later.deleted)["inquiries"]) == ("ok", 30)
    db_session.rollback()
    assert db_session.scalar(select(func.count()).select_from(Inquiry)) == 5
    statuses_now = list(db_session.scalars(select(CleanupRun.status).order_by(CleanupRun.id)))
    assert statuses_now == ["abandoned", "ok"]  # closed by the claim that took over


# --- Off the connection: the runner, keep-alive, a proxy, a graceful stop ------------------


def request_on(connection: http.client.HTTPConnection, method: str, path: str, body: dict | None = None):
    """One request on ``connection`` (kept alive); returns status and body."""
    headers = {"Content-Type": "application/json"} if body is not None else {}
    connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    response = connection.getresponse()
    return response.status, response.read()


def port_of(base_url: str) -> int:
    return int(base_url.rsplit(":", 1)[1])


def test_the_next_request_on_the_claiming_keep_alive_connection_is_served_while_the_run_is_held(
    database_url, engine, tmp_path
):
    env = server_env(database_url, tmp_path, "barrier")
    with running_server(env, tmp_path / "server.log", "tests.apps.cleanup_hooks:app") as (base_url, _):
        connection = http.client.HTTPConnection("127.0.0.1", port_of(base_url), timeout=20)
        try:
            assert request_on(connection, "POST", "/api/inquiries", VALID)[0] == 201
            wait_for(lambda: (tmp_path / "blocked").exists(), "the run to reach the barrier")
            # Before the runner, this request waited for the run (up to its whole time budget).
            assert request_on(connection, "GET", "/thanks")[0] == 200
            assert request_on(connection, "POST", "/api/inquiries", VALID)[0] == 201
            assert statuses(engine) == ["running"]  # both answered while the run is still held
        finally:
            connection.close()
        (tmp_path / "release").touch()
        wait_for(lambda: statuses(engine) == ["ok"], "the run to finish")


def test_a_sync_worker_serves_the_next_connection_while_its_run_is_held(database_url, engine, tmp_path):
    env = server_env(database_url, tmp_path, "barrier")
    app_module = "tests.apps.cleanup_hooks:app"
    # threads=1: with more threads, gunicorn quietly runs gthread instead of sync.
    with running_server(env, tmp_path / "server.log", app_module, worker_class="sync", threads=1) as (base_url, _):
        assert post_inquiry(base_url)[0] == 201
        wait_for(lambda: (tmp_path / "blocked").exists(), "the run to reach the barrier")
        assert post_inquiry(base_url)[0] == 201  # the one sync worker is free again
        assert statuses(engine) == ["running"]
        (tmp_path / "release").touch()
        wait_for(lambda: statuses(engine) == ["ok"], "the run to finish")


@pytest.fixture
def caddy(tmp_path):
    """Start Caddy (reverse proxy with upstream keep-alive, its default) for ``upstream_port``."""
    binary = shutil.which("caddy")
    require(binary is not None, "Caddy is missing (apt-get install caddy)")
    started = []

    def start(upstream_port: int) -> str:
        port = free_port()
        caddyfile = tmp_path / "Caddyfile"
        caddyfile.write_text(
            "{\n  admin off\n  auto_https off\n  default_bind 127.0.0.1\n}\n"
            f"http://127.0.0.1:{port} {{\n  reverse_proxy 127.0.0.1:{upstream_port}\n}}\n"
        )
        home = tmp_path / "caddy-home"
        home.mkdir(exist_ok=True)
        env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home), "XDG_CONFIG_HOME": str(home)}
        with open(tmp_path / "caddy.log", "ab") as log:
            process = subprocess.Popen(
                [binary, "run", "--config", str(caddyfile), "--adapter", "caddyfile"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        started.append(process)
        wait_for(lambda: process.poll() is not None or _listening(port), "Caddy to listen")
        assert process.poll() is None, (tmp_path / "caddy.log").read_text()
        return f"http://127.0.0.1:{port}"

    yield start
    for process in started:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_requests_through_caddy_are_served_while_the_run_is_held(database_url, engine, tmp_path, caddy):
    env = server_env(database_url, tmp_path, "barrier")
    with running_server(env, tmp_path / "server.log", "tests.apps.cleanup_hooks:app") as (base_url, _):
        proxy = caddy(port_of(base_url))
        assert post_inquiry(proxy)[0] == 201
        wait_for(lambda: (tmp_path / "blocked").exists(), "the run to reach the barrier")
        # Caddy keeps its upstream connection alive and sends strangers' requests on it.
        for _ in range(5):
            with urllib.request.urlopen(f"{proxy}/thanks", timeout=20) as response:
                assert response.status == 200
        assert statuses(engine) == ["running"]
        (tmp_path / "release").touch()
        wait_for(lambda: statuses(engine) == ["ok"], "the run to finish")


def test_sigterm_during_a_held_run_stops_it_after_its_batch_as_partial_and_releases_the_claim(
    database_url, engine, tmp_path
):
    old = datetime.now(UTC) - timedelta(days=400)
    with engine.begin() as connection:
        connection.execute(insert(Inquiry), [dict(VALID, created_at=old) for _ in range(30)])
    env = server_env(database_url, tmp_path, "barrier")
    graceful = 15
    args = ("--graceful-timeout", str(graceful))
    with running_server(env, tmp_path / "server.log", "tests.apps.cleanup_hooks:app", extra_args=args) as (
        base_url,
        process,
    ):
        assert post_inquiry(base_url)[0] == 201
        wait_for(lambda: (tmp_path / "blocked").exists(), "the run to reach the barrier")
        stopped_at = time.monotonic()
        process.send_signal(signal.SIGTERM)  # gunicorn's graceful stop, as on a deploy
        process.wait(timeout=graceful + 10)
        assert time.monotonic() - stopped_at < graceful  # ended by itself, not killed at the timeout
    assert (tmp_path / "stopping").exists()  # the run heard the stop while it was held
    with engine.connect() as connection:
        row = connection.execute(select(CleanupRun.status, CleanupRun.remaining, CleanupRun.finished_at)).one()
        stored = claim.stored(Session(bind=connection))
    assert (row.status, row.remaining) == ("partial", 30)
    assert stored is not None and stored > 0  # released, not left to the lease
    assert stored + 3_600_000 <= int(row.finished_at.timestamp() * 1000)  # due again at once
