"""Reading the ledger: recent runs, a run as JSON, a run ready to display, the log line."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.cleanup.anonymise import ANONYMISED
from app.models import CleanupRun, CleanupStatus

log = logging.getLogger("app.cleanup")

_LOG_LEVELS: dict[str, int] = {CleanupStatus.OK: logging.INFO, CleanupStatus.PARTIAL: logging.WARNING}


def recent_runs(session: Session, limit: int = 20) -> list[CleanupRun]:
    """The newest ledger rows first."""
    query = select(CleanupRun).order_by(CleanupRun.started_at.desc(), CleanupRun.id.desc()).limit(limit)
    return list(session.scalars(query))


def as_dict(row: CleanupRun) -> dict[str, Any]:
    """A ledger row as JSON-ready data (no personal data in it)."""

    def iso(moment: datetime | None) -> str | None:
        return moment.isoformat() if moment else None

    return {
        "id": row.id,
        "trigger": row.trigger,
        "status": row.status,
        "started_at": iso(row.started_at),
        "finished_at": iso(row.finished_at),
        "forgotten_at": iso(row.forgotten_at),
        "cutoff": iso(row.cutoff),
        "retention_days": row.retention_days,
        "form_retention_days": row.form_retention_days or {},
        "deleted": json.loads(row.deleted or "{}"),
        "remaining": row.remaining,
        "error": row.error,
    }


def log_run(row: CleanupRun) -> None:
    """One structured log line per run: info when done, warning with a backlog, error on failure.

    The run's fields are also the record's ``cleanup_run`` attribute, an object in JSON logs.
    """
    level = _LOG_LEVELS.get(row.status, logging.ERROR)
    fields = as_dict(row)
    log.log(level, "cleanup_run %s", json.dumps(fields, sort_keys=True), extra={"cleanup_run": fields})


@dataclass(frozen=True)
class RunView:
    """One ledger row, ready to display: parsed counts, duration, a failed flag."""

    run: CleanupRun
    counts: dict[str, int]
    duration: timedelta | None

    @property
    def failed(self) -> bool:
        """Whether the run ended in an error or was abandoned by a process that died."""
        return self.run.status in (CleanupStatus.ERROR, CleanupStatus.ABANDONED) or bool(self.run.error)

    @property
    def total(self) -> int:
        """Rows deleted across every target (inquiries anonymised are not deleted: ``anonymised``)."""
        return sum(count for target, count in self.counts.items() if target != ANONYMISED)

    @property
    def anonymised(self) -> int:
        """Inquiries the run anonymised instead of deleting them."""
        return self.counts.get(ANONYMISED, 0)


def view_of(row: CleanupRun) -> RunView:
    """Parse a ledger row's JSON counts and compute its duration."""
    try:
        counts = {str(k): int(v) for k, v in json.loads(row.deleted or "{}").items()}
    except (ValueError, TypeError, AttributeError):
        counts = {}
    duration = row.finished_at - row.started_at if row.finished_at else None
    return RunView(row, counts, duration)
