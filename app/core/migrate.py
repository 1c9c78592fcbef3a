"""Running and checking Alembic migrations from inside the app."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from app.core import db, paths


def alembic_config() -> Config:
    """The project's Alembic configuration, wherever the process was started."""
    cfg = Config(str(paths.ALEMBIC_INI))
    cfg.set_main_option("script_location", str(paths.MIGRATIONS))
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the database behind ``engine`` to ``revision``."""
    cfg = alembic_config()
    with engine.begin() as connection:
        db.unlimited(connection)  # the app's engine limits statements; an index build may take longer
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, revision)


def head_revision() -> str | None:
    """The newest revision in ``migrations/``."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at, or None for an empty database."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()
