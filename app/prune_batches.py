"""The pruner's targets and the one batch delete.

A target names a table, the predicate of its expired rows at a run's
``Moment``, and the indexed column its batches follow, oldest first. The
dry-run counts with the very same predicate the delete uses.

Each batch is its own short transaction, so live writes keep flowing. On
SQLite that is not enough: its busy handler is not fair, and a loop that
starts its next write right after a commit keeps winning the lock while a
waiting request sleeps. So after each batch the loop pauses for a fraction
(``PRUNE_YIELD``) of the batch's own duration: a writer that arrived during
the batch retries within that pause and gets in.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, Connection, delete, func, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from app import db

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Moment:
    """A run's fixed point in time: ``now`` for expiring rows, ``cutoff`` for inquiries."""

    now: datetime
    cutoff: datetime


@dataclass(frozen=True)
class Target:
    """A table the pruner cleans: rows matching ``where(moment)``, oldest ``age`` first."""

    name: str
    model: type
    where: Callable[[Moment], ColumnElement[bool]]
    age: InstrumentedAttribute

    @property
    def key(self) -> InstrumentedAttribute:
        """The primary key column, by which a batch is deleted."""
        return getattr(self.model, self.model.__mapper__.primary_key[0].key)


def delete_batch(connection: Connection, target: Target, moment: Moment, size: int) -> int:
    """Delete up to ``size`` of the oldest expired rows of ``target``; return how many."""
    oldest = select(target.key).where(target.where(moment)).order_by(target.age).limit(size)
    return connection.execute(delete(target.model).where(target.key.in_(oldest))).rowcount


def count_and_oldest(session: Session, target: Target, moment: Moment) -> tuple[int, datetime | None]:
    """How many rows of ``target`` a run at ``moment`` would delete, and the oldest ``age``."""
    count, oldest = session.execute(
        select(func.count(), func.min(target.age)).where(target.where(moment))
    ).one()
    return count, oldest


def count(session: Session, target: Target, moment: Moment) -> int:
    """How many rows of ``target`` are expired at ``moment``."""
    return session.scalar(select(func.count()).select_from(target.model).where(target.where(moment)))


@dataclass(frozen=True)
class Limits:
    """How much one run may do: rows per batch, seconds in all, pause per batch."""

    batch_size: int
    time_budget: float
    yield_ratio: float


@dataclass
class Progress:
    """What a run has done so far: rows deleted per target, targets left, error."""

    deleted: dict[str, int]
    unfinished: list[Target]
    error: str | None = None


def delete_all(targets: list[Target], moment: Moment, limits: Limits) -> Progress:
    """Delete every target's expired rows in batches until done, out of time, or failing.

    At least one batch always runs; the budget is checked after each batch
    (``time.monotonic``: a duration, not a date, so not the app clock). One
    connection serves the whole run; each batch is its own transaction on it.
    """
    progress = Progress({target.name: 0 for target in targets}, list(targets))
    started = time.monotonic()
    with db.get_engine().connect() as connection:
        for target in targets:
            try:
                while _one_batch(connection, target, moment, limits, progress):
                    if time.monotonic() - started >= limits.time_budget:
                        return progress
            except Exception as exc:  # noqa: BLE001 - recorded in the ledger, logged with the run
                progress.error = f"{type(exc).__name__} while deleting from {target.name}"
                log.exception("prune batch failed on %s", target.name)
                return progress
            if time.monotonic() - started >= limits.time_budget:
                return progress
    return progress


def _one_batch(connection: Connection, target: Target, moment: Moment, limits: Limits, progress: Progress) -> bool:
    """Delete one batch, then yield; True while ``target`` may have more rows."""
    batch_started = time.monotonic()
    with connection.begin():
        deleted = delete_batch(connection, target, moment, limits.batch_size)
    progress.deleted[target.name] += deleted
    # Pause in proportion to the batch so waiting writers get the lock.
    time.sleep((time.monotonic() - batch_started) * limits.yield_ratio)
    if deleted < limits.batch_size:
        progress.unfinished.remove(target)
        return False
    return True
