"""``flask --app wsgi backup PATH``: a consistent copy of a SQLite database while the app serves.

SQLite's online backup API copies the database in one step: one read
transaction, so the copy is one consistent state, and in WAL mode live
writers go on committing while it runs. In several steps it would start over
whenever another connection committed between two of them (an app's worker
does): under a steadily committing writer a stepped copy started over
hundreds of times and took orders of magnitude longer than one step, and
a busier app could keep it from ever finishing (figures: docs/benchmarks.md,
"Figures behind the code"). Copying the file with ``cp`` instead may tear
it, and would leave the WAL behind.

PostgreSQL is backed up with ``pg_dump`` (docs/deploy.md): the command says
so and exits non-zero.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import Engine

from app.core import db

ALL_PAGES = -1  # one step (see above)


class NotSQLite(RuntimeError):
    """The database is not SQLite: use pg_dump."""


def backup(engine: Engine, target: Path) -> int:
    """Copy the database behind ``engine`` to a new SQLite file ``target``; its size in bytes.

    The copy is written next to ``target`` and renamed into place only when
    whole, in rollback-journal mode: one self-contained file.
    """
    if engine.dialect.name != "sqlite":
        raise NotSQLite("PostgreSQL is backed up with pg_dump (docs/deploy.md)")
    if target.exists():
        raise FileExistsError(f"{target} exists; give a new path")
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    with engine.connect() as connection:
        source = db.sqlite_driver(connection)
        copy = sqlite3.connect(partial)
        db.make_private(partial, db.PRIVATE_FILE)  # a copy of personal data: for this user only
        try:
            source.backup(copy, pages=ALL_PAGES)
            copy.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal beside it
        finally:
            copy.close()
    partial.rename(target)
    db.make_private(target, db.PRIVATE_FILE)
    return target.stat().st_size
