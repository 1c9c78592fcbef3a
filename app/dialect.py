"""The one place where SQLite and PostgreSQL differ: the upsert construct.

Both dialects speak ``INSERT ... ON CONFLICT ... DO UPDATE ... WHERE`` and
``RETURNING``, but SQLAlchemy builds them from dialect-specific ``insert``
functions, and PostgreSQL reports ``rowcount == -1`` for an upsert unless the
statement asks SQLAlchemy to preserve it.
"""

from __future__ import annotations

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

_INSERTS = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}


def upsert(session: Session, table):
    """An ``INSERT`` for ``table`` that supports ``on_conflict_do_update`` on this database.

    The statement keeps its true rowcount on every dialect.
    """
    insert = _INSERTS[session.get_bind().dialect.name]
    return insert(table).execution_options(preserve_rowcount=True)
