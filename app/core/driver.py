"""Statements of every submission's write transaction, run as the driver's SQL on the DBAPI cursor.

A statement is built with Core and compiled once per database kind; each
execution only lays out its parameters (through the columns' own bind
processors, so ``UTCDateTime`` stores what Core would store) and runs on the
connection's cursor, in its transaction. Executing a Core statement costs
several times as much as ``exec_driver_sql``, and that more than the cursor;
on PostgreSQL the outbox's rows cost clearly more through Core's executemany
than as one statement on the cursor. Everything else runs through Core
(figures: docs/benchmarks.md, "Figures behind the code").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import DBAPIError


@dataclass(frozen=True)
class Compiled:
    """A statement's SQL for one database, and its bound parameters in order with their processors."""

    sql: str
    names: tuple[str, ...]
    processors: tuple[Callable[[Any], Any] | None, ...]
    positional: bool

    def parameters(self, values: dict[str, Any]) -> Any:
        """``values`` (by bind name) as the driver takes them."""
        laid_out = [
            value if process is None else process(value)
            for value, process in zip((values[name] for name in self.names), self.processors, strict=False)
        ]
        return tuple(laid_out) if self.positional else dict(zip(self.names, laid_out, strict=False))


def compile_for(statement: Any, database: Dialect) -> Compiled:
    """``statement`` (Core, with named ``bindparam``s of known types) compiled for ``database``."""
    compiled = statement.compile(dialect=database)
    order = compiled.positiontup
    names = tuple(order) if order else tuple(compiled.binds)
    processors = tuple(compiled.binds[name].type.bind_processor(database) for name in names)
    return Compiled(str(compiled), names, processors, positional=bool(order))


def rowcount(connection: Connection, statement: Compiled, values: dict[str, Any]) -> int:
    """Run ``statement`` with ``values`` on the connection's DBAPI cursor, in its transaction; the rowcount.

    A driver error is raised as SQLAlchemy raises it (``DBAPIError``: a 503,
    never a 500), and a lost connection is invalidated as SQLAlchemy would.
    """
    dialect = connection.dialect
    # A checked-out connection always has its DBAPI connection.
    dbapi_connection = cast(DBAPIConnection, connection.connection.dbapi_connection)
    parameters = statement.parameters(values)
    try:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(statement.sql, parameters)
            return cursor.rowcount
        finally:
            cursor.close()
    except dialect.loaded_dbapi.Error as error:
        lost = dialect.is_disconnect(error, dbapi_connection, None)
        if lost:
            connection.invalidate(error)
        raise DBAPIError.instance(
            statement.sql,
            parameters,
            error,
            dialect.loaded_dbapi.Error,
            hide_parameters=True,
            connection_invalidated=lost,
            dialect=dialect,
        ) from error
