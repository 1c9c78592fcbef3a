"""End-to-end harness: a real gunicorn server and the system Chromium.

Each test module gets its own server on a fresh database (SQLite, and
PostgreSQL when the session's throwaway cluster is available), migrated by the
operator's own ``flask db-upgrade``. Each test gets a new browser context and
page with a CDP virtual authenticator. Console errors, uncaught page errors
and CSP violations fail the test. Screenshots of interesting steps go to
``artifacts/e2e/<test>/``; a failing test also keeps the server log there.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask

from app import create_app
from app.auth import invites
from app.core import db
from app.core.db import get_session, make_engine
from devtools.admins import site_settings
from devtools.pgcluster import free_port
from devtools.server import ROOT, running_server
from tests.conftest import require

CHROMIUM = Path(os.environ.get("SUNDOWN_TEST_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ARTIFACTS = ROOT / "artifacts" / "e2e"
GENEROUS_LIMITS = {
    "SUNDOWN_SUBMIT_RATE_LIMITS": "10000/60,100000/86400",
    "SUNDOWN_SUBMIT_GLOBAL_RATE_LIMITS": "10000/60,100000/86400",
    "SUNDOWN_NOTIFY_HOURLY_CAP": "100000",
    "SUNDOWN_AUTH_RATE_LIMIT_PER_CLIENT": "10000/600",
    "SUNDOWN_AUTH_RATE_LIMIT_GLOBAL": "100000/600",
}
_databases = itertools.count()
TIMEOUT_MS = 10_000  # generous: two cores are shared with everything else under test


@pytest.fixture(scope="session", autouse=True)
def chromium_ready():
    """Skip (fail under CI=true) before any server starts when Chromium is missing.

    Also gives ``expect`` the same patience as actions.
    """
    require(CHROMIUM.exists(), f"Chromium is missing at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)


def pytest_collection_modifyitems(items):
    """Mark every test under tests/e2e as ``e2e``."""
    for item in items:
        if "/e2e/" in str(item.path):
            item.add_marker(pytest.mark.e2e)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Remember each phase's report on the item, so fixtures can see failures."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)


# --- The server -------------------------------------------------------------


@dataclass
class Server:
    """A running Sundown: its URL, environment, database and log."""

    base_url: str
    env: dict[str, str]
    database_url: str
    log: Path
    engine: sa.Engine = field(repr=False)
    _app: Flask | None = field(default=None, repr=False)

    def flask(self, *args: str) -> str:
        """Run ``flask --app wsgi ARGS`` as the operator would, with the server's settings."""
        return run_flask(self.env, *args)

    def invite_link(self, name: str, *extra: str) -> str:
        """``flask admin invite NAME``: the enrollment link it prints."""
        output = self.flask("admin", "invite", name, *extra)
        match = re.search(re.escape(self.base_url) + r"/auth/enroll/\S+", output)
        assert match, f"no enrollment link in the invite output:\n{output}"
        return match.group(0)

    def quick_invite_link(self, name: str) -> str:
        """The same link as ``invite_link``, made in this process: no CLI start-up per test."""
        with self.app().app_context():
            session = get_session()
            link = invites.create(session, name)
            session.commit()
        return link

    def app(self):
        """This server's app built in the test process (once), for arranging data."""
        if self._app is None:
            self._app = create_app(site_settings(self.env))
        return self._app

    def close(self) -> None:
        """Release the test process's connections to the database."""
        if self._app is not None:
            db.engine_of(self._app).dispose()
        self.engine.dispose()


