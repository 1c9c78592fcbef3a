"""Deleted means gone: after rows are deleted, no copy of them stays in the database's files.

On SQLite every connection has ``secure_delete`` on (``app.core.db``), so a
delete zeroes the freed bytes in the database file; what is left is the
WAL, which holds the pages as they were until a checkpoint overwrites them.
SQLite's search index keeps a deleted text's trigrams in older segments
until they are merged, so the index forgets them first
(``search.forget_deleted``). So whatever deletes personal data ends with the
index forgetting and a ``TRUNCATE`` checkpoint (``db.forget_deleted``): both
are "forget" here, the one verb for making deleted rows unrecoverable:

* a cleanup run that deleted rows: at its end, on the runner or the CLI
  (``app.cleanup.runs``);
* an admin's delete or erasure: ``forget_after_response()``, handed to the
  background runner once the response is sent (``background.after_response``),
  so the admin never waits for the checkpoint;
* ``flask people erase`` and ``flask erasures apply``: ``forget_now()``.

PostgreSQL has no such switch: dead tuples stay until vacuum, and the WAL
and backups keep what they kept. docs/cleanup.md says what an operator does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from flask import Flask, g

from app.core import background, db
from app.inquiries import reindex, search

log = logging.getLogger(__name__)

JOB = "forget-deleted"


def forget_now(should_stop: Callable[[], bool] = lambda: False, deleted: int = 0) -> bool:
    """Forget what was deleted now: the search index, then the WAL (SQLite); True when nothing lingers.

    After ``deleted`` inquiries went, more than are kept, the index is built
    again instead of purged (``reindex``); a rebuild a stopped forgetting
    left under way is finished first, whatever was deleted, and the purge
    follows it. ``should_stop`` (the process is shutting down) ends the
    index's forgetting between two steps; the WAL is truncated all the same,
    and the next deletion's one goes on (a rebuild) or starts over (a purge).
    """
    engine = db.get_engine()
    rebuilt = reindex.rebuild_index(engine, reindex.worth_rebuilding(engine, deleted), should_stop)
    if rebuilt is reindex.Rebuilt.STOPPED:
        forgotten = False
    else:  # a rebuild begun here holds nothing deleted: no purge (at a million rows, steps of 0.6 s)
        forgotten = rebuilt is reindex.Rebuilt.FRESH or search.forget_deleted(engine, should_stop)
    if not forgotten:
        log.warning("the search index's forgetting after a delete was stopped; the next delete's completes it")
    return db.forget_deleted(engine) and forgotten


def init_app(app: Flask) -> None:
    """After a response whose request deleted personal data, forget it on the background runner."""
    background.after_response(app, JOB, _requested, _forget)


def forget_after_response() -> None:
    """Once the current response is sent, forget what was deleted (``forget_now``) on the background runner."""
    g.forget_deleted = True


def _requested() -> bool | None:
    return g.pop("forget_deleted", None)


def _forget(_reason: bool, should_stop: Callable[[], bool]) -> None:
    forget_now(should_stop)
