"""Where SQLite and PostgreSQL differ, and where each difference lives.

* Here: the upsert. Both dialects speak ``INSERT ... ON CONFLICT ... DO
  UPDATE ... WHERE`` and ``RETURNING``, but SQLAlchemy builds them from
  dialect-specific ``insert`` functions, and PostgreSQL reports
  ``rowcount == -1`` for an upsert unless the statement asks SQLAlchemy to
  preserve it.
* ``app.core.db.make_engine``: the driver (psycopg 3), and SQLite's connection
  set-up (WAL, busy timeout, an explicit ``BEGIN``).
* ``app.models.UTCDateTime``: SQLite stores naive UTC text, PostgreSQL
  ``timestamptz``.
* ``app.cleanup.plans``: the batch-delete plan and the batch defaults.
* ``app.outbox.store``: the outbox claim picks its rows ``FOR UPDATE SKIP
  LOCKED`` on PostgreSQL (SQLite has one writer at a time anyway).
* ``app.admin.export``: reads ``created_at`` as each driver returns it.
* ``app.inquiries.store``: a solved submission's used challenge and inquiry in
  one statement on PostgreSQL (a data-modifying CTE), two on SQLite.
* ``app.inquiries.search``: the search index (SQLite FTS5 with trigrams, PostgreSQL
  ``pg_trgm``), made by migration 0004, and how a search uses it.
* Here: the UTC day of a timestamp (``day_of``), by which the forecast and
  the Overview group inquiries: SQLite's stored text cut to its date,
  PostgreSQL's ``timestamptz`` converted to a UTC date.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from sqlalchemy import ColumnElement, func
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import QueryableAttribute, Session

_INSERTS = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}


def upsert(session: Session, table):
    """An ``INSERT`` for ``table`` that supports ``on_conflict_do_update`` on this database.

    The statement keeps its true rowcount on every dialect.
    """
    return upsert_for(session.get_bind().dialect, table)


def upsert_for(database: Dialect, table):
    """``upsert`` for a dialect rather than a session (statements compiled ahead, ``app.inquiries.store``)."""
    return _INSERTS[database.name](table).execution_options(preserve_rowcount=True)


def day_of(session: Session, column: ColumnElement[Any] | QueryableAttribute[Any]) -> ColumnElement[Any]:
    """The UTC day of the timestamp ``column``, for grouping; read the values with ``as_day``.

    SQLite stores naive UTC text (``YYYY-MM-DD HH:MM:SS...``): its first ten
    characters, no date arithmetic per row. PostgreSQL: the ``timestamptz``
    at UTC, as a date.
    """
    if session.get_bind().dialect.name == "sqlite":
        return func.substr(column, 1, 10)
    return func.date(func.timezone("UTC", column))


def as_day(value: date | str) -> date:
    """A value of ``day_of`` as a date (SQLite returns text, PostgreSQL a date)."""
    return value if isinstance(value, date) else date.fromisoformat(value)
