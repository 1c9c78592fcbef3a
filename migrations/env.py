"""Alembic environment: the only way Sundown's schema is made.

The app passes its own connection (``config.attributes["connection"]``);
the plain ``alembic`` command connects to SUNDOWN_DATABASE_URL.
"""

import os
import warnings
from logging.config import fileConfig
from pathlib import Path

from alembic import context

from app.core.db import make_engine
from app.core.migrate import check_foreign_keys, foreign_keys_off
from app.models import Base
from app.inquiries.search import is_search_index

# Between 0006 and 0011 an index on lower(email) exists that SQLite's reflection cannot read; 0007's and
# 0008's batch rebuilds reflect the tables beside it and need nothing from it, so the warning says nothing
# an operator can act on (a first `make run` or `sundown migrate` printed it).
warnings.filterwarnings(
    "ignore", message="Skipped unsupported reflection of expression-based index ix_submissions_email_lower"
)

config = context.config
if config.config_file_name is not None and not config.attributes.get("connection"):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

DEFAULT_URL = f"sqlite:///{Path(__file__).resolve().parent.parent / 'instance' / 'sundown.db'}"


def _made_by_models(object_, name, type_, reflected, compare_to) -> bool:
    """Leave the search index to its migration (0004): the models do not describe it."""
    return not is_search_index(name)


def run_migrations(connection) -> None:
    """Run the migrations asked for on ``connection``; on SQLite its foreign keys are off (``foreign_keys_off``),
    so a table rebuilt deletes nothing that refers to it, and what refers to nothing is refused before commit."""
    applied = []
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_object=_made_by_models,
        on_version_apply=lambda **_step: applied.append(True),
    )
    with context.begin_transaction():
        context.run_migrations()
        if applied:
            check_foreign_keys(connection)


connection = config.attributes.get("connection")
if connection is not None:
    run_migrations(connection)
else:
    url = os.environ.get("SUNDOWN_DATABASE_URL", DEFAULT_URL)
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    engine = make_engine(url)
    # One transaction, begun after the foreign keys are off, as ``app.core.migrate`` runs them: the check
    # before commit then covers every migration of the run.
    with engine.connect() as conn, foreign_keys_off(conn), conn.begin():
        run_migrations(conn)
    engine.dispose()
