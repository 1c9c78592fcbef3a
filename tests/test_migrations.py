"""Alembic makes the schema, and the models agree with it on both databases."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from app import db
from app.db import make_engine
from app.migrate import current_revision, head_revision
from app.models import Base


def test_models_and_migrations_agree(database_url):
    engine = make_engine(database_url)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
    assert current_revision(engine) == head_revision()
    engine.dispose()


def test_cli_db_upgrade_migrates_an_empty_database(app_config, make_app, tmp_path):
    config = dict(app_config, DATABASE_URL=f"sqlite:///{tmp_path / 'fresh.db'}")
    app = make_app(config)
    result = app.test_cli_runner().invoke(args=["db-upgrade"])
    assert result.exit_code == 0, result.output
    assert current_revision(db.engine_of(app)) == head_revision()
