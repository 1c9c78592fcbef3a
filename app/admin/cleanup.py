"""What the status page reads from the pruner, in one place.

The ledger rows (``PruneRun``) are shown as ``RunView``: parsed counts,
duration and a failed flag, so the template does no arithmetic.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from app import pruning
from app.models import PruneRun

RECENT_RUNS = 20


@dataclass(frozen=True)
class RunView:
    """One ledger row, ready to display."""

    run: PruneRun
    counts: dict[str, int]
    duration: timedelta | None

    @property
    def failed(self) -> bool:
        """Whether the run ended in an error."""
        return self.run.status in ("failed", "error") or bool(self.run.error)

    @property
    def total(self) -> int:
        """Rows deleted across every target."""
        return sum(self.counts.values())


def view_of(run: PruneRun) -> RunView:
    """Parse a ledger row's JSON counts and compute its duration."""
    try:
        counts = {str(k): int(v) for k, v in json.loads(run.deleted or "{}").items()}
    except (ValueError, TypeError, AttributeError):
        counts = {}
    duration = run.finished_at - run.started_at if run.finished_at else None
    return RunView(run, counts, duration)


def recent_runs(session: Session) -> list[RunView]:
    """The newest ledger rows first."""
    return [view_of(run) for run in pruning.recent_runs(session, RECENT_RUNS)]


def next_due(session: Session) -> datetime | None:
    """When the next cleanup is due (None: at the next request)."""
    return pruning.next_due_at(session)


def run_now() -> RunView | None:
    """Run a cleanup now through the same claim as every trigger; None if another holds it."""
    run = pruning.run("admin_manual", force=True)
    return view_of(run) if run is not None else None
