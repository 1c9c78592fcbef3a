"""Running and checking Alembic migrations from inside the app.

On SQLite a migration that changes a table's columns rebuilds it (Alembic's
batch mode: a copy, then the old table dropped). With foreign keys on, that
drop deletes the rows of every table referring to it first, by their
``ON DELETE CASCADE``: rebuilding ``attachments`` would delete every file's
pieces. So migrations run with foreign keys off (``foreign_keys_off``, set
outside the transaction: the pragma does nothing inside one), and once any
ran, ``check_foreign_keys`` refuses to commit rows that point at nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

from app.core import db, paths


def alembic_config() -> Config:
    """The project's Alembic configuration, wherever the process was started."""
    cfg = Config(str(paths.ALEMBIC_INI))
    cfg.set_main_option("script_location", str(paths.MIGRATIONS))
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the database behind ``engine`` to ``revision``."""
    _run(engine, command.upgrade, revision)


def downgrade(engine: Engine, revision: str) -> None:
    """Migrate the database behind ``engine`` back to ``revision``."""
    _run(engine, command.downgrade, revision)


def _run(engine: Engine, step, revision: str) -> None:
    cfg = alembic_config()
    with engine.connect() as connection, foreign_keys_off(connection), connection.begin():
        db.unlimited(connection)  # the app's engine limits statements; an index build may take longer
        cfg.attributes["connection"] = connection
        step(cfg, revision)


@contextmanager
def foreign_keys_off(connection: Connection) -> Iterator[None]:
    """SQLite: ``connection``'s foreign keys off until the block ends (on PostgreSQL nothing changes).

    Call it before the migrations' transaction begins: inside one, SQLite ignores the pragma.
    """
    if connection.dialect.name != "sqlite":
        yield
        return
    if connection.in_transaction():
        raise RuntimeError("foreign keys can only be turned off outside a transaction")
    driver = connection.connection.driver_connection
    if driver is None:
        raise RuntimeError("the connection is closed")
    driver.execute("PRAGMA foreign_keys=OFF")  # autocommit driver (app.core.db): no transaction begins here
    try:
        yield
    finally:
        driver.execute("PRAGMA foreign_keys=ON")


def check_foreign_keys(connection: Connection) -> None:
    """SQLite: refuse (``RuntimeError``, so the migrations roll back) rows whose foreign key points at nothing."""
    if connection.dialect.name != "sqlite":
        return
    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
    if broken:
        raise RuntimeError(f"the migration left {len(broken)} rows pointing at nothing, first: {tuple(broken[0])}")


def head_revision() -> str | None:
    """The newest revision in ``migrations/``."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at, or None for an empty database."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()
