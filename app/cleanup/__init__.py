"""The cleanup: after ordinary requests, one atomic claim, bounded batch deletes, a ledger.

Each module does one thing:

* ``hook``: views call ``cleanup.trigger(name)``; after the response, a run.
* ``claim``: the one conditional write that decides who runs.
* ``runs``: a run (claim, batches, ledger row, release); the dry-run.
* ``batches`` and ``plans``: the batch delete and how each database plans it.
* ``targets``: what is deleted, table by table.
* ``anonymise``: what a form that anonymises keeps of its expired inquiries, instead of deleting them.
* ``ledger``: reading the ledger and the log line of a run.
* ``state``: what this process remembers (targets, when the claim may be due).
* ``alarm``: expired data still stored, and whether the cleanup is overdue.

Callers outside use the names exported here: ``trigger``, ``run``,
``run_if_due``, ``dry_run``, ``next_due_at``, ``as_dict``. What counts as
expired is the retention rule's (``app.inquiries.retention``).
"""

from __future__ import annotations

from flask import Flask

from app.cleanup import alarm, hook, state
from app.cleanup.hook import trigger
from app.cleanup.ledger import as_dict
from app.cleanup.runs import dry_run, next_due_at, run, run_if_due
from app.cleanup.targets import TARGETS
from app.core import metrics
from app.core.parsing import ConfigurationError

__all__ = ["as_dict", "dry_run", "init_app", "next_due_at", "run", "run_if_due", "trigger"]


def init_app(app: Flask) -> None:
    """Check the lease, give the app its cleanup state and its after-response hook."""
    if app.config["CLEANUP_LEASE"] <= app.config["CLEANUP_TIME_BUDGET"]:
        raise ConfigurationError("SUNDOWN_CLEANUP_LEASE must be longer than SUNDOWN_CLEANUP_TIME_BUDGET.")
    state.install(app)
    metrics.declare_cleanup_targets(target.name for target in TARGETS)
    metrics.declare_scraped("cleanup_alarm", alarm.gauges)
    hook.init_app(app)
