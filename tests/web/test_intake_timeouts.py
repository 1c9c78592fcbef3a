"""Database timeouts: a database that hangs or holds a lock costs a request a 503 in bounded time.

Times are only bounded from above: the configured timeout plus ``MARGIN``.
The settings' checks are in ``test_config.py``; a held write lock through a
real server on both databases is in ``test_intake_server.py``.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.cookiejar import CookieJar

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from app.core import db
from devtools.server import running_server
from tests.conftest import new_database_url
from tests.helpers import VALID

MARGIN = 5.0  # seconds on top of a configured timeout: a bound, not a benchmark
BASE = {
    "ENV": "production",
    "SECRET_KEY": "k" * 32,
    "ORIGIN": "https://inbox.example.org",
    "RP_ID": "inbox.example.org",
    "DATABASE_URL": "sqlite://",
}


# --- where the limits apply ---------------------------------------------------


def test_request_transactions_are_limited_migrations_and_batches_are_not(db_kind, app_config, make_app):
    app_config["DB_STATEMENT_TIMEOUT"] = 1.5
    app = make_app(app_config)
    with app.app_context():
        if db_kind == "postgresql":
            show = sa.text("SHOW statement_timeout")
            assert db.get_session().execute(show).scalar_one() == "1500ms"
            with db.transaction() as session:
                assert session.execute(show).scalar_one() == "1500ms"
            with db.get_engine().connect() as connection:  # what migrations and batches use
                with connection.begin():
                    assert connection.execute(show).scalar_one() == "1500ms"  # set once, when it was made
                    db.unlimited(connection)
                    assert connection.execute(show).scalar_one() == "0"
                with connection.begin():
                    assert connection.execute(show).scalar_one() == "1500ms"  # lifted for that transaction only
        else:
            with db.get_engine().connect() as connection:  # SQLite: every connection
                assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar_one() == 1500


def _slow_once(engine, prefix: str, seconds: float) -> list[str]:
    """Before the first statement starting with ``prefix``, keep its connection busy for ``seconds`` in a
    statement of its own (PostgreSQL's ``pg_sleep``, under that transaction's statement timeout)."""
    slowed: list[str] = []

    def slow(connection, _cursor, statement: str, *_args) -> None:
        if statement.lstrip().startswith(prefix) and not slowed:
            slowed.append(statement)
            connection.exec_driver_sql(f"SELECT pg_sleep({seconds})")

    sa.event.listen(engine, "before_cursor_execute", slow)
    return slowed


@pytest.mark.parametrize("db_kind", ["postgresql"])  # SQLite has none (its busy timeout: tests/core/test_db.py)
def test_a_request_transaction_spends_no_statement_on_its_timeout(db_kind, app, client):
    """The limit is set once per connection; a ``SET LOCAL`` in every transaction was a round trip each."""
    statements: list[str] = []
    here = threading.get_ident()

    def record(_connection, _cursor, statement: str, *_args) -> None:
        if threading.get_ident() == here:
            statements.append(statement)

    sa.event.listen(db.engine_of(app), "before_cursor_execute", record)
    assert client.post("/api/inquiries", json=VALID).status_code == 201
    sa.event.remove(db.engine_of(app), "before_cursor_execute", record)
    assert statements and not [each for each in statements if "statement_timeout" in each]


@pytest.mark.parametrize("db_kind", ["postgresql"])
def test_a_statement_over_the_timeout_fails_a_request_but_not_a_cleanup_batch(db_kind, app_config, make_app, clock):
    from app import cleanup
    from app.models import Inquiry
    from tests.factories import add_inquiries, aged_inquiries

    app = make_app({**app_config, "DB_STATEMENT_TIMEOUT": 0.1})
    with app.app_context():
        with pytest.raises(sa.exc.OperationalError, match="statement timeout"):
            db.get_session().execute(sa.text("SELECT pg_sleep(0.5)"))
        db.get_session().rollback()
        add_inquiries(db.get_session(), aged_inquiries(clock, [400] * 3, legal_hold=False))
    slowed = _slow_once(db.engine_of(app), "DELETE FROM submissions", 0.5)
    with app.app_context():
        run = cleanup.run("test", force=True)
        assert slowed and (run.status, run.remaining) == ("ok", 0)
        assert db.get_session().scalar(sa.select(sa.func.count()).select_from(Inquiry)) == 0


@pytest.mark.parametrize("db_kind", ["postgresql"])
def test_migrations_on_the_apps_engine_outlast_its_statement_timeout(db_kind, app_config, make_app):
    from app.core import migrate

    app = make_app({**app_config, "DB_STATEMENT_TIMEOUT": 0.1})
    engine = db.engine_of(app)
    with engine.begin() as connection:  # the last migration undone, on the app's engine
        cfg = migrate.alembic_config()
        cfg.attributes["connection"] = connection
        db.unlimited(connection)
        migrate.command.downgrade(cfg, "-1")
    slowed = _slow_once(engine, "UPDATE alembic_version", 0.5)
    result = app.test_cli_runner().invoke(args=["db-upgrade"])
    assert result.exit_code == 0, result.output
    assert slowed and migrate.current_revision(engine) == migrate.head_revision()


def test_no_free_pooled_connection_is_503_within_the_timeout(request, tmp_path, make_app):
    # PostgreSQL only: the pool size is a PostgreSQL setting.
    url = new_database_url("postgresql", request, tmp_path)
    app = make_app({**BASE, "DATABASE_URL": url, "DB_POOL_SIZE": 1, "DB_CONNECT_TIMEOUT": 2})
    engine = db.engine_of(app)
    with engine.connect(), engine.connect():  # the pool (1) and its overflow (1)
        started = time.monotonic()
        response = app.test_client().post("/api/inquiries", json=VALID)
        elapsed = time.monotonic() - started
    assert response.status_code == 503
    assert elapsed < 2 + MARGIN


# --- a database that stops answering, behind a real gunicorn --------------------


class Switch:
    """A TCP listener on 127.0.0.1 that relays to PostgreSQL, or accepts and never replies.

    ``hang()`` breaks the relayed connections (the database went away) and
    from then on holds new ones unanswered, as a database whose postmaster
    hangs; ``answer()`` relays again. Every thread is joined by ``close()``.
    """

    def __init__(self, target_port: int):
        self.target = ("127.0.0.1", target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.05)
        self.port = self.listener.getsockname()[1]
        self.answering = threading.Event()
        self.answering.set()
        self.closing = threading.Event()
        self.lock = threading.Lock()
        self.sockets: list[socket.socket] = []
        self.threads = [threading.Thread(target=self._accept)]
        self.threads[0].start()

    def _accept(self) -> None:
        while not self.closing.is_set():
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                continue
            with self.lock:
                self.sockets.append(client)
                if not self.answering.is_set():
                    continue  # held open, never answered
                upstream = socket.create_connection(self.target)
                self.sockets.append(upstream)
                for source, sink in ((client, upstream), (upstream, client)):
                    thread = threading.Thread(target=self._pump, args=(source, sink))
                    self.threads.append(thread)
                    thread.start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _close_all(self) -> None:
        with self.lock:
            for sock in self.sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self.sockets.clear()

    def hang(self) -> None:
        self.answering.clear()
        self._close_all()

    def answer(self) -> None:
        self._close_all()  # the held connections, long given up by their clients
        self.answering.set()

    def close(self) -> None:
        self.closing.set()
        self._close_all()
        for thread in self.threads:
            thread.join(timeout=10)
        self.listener.close()


def timed(call):
    """``call()`` and how long it took, in seconds."""
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


def at_once(*calls):
    """Run ``calls`` in parallel threads; their ``timed`` results, in order."""
    with ThreadPoolExecutor(len(calls)) as pool:
        return [future.result() for future in [pool.submit(timed, call) for call in calls]]


def test_a_database_that_stops_answering_is_503_in_time_then_recovers(request, tmp_path):
    url = make_url(new_database_url("postgresql", request, tmp_path))
    switch = Switch(url.port)
    timeout = 2  # PostgreSQL's smallest connect timeout
    env = {
        "SUNDOWN_DATABASE_URL": url.set(port=switch.port).render_as_string(hide_password=False),
        "SUNDOWN_SECRET_KEY": "test-secret-key-long-enough-for-production",
        "SUNDOWN_ORIGIN": "http://localhost",
        "SUNDOWN_RP_ID": "localhost",
        "SUNDOWN_DB_CONNECT_TIMEOUT": str(timeout),
        "SUNDOWN_SUBMIT_RATE_LIMITS": "1000/60,10000/86400",
        "SUNDOWN_SUBMIT_GLOBAL_RATE_LIMITS": "100000/60",
    }
    try:
        with running_server(env, tmp_path / "server.log", workers=2) as (base_url, _process):
            site = Site(base_url)
            assert site.post_json(VALID)[0] == 201

            switch.hang()
            api, health, form = at_once(  # each its own client, as three visitors
                lambda: Site(base_url).post_json(VALID),
                lambda: Site(base_url).get("/healthz"),
                lambda: Site(base_url).post_form(VALID),
            )
            (api_status, _), (health_status, health_body), (form_status, page) = (api[0], health[0], form[0])
            assert api_status == 503
            assert health_status == 503 and '"database":false' in health_body.replace(" ", "")
            assert form_status == 503 and 'id="form-notice"' in page and "I have a question." in page
            for _reply, elapsed in (api, health, form):
                assert elapsed < timeout + MARGIN

            switch.answer()
            assert site.post_json(VALID)[0] == 201
            assert site.get("/healthz")[0] == 200
        log = (tmp_path / "server.log").read_text()
        assert "unexpected error" not in log
    finally:
        switch.close()


class Site:
    """A browser-like client for a running server: cookies kept, CSRF token taken from the form."""

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))

    def _open(self, path: str, data: bytes | None = None, headers: dict | None = None) -> tuple[int, str]:
        request = urllib.request.Request(f"{self.base_url}{path}", data=data, headers=headers or {})
        try:
            with self.opener.open(request, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def get(self, path: str) -> tuple[int, str]:
        return self._open(path)

    def post_json(self, body: dict) -> tuple[int, str]:
        import json

        return self._open("/api/inquiries", json.dumps(body).encode(), {"Content-Type": "application/json"})

    def post_form(self, fields: dict) -> tuple[int, str]:
        token = re.search(r'name="csrf_token" value="([^"]+)"', self.get("/")[1]).group(1)
        data = urllib.parse.urlencode({**fields, "csrf_token": token}).encode()
        return self._open("/", data, {"Content-Type": "application/x-www-form-urlencoded"})
