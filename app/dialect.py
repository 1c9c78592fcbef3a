"""The one place where SQLite and PostgreSQL differ: the upsert construct, write fairness.

Both dialects speak ``INSERT ... ON CONFLICT ... DO UPDATE ... WHERE`` and
``RETURNING``, but SQLAlchemy builds them from dialect-specific ``insert``
functions, and PostgreSQL reports ``rowcount == -1`` for an upsert unless the
statement asks SQLAlchemy to preserve it.
"""

from __future__ import annotations

from sqlalchemy import Engine
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

_INSERTS = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}


def upsert(session: Session, table):
    """An ``INSERT`` for ``table`` that supports ``on_conflict_do_update`` on this database.

    The statement keeps its true rowcount on every dialect.
    """
    insert = _INSERTS[session.get_bind().dialect.name]
    return insert(table).execution_options(preserve_rowcount=True)


# SQLite has one write lock and an unfair busy handler: a batch loop must
# pause after each commit (as long as the batch took) or waiting requests
# starve. PostgreSQL locks rows, so inserts never wait for a delete batch.
_PRUNE_YIELD = {"sqlite": 1.0, "postgresql": 0.0}


def prune_yield(engine: Engine) -> float:
    """The default pause after a prune batch, as a fraction of the batch's duration."""
    return _PRUNE_YIELD.get(engine.dialect.name, 1.0)
