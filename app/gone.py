"""Deleted means gone: after rows are deleted, no copy of them stays in the database's files.

On SQLite every connection has ``secure_delete`` on (``app.db``), so a
delete zeroes the freed bytes in the database file; what is left is the
WAL, which holds the pages as they were until a checkpoint overwrites them.
So whatever deletes personal data ends with a ``TRUNCATE`` checkpoint
(``db.forget_deleted``):

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
from functools import partial

from flask import Flask, after_this_request, current_app

from app import background, db

log = logging.getLogger(__name__)

JOB = "forget-deleted"


def now() -> bool:
    """Checkpoint and truncate the WAL now (SQLite); True when nothing deleted lingers there."""
    return db.forget_deleted(db.get_engine())


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
            now()
        except Exception:  # noqa: BLE001 - nobody is waiting; the next delete's checkpoint retries
            log.exception("the WAL checkpoint after a delete failed")
