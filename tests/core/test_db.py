"""The database layer: write transactions take SQLite's write lock up front.

How fast a waiting writer gets in (polling every millisecond) is a
performance claim: the backlog benchmark measures it.
"""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest
from flask import Flask
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

from app.core import db
from app.core.backup import backup
from app.models import Setting

WAIT = 30


def hold_write_lock(path: str, seconds: float, held: threading.Event) -> None:
    """Another process's writer, as the cleanup's batch would be: the lock for ``seconds``."""
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("BEGIN IMMEDIATE")
    held.set()
    time.sleep(seconds)
    connection.execute("COMMIT")
    connection.close()


def test_a_write_transaction_holds_the_write_lock_from_its_start(app, db_kind):
    with app.app_context(), db.transaction(write=True) as session:
        session.scalar(select(Setting.value).where(Setting.key == "none"))  # a read only, so far
        if db_kind == "sqlite":
            other = sqlite3.connect(db.get_engine().url.database, timeout=0, isolation_level=None)
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")
            other.close()
        session.add(Setting(key="written", value="1"))
    with app.app_context():
        assert db.get_session().get(Setting, "written").value == "1"


@pytest.mark.parametrize("db_kind", ["sqlite"])  # the busy timeout is SQLite's
def test_a_writer_that_never_gets_the_lock_fails_after_the_busy_timeout(app_config, make_app, db_kind):
    app = make_app({**app_config, "DB_STATEMENT_TIMEOUT": 0.2})
    held = threading.Event()
    with app.app_context():
        path = db.get_engine().url.database
    holder = threading.Thread(target=hold_write_lock, args=(path, 1.0, held))
    holder.start()
    assert held.wait(WAIT)
    with app.app_context(), pytest.raises(OperationalError, match="locked"), db.transaction(write=True):
        pass
    holder.join(WAIT)


def test_the_sqlite_files_and_the_instance_folder_are_for_their_owner_only(tmp_path):
    instance = tmp_path / "instance"
    instance.mkdir()
    instance.chmod(0o755)
    path = instance / "sundown.db"
    sqlite3.connect(path).close()
    path.chmod(0o644)
    application = Flask(__name__, instance_path=str(instance))
    application.config.update(
        DATABASE_URL=f"sqlite:///{path}", DB_POOL_SIZE=1, DB_CONNECT_TIMEOUT=5, DB_STATEMENT_TIMEOUT=5.0
    )
    db.init_app(application)
    with application.app_context(), db.transaction(write=True) as session:
        session.execute(select(1))
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)
    assert oct(instance.stat().st_mode & 0o777) == oct(0o700)
    copy = tmp_path / "copy.db"
    with application.app_context():
        backup(db.get_engine(), copy)
    assert oct(copy.stat().st_mode & 0o777) == oct(0o600)
    db.engine_of(application).dispose()
