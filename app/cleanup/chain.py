"""The ledger made tamper-evident: each run's row carries a hash over its content and the previous row's hash.

``row_hash = sha256(prev_hash + "\\n" + content)``, where ``content`` is the
row's fields as canonical JSON (``content``) and ``prev_hash`` is the
``row_hash`` of the row before it by id (``GENESIS`` for the first row
ever). A row is sealed when its run closes (``seal``), or when a later run
closes it as abandoned; until then it is ``running`` and has no hash. So an
edited field, a row deleted from the middle, or rows swapped break the chain
at the first row that no longer matches (``verify``, ``flask verify-ledger``).

``forgotten_at`` is outside the hash: it is written after the run has
released its claim, when the next run may already have chained onto the
row. The ledger's oldest rows are deleted after 90 days like any target, so
the oldest row left is the chain's anchor: its ``prev_hash`` is taken as
it stands. Rows cut off the newest end leave no trace inside the chain; keep
the newest hash elsewhere (a log line carries each run) to notice that too.

Migration 0019 seals the rows that existed before it, in id order, with a
copy of ``content`` as it stood then; the two must agree (a test checks).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import CleanupRun, CleanupStatus

GENESIS = "0" * 64


def _moment(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat(timespec="microseconds") if value is not None else None


def content(row: CleanupRun) -> str:
    """The hashed fields of ``row`` as canonical JSON (sorted keys, UTC times to the microsecond)."""
    fields = {
        "id": row.id,
        "trigger": row.trigger,
        "started_at": _moment(row.started_at),
        "finished_at": _moment(row.finished_at),
        "cutoff": _moment(row.cutoff),
        "retention_days": row.retention_days,
        "form_retention_days": row.form_retention_days,
        "deleted": row.deleted,
        "remaining": row.remaining,
        "status": row.status,
        "error": row.error,
    }
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def digest(prev_hash: str, row: CleanupRun) -> str:
    """The hash ``row`` must carry after a row whose hash is ``prev_hash``."""
    return hashlib.sha256(f"{prev_hash}\n{content(row)}".encode()).hexdigest()


def seal(session: Session, row: CleanupRun) -> None:
    """Chain ``row`` onto the newest row before it, in the caller's transaction (written at its commit).

    The row is written and read back first, so the hash covers the values as stored.
    """
    session.flush()
    session.refresh(row)
    previous = session.scalar(
        select(CleanupRun.row_hash).where(CleanupRun.id < row.id).order_by(CleanupRun.id.desc()).limit(1)
    )
    row.prev_hash = previous or GENESIS
    row.row_hash = digest(row.prev_hash, row)


@dataclass(frozen=True)
class Broken:
    """The first row where the chain breaks, and why."""

    run_id: int
    reason: str


def verify(session: Session) -> tuple[int, Broken | None]:
    """Check the chain from the oldest row kept: how many rows were checked, and the first broken one (None)."""
    checked, previous, running = 0, None, False
    for row in _rows(session):
        if running:
            return checked, Broken(row.id, "it follows a run still marked running")
        if row.row_hash is None:
            if row.status != CleanupStatus.RUNNING:
                return checked, Broken(row.id, "the row has no hash")
            running = True  # the run in progress: the newest row, since the claim serialises runs
            continue
        if previous is not None and row.prev_hash != previous:
            return checked, Broken(row.id, "its previous hash is not the hash of the row before it")
        if row.row_hash != digest(row.prev_hash or "", row):
            return checked, Broken(row.id, "its content does not match its hash")
        checked, previous = checked + 1, row.row_hash
    return checked, None


def _rows(session: Session) -> Iterator[CleanupRun]:
    """Every ledger row in id order, a page at a time."""
    after = 0
    while True:
        page = list(session.scalars(select(CleanupRun).where(CleanupRun.id > after).order_by(CleanupRun.id).limit(500)))
        yield from page
        if len(page) < 500:
            return
        after = page[-1].id
