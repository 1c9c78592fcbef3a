"""Shared fixtures: every database test runs on SQLite and on PostgreSQL.

The schema is made by Alembic once per database kind into a template; each
test gets a fresh copy (a file copy for SQLite, ``CREATE DATABASE ...
TEMPLATE`` for PostgreSQL).

Besides ``app``, ``client`` and ``runner``: ``db_session`` arranges rows
(built by ``tests/factories.py``), ``query`` reads them back as committed,
``login`` and ``admin_client`` give a logged-in admin.
"""

from __future__ import annotations

import itertools
import os
import shutil
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from app import create_app
from app.core import background, db
from app.core.db import get_session, make_engine
from app.core.migrate import upgrade
from devtools import admins
from devtools.pgcluster import Cluster, find_bindir, memory_folder

IN_CI = os.environ.get("CI", "").lower() == "true"
_counter = itertools.count()


@pytest.fixture(scope="session", autouse=True)
def compiled_catalogs():
    """Compile a catalog whose .mo is missing or older than its .po, as ``make translations`` does.

    ``make test`` has already done it; this covers ``python -m pytest`` run
    straight after editing a .po, so no test reads a stale translation.
    """
    from pathlib import Path

    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    for po in (Path(__file__).resolve().parent.parent / "app" / "translations").glob("*/LC_MESSAGES/messages.po"):
        mo = po.with_suffix(".mo")
        if not mo.exists() or mo.stat().st_mtime < po.stat().st_mtime:
            with po.open("rb") as source:
                catalog = read_po(source, locale=po.parent.parent.name)
            with mo.open("wb") as target:
                write_mo(target, catalog)


