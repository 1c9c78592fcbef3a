"""Deleted means gone: after rows are deleted, no copy of them stays in the database's files.

On SQLite every connection has ``secure_delete`` on (``app.db``), so a
delete zeroes the freed bytes in the database file; what is left is the
WAL, which holds the pages as they were until a checkpoint overwrites them.
SQLite's search index keeps a deleted text's trigrams in older segments
until they are merged, so the index is purged first
(``search.purge_deleted``). So whatever deletes personal data ends with a
purge of the index and a ``TRUNCATE`` checkpoint (``db.forget_deleted``):

* a cleanup run that deleted rows: at its end, on the runner or the CLI
  (``app.cleanup.runs``);
* an admin's delete or erasure: ``after_response()``, handed to the
  background runner once the response is sent, so the admin never waits
  for the checkpoint;
* ``flask people erase`` and ``flask erasures apply``: ``now()``.

PostgreSQL has no such switch: dead tuples stay until vacuum, and the WAL
and backups keep what they kept. docs/cleanup.md says what an operator does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

from flask import Flask, after_this_request, current_app

from app import background, db, search

log = logging.getLogger(__name__)

JOB = "forget-deleted"


def now(should_stop: Callable[[], bool] = lambda: False) -> bool:
    """Purge the search index and truncate the WAL now (SQLite); True when nothing deleted lingers.

    ``should_stop`` (the process is shutting down) ends the purge between
    two steps; the WAL is truncated all the same, and the next deletion's
    purge starts over.
    """
    engine = db.get_engine()
    purged = search.purge_deleted(engine, should_stop)
    if not purged:
        log.warning("the search index purge after a delete was stopped; the next delete's purge completes it")
    return db.forget_deleted(engine) and purged


def after_response() -> None:
    """Once the current response is sent, checkpoint and truncate the WAL on the background runner."""
    app = current_app._get_current_object()

    @after_this_request
    def hand_off(response):
        response.call_on_close(partial(background.submit, app, JOB, partial(_forget_quietly, app)))
        return response


def _forget_quietly(app: Flask) -> None:
    with app.app_context():
        try:
            now(background.runner_of(app).stopping.is_set)
        except Exception:  # noqa: BLE001 - nobody is waiting; the next delete's checkpoint retries
            log.exception("the search index purge or the WAL checkpoint after a delete failed")