def run_flask(env: dict[str, str], *args: str) -> str:
    """Run a Flask CLI command in a subprocess; its output, or fail with it."""
    result = subprocess.run(
        [sys.executable, "-m", "flask", "--app", "wsgi", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, (
        f"flask {' '.join(args)} exited with {result.returncode}:\n{result.stdout}\n{result.stderr}"
    )
    return result.stdout + result.stderr


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def server(request, tmp_path_factory):
    """A gunicorn server on a fresh, CLI-migrated database, for one test module.

    A module may set ``SERVER_ENV = {...}`` to add or change ``SUNDOWN_*`` settings.
    """
    workdir = tmp_path_factory.mktemp(f"e2e-{request.param}")
    database_url, drop = _fresh_database(request, workdir)
    port = free_port()
    env = {
        "SUNDOWN_ENV": "production",
        "SUNDOWN_DATABASE_URL": database_url,
        "SUNDOWN_SECRET_KEY": secrets.token_hex(32),
        "SUNDOWN_ORIGIN": f"http://localhost:{port}",
        "SUNDOWN_RP_ID": "localhost",
        **GENEROUS_LIMITS,
        **getattr(request.module, "SERVER_ENV", {}),
    }
    log = workdir / "server.log"
    server = None
    try:
        run_flask(env, "db-upgrade")
        with running_server(env, log, port=port) as (base_url, _process):
            assert_healthy(base_url)
            server = Server(base_url, env, database_url, log, make_engine(database_url))
            first_cleanup_ended(server.engine)
            yield server
    finally:
        if server is not None:
            server.close()
        drop()


def assert_healthy(base_url: str) -> None:
    """``/healthz`` says 200: the database answers and the CLI migrated it to head."""
    with urllib.request.urlopen(f"{base_url}/healthz", timeout=10) as response:
        assert response.status == 200
        assert json.load(response)["ok"] is True


def first_cleanup_ended(engine, limit: float = 60.0) -> None:
    """Wait for the cleanup run that ``/healthz``, the server's first request, claims after its response:
    arranging rows in the database while it runs raced it for SQLite's write lock."""
    deadline = time.monotonic() + limit
    finished = sa.text("SELECT count(*) FROM cleanup_runs WHERE status <> 'running'")
    while time.monotonic() < deadline:
        with engine.connect() as connection:
            if connection.scalar(finished):
                return
        time.sleep(0.1)
    raise AssertionError(f"the first cleanup run did not end within {limit:.0f} s")


def _fresh_database(request, workdir: Path):
    """An empty database URL of the requested kind, and how to drop it."""
    if request.param == "sqlite":
        return f"sqlite:///{workdir / 'sundown.db'}", lambda: None
    server = request.getfixturevalue("postgres_server")
    name = f"sundown_e2e_{os.getpid()}_{next(_databases)}"
    admin = sa.create_engine(f"{server}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")

    def drop():
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.dispose()

    return f"{server}/{name}", drop


# --- The browser ------------------------------------------------------------


@pytest.fixture(scope="package")
def browser():
    """One system Chromium for all end-to-end tests.

    Package-scoped, not session-scoped: Playwright's sync API keeps an asyncio
    loop running in this thread until it stops, and later tests call ``asyncio.run``.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


class PageProblems:
    """Console errors, uncaught page errors and CSP violations seen in a test's pages."""

    def __init__(self):
        self.seen: list[str] = []
        self.allowed: list[re.Pattern] = []

    def watch(self, context) -> None:
        """Listen to every page of ``context``."""
        context.on("console", self._on_console)
        context.on("weberror", lambda error: self.seen.append(f"page error: {error.error}"))

    def allow(self, pattern: str) -> None:
        """Expect console errors matching ``pattern`` (a regular expression) in this test."""
        self.allowed.append(re.compile(pattern))

    def expect_status(self, status: int, path: str) -> None:
        """Expect Chromium's "Failed to load resource" error for ``status`` at ``path``."""
        self.allow(rf"status of {status} .*//localhost:\d+{re.escape(path)}\)$")

    def _on_console(self, message) -> None:
        if message.type != "error":
            return
        text = f"console error: {message.text} ({message.location.get('url', '')})"
        if not any(pattern.search(text) for pattern in self.allowed):
            self.seen.append(text)


@pytest.fixture
def page_problems(shot):
    """What went wrong inside the test's pages; asserted empty at teardown."""
    problems = PageProblems()
    yield problems
    if problems.seen:
        shot.keep_server_log()
    assert problems.seen == [], "errors in the page:\n" + "\n".join(problems.seen)


@pytest.fixture
def new_context(browser, page_problems, server, shot, request):
    """``new_context(**options)``: a fresh browser context whose pages are watched.

    When the test fails, every open page is photographed before it closes.
    """
    contexts = []

    def make(**options):
        options.setdefault("base_url", server.base_url)
        options.setdefault("accept_downloads", True)
        context = browser.new_context(**options)
        context.set_default_timeout(TIMEOUT_MS)
        page_problems.watch(context)
        contexts.append(context)
        return context

    yield make
    if has_failed(request.node):
        for context in contexts:
            for page in context.pages:
                shot(page, "at-failure")
    for context in contexts:
        context.close()


@pytest.fixture
def context(new_context):
    """A fresh browser context with JavaScript on."""
    return new_context()


@pytest.fixture
def page(context):
    """A page in ``context``."""
    return context.new_page()


class Authenticator:
    """A CDP virtual authenticator (ctap2, internal, resident keys, user verification)."""

    OPTIONS = {
        "protocol": "ctap2",
        "transport": "internal",
        "hasResidentKey": True,
        "hasUserVerification": True,
        "isUserVerified": True,
        "automaticPresenceSimulation": True,
    }

    def __init__(self, page):
        self.cdp = page.context.new_cdp_session(page)
        self.cdp.send("WebAuthn.enable", {"enableUI": False})
        self.id = self._add()

    def _add(self) -> str:
        answer = self.cdp.send("WebAuthn.addVirtualAuthenticator", {"options": self.OPTIONS})
        return answer["authenticatorId"]

    def replace(self) -> None:
        """Unplug this authenticator and plug in a new, empty one (another security key)."""
        self.cdp.send("WebAuthn.removeVirtualAuthenticator", {"authenticatorId": self.id})
        self.id = self._add()

    def credentials(self) -> list[dict]:
        """The credentials stored on this authenticator."""
        return self.cdp.send("WebAuthn.getCredentials", {"authenticatorId": self.id})["credentials"]

    def set_user_verified(self, verified: bool) -> None:
        """Make the next ceremonies pass or fail user verification."""
        self.cdp.send("WebAuthn.setUserVerified", {"authenticatorId": self.id, "isUserVerified": verified})


@pytest.fixture
def authenticator(page):
    """A virtual authenticator attached to ``page``; make more with ``Authenticator(other_page)``."""
    return Authenticator(page)


# --- Evidence ----------------------------------------------------------------


class Screenshots:
    """``shot(page, "name")`` saves ``artifacts/e2e/<test>/NN-name.png``."""

    def __init__(self, folder: Path, server_log: Path):
        self.folder = folder
        self.server_log = server_log
        self.count = itertools.count(1)

    def __call__(self, page, name: str) -> Path:
        path = self.folder / f"{next(self.count):02d}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    def keep_server_log(self) -> None:
        """Copy the server's log (all of this module's requests so far) beside the screenshots."""
        if self.server_log.exists():
            shutil.copy(self.server_log, self.folder / "server.log")


def has_failed(node) -> bool:
    """Whether the test's setup or call has failed so far."""
    return any(getattr(getattr(node, f"report_{when}", None), "failed", False) for when in ("setup", "call"))


@pytest.fixture
def shot(request, server):
    """Screenshots of the test's steps; on failure the server log is kept beside them."""
    folder = ARTIFACTS / re.sub(r"[^\w.-]+", "_", request.node.name)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    screenshots = Screenshots(folder, server.log)
    yield screenshots
    if has_failed(request.node):
        screenshots.keep_server_log()
