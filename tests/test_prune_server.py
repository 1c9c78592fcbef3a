"""The pruner under real processes: after the response in gunicorn, and killed mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from app import cleanup, retention
from app.cleanup import claim
from app.db import make_engine
from app.models import CleanupRun, Inquiry
from tests.helpers import VALID
from tests.server import ROOT, running_server

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
        "SUNDOWN_SECRET_KEY": "test-secret-key",
        "SUNDOWN_ORIGIN": "http://localhost",
        "SUNDOWN_RP_ID": "localhost",
        "SUNDOWN_DATABASE_URL": database_url,
        "CLEANUP_TEST_MODE": mode,
        "CLEANUP_TEST_DIR": str(directory),
    }


def post_inquiry(base_url: str) -> tuple[int, bytes, int]:
    """POST a JSON inquiry; return status, the whole body and the announced Content-Length."""
    request = urllib.request.Request(
        f"{base_url}/api/inquiries", data=json.dumps(VALID).encode(),
        headers={"Content-Type": "application/json"}, method="POST",
    )
    # A prune run before or during the response would hold it past this timeout.
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
def test_the_client_has_the_whole_response_while_the_prune_is_held(
    database_url, engine, tmp_path, worker_class
):
    env = server_env(database_url, tmp_path, "barrier")
    app_module = "tests.apps.prune_hooks:app"
    with running_server(env, tmp_path / "server.log", app_module, worker_class=worker_class) as (base_url, _):
        status, body, length = post_inquiry(base_url)
        assert (status, json.loads(body), len(body)) == (201, {"ok": True}, length)
        wait_for(lambda: (tmp_path / "blocked").exists(), "the prune to reach the barrier")
        assert statuses(engine) == ["running"]  # the response is complete; the prune is not
        (tmp_path / "release").touch()
        wait_for(lambda: statuses(engine) == ["ok"], "the prune to finish")


def test_a_prune_that_raises_leaves_the_response_a_success(database_url, engine, tmp_path):
    env = server_env(database_url, tmp_path, "raise")
    with running_server(env, tmp_path / "server.log", "tests.apps.prune_hooks:app") as (base_url, _):
        status, body, _length = post_inquiry(base_url)
        assert (status, json.loads(body)) == (201, {"ok": True})
        wait_for(lambda: statuses(engine) == ["error"], "the failed run in the ledger")
    with engine.connect() as connection:
        error = connection.scalar(select(CleanupRun.error))
    assert error == "RuntimeError while deleting from raise"


def add_rows(session, now, ages_in_days, hold=False):
    for age in ages_in_days:
        session.add(Inquiry(name="n", email="e@example.com", message="m",
                               created_at=now - timedelta(days=age), legal_hold=hold))
    session.commit()


def test_a_run_killed_mid_way_keeps_its_batches_and_a_later_run_completes(
    app, db_session, clock, database_url, tmp_path
):
    add_rows(db_session, clock(), [181 + day for day in range(50)])  # expired, oldest last
    add_rows(db_session, clock(), [0, 10, 179])
    add_rows(db_session, clock(), [400, 500], hold=True)
    cutoff = clock() - timedelta(days=180)
    env = {
        **os.environ, "PYTHONPATH": str(ROOT), "SUNDOWN_SECRET_KEY": "k", "SUNDOWN_ORIGIN": "http://localhost",
        "SUNDOWN_RP_ID": "localhost", "SUNDOWN_DATABASE_URL": database_url,
        "CLEANUP_TEST_DIR": str(tmp_path), "CLEANUP_TEST_NOW": clock().isoformat(),
    }
    child = subprocess.Popen([sys.executable, "-m", "tests.apps.prune_crash"], cwd=ROOT, env=env)
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
    assert [run.status for run in db_session.scalars(select(CleanupRun))] == ["running"]
    assert claim.stored(db_session) < 0  # the claim still says "running"

    clock.advance(hours=1)  # the next due run: the claim, not the ledger, decides
    db_session.rollback()
    with app.app_context():
        later = cleanup.run("later")
    assert (later.status, json.loads(later.deleted)["inquiries"]) == ("ok", 30)
    db_session.rollback()
    assert db_session.scalar(select(func.count()).select_from(Inquiry)) == 5
    statuses_now = list(db_session.scalars(select(CleanupRun.status).order_by(CleanupRun.id)))
    assert statuses_now == ["running", "ok"]
