"""Where SQLite and PostgreSQL differ, and where each difference lives.

* Here: the upsert. Both dialects speak ``INSERT ... ON CONFLICT ... DO
  UPDATE ... WHERE`` and ``RETURNING``, but SQLAlchemy builds them from
  dialect-specific ``insert`` functions, and PostgreSQL reports
  ``rowcount == -1`` for an upsert unless the statement asks SQLAlchemy to
  preserve it.
* ``app.db.make_engine``: the driver (psycopg 3), and SQLite's connection
  set-up (WAL, busy timeout, an explicit ``BEGIN``).
* ``app.models.UTCDateTime``: SQLite stores naive UTC text, PostgreSQL
  ``timestamptz``.
* ``app.cleanup.plans``: the batch-delete plan and the batch defaults.
* ``app.notify.outbox``: the outbox claim picks its rows ``FOR UPDATE SKIP
  LOCKED`` on PostgreSQL (SQLite has one writer at a time anyway).
* ``app.admin.export``: reads ``created_at`` as each driver returns it.
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