def require(condition: bool, reason: str) -> None:
    """Skip loudly when ``condition`` fails; under CI=true, fail instead."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(f"SKIPPED LOUDLY: {reason}")


class FakeClock:
    """An injectable clock that moves only when told."""

    def __init__(self, start: datetime | None = None):
        self.moment = start or datetime(2026, 6, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.moment

    def advance(self, **delta) -> datetime:
        self.moment += timedelta(**delta)
        return self.moment


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server: SUNDOWN_TEST_POSTGRES_URL, or a throwaway cluster."""
    existing = os.environ.get("SUNDOWN_TEST_POSTGRES_URL")
    if existing:
        yield existing.rsplit("/", 1)[0]
        return
    bindir = find_bindir()
    require(bindir is not None, "PostgreSQL server binaries are missing (apt-get install postgresql)")
    cluster = Cluster(bindir, parent=memory_folder()).start()
    try:
        yield cluster.url("").rstrip("/")
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def postgres_template(postgres_server):
    """The name of a PostgreSQL database migrated to head, used as a template."""
    admin = sa.create_engine(f"{postgres_server}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql("DROP DATABASE IF EXISTS sundown_template")
        conn.exec_driver_sql("CREATE DATABASE sundown_template")
    engine = make_engine(f"{postgres_server}/sundown_template")
    upgrade(engine)
    engine.dispose()
    yield "sundown_template"
    admin.dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory):
    """A SQLite file migrated to head, copied for each test."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    engine.dispose()
    return path


def new_database_url(kind: str, request, tmp_path) -> str:
    """A fresh, migrated database of ``kind`` for one test."""
    if kind == "sqlite":
        path = tmp_path / "sundown.db"
        shutil.copy(request.getfixturevalue("sqlite_template"), path)
        return f"sqlite:///{path}"
    server = request.getfixturevalue("postgres_server")
    template = request.getfixturevalue("postgres_template")
    name = f"sundown_test_{os.getpid()}_{next(_counter)}"
    admin = sa.create_engine(f"{server}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name} TEMPLATE {template}")
    admin.dispose()
    request.addfinalizer(lambda: _drop_database(server, name))
    return f"{server}/{name}"


def _drop_database(server: str, name: str) -> None:
    """Drop a test's database (closing what still connects to it): the cluster, in memory, stays small."""
    admin = sa.create_engine(f"{server}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_kind(request) -> str:
    """The database kind under test."""
    return request.param


@pytest.fixture
def database_url(db_kind, request, tmp_path) -> str:
    """A fresh migrated database for this test, on each kind."""
    return new_database_url(db_kind, request, tmp_path)


@pytest.fixture
def clock() -> FakeClock:
    """The app's clock, under the test's control."""
    return FakeClock()


@pytest.fixture
def app_config(database_url, clock, tmp_path) -> dict:
    """Overrides for ``create_app``; tests may change them before ``app`` is built."""
    return {
        "ENV": "production",
        "SECRET_KEY": "test-secret-key-long-enough-for-production",
        "DATABASE_URL": database_url,
        "ORIGIN": "http://localhost",
        "RP_ID": "localhost",
        "CLOCK": clock,
        # Generous rate limits: test_public and test_auth_throttle set tight ones to test them.
        "SUBMIT_RATE_LIMITS": "1000/60,10000/86400",
        "SUBMIT_GLOBAL_RATE_LIMITS": "100000/60,1000000/86400",
        "NOTIFY_HOURLY_CAP": 100000,
        "AUTH_RATE_LIMIT_PER_CLIENT": "100000/600",
        "AUTH_RATE_LIMIT_GLOBAL": "100000/600",
        # An easy proof-of-work, so tests solve it in milliseconds; tests/inquiries/test_spam.py checks the default.
        "POW_MAX_NUMBER": 100,
    }


@pytest.fixture
def make_app():
    """Build extra apps (``make_app(config)``); their connections close at teardown."""
    apps = []

    def build(config: dict):
        apps.append(create_app(config))
        return apps[-1]

    yield build
    for application in apps:
        background.runner_of(application).stop()
        db.engine_of(application).dispose()


@pytest.fixture
def app(app_config, make_app):
    """A Sundown app on a fresh database."""
    return make_app(app_config)


@pytest.fixture
def client(app):
    """A test client for ``app``."""
    return app.test_client()


@pytest.fixture
def runner(app):
    """A CLI runner for ``app``."""
    return app.test_cli_runner()


@pytest.fixture
def db_session(app):
    """A SQLAlchemy session on the app's database, for arranging and checking rows."""
    with app.app_context():
        yield get_session()


class Query:
    """Reads the database as it is now, each time in a fresh session of ``app``.

    ``query(statement)`` gives the first column of every row (``scalars``),
    ``query.rows(statement)`` whole rows, ``query.scalar(statement)`` one value,
    ``query.count(Model)`` the number of rows, ``query.using(function)`` what
    ``function(session)`` returns.
    """

    def __init__(self, app):
        self.app = app

    def using(self, function):
        """``function(session)`` in a fresh session of the app."""
        with self.app.app_context():
            return function(get_session())

    def __call__(self, statement) -> list:
        return self.using(lambda session: list(session.scalars(statement)))

    def rows(self, statement) -> list[tuple]:
        """Every row ``statement`` selects, as tuples."""
        return self.using(lambda session: [tuple(row) for row in session.execute(statement)])

    def scalar(self, statement):
        """The first column of the first row ``statement`` selects, or None."""
        return self.using(lambda session: session.scalar(statement))

    def count(self, model) -> int:
        """How many rows ``model``'s table holds."""
        return self.scalar(sa.select(sa.func.count()).select_from(model))


@pytest.fixture
def query(app) -> Query:
    """Read rows back as they are committed now (see ``Query``)."""
    return Query(app)


@pytest.fixture
def login(app, client):
    """``login(name)`` makes an admin with a real login row and gives ``client`` its cookie.

    For tests of pages behind the login; the passkey ceremonies themselves are
    tested in ``test_auth*``. Pass ``as_client=`` to log in another client,
    ``admin=`` (what an earlier call returned) to log the same admin in again,
    ``browser=`` to name the browser the login shows.
    """

    def log_in(name: str = "Ada", as_client=None, admin=None, browser: str = "Chrome 156 on Linux"):
        made = admins.log_in(app, name, admin=admin, browser=browser)
        (as_client or client).set_cookie(made.cookie, made.token)
        return made.admin

    return log_in


@pytest.fixture
def admin_client(client, login):
    """``client``, logged in as the admin Ada."""
    login("Ada")
    return client
