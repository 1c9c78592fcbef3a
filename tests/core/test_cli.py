"""Operator commands (app/cli.py): ``flask cleanup``, with ``--dry-run`` and ``--force``.

``flask admin invite`` and ``first-link`` are tested with enrollment
(test_auth_enroll.py), ``flask db-upgrade`` with the migrations.
"""

from __future__ import annotations

from sqlalchemy import select

from app.models import CleanupRun
from tests.factories import add_inquiries, aged_inquiries

LEDGER = select(CleanupRun).order_by(CleanupRun.id)


def test_cleanup_dry_run_then_run_then_not_due_then_force(runner, db_session, clock, query):
    add_inquiries(db_session, aged_inquiries(clock, [200, 300]))
    dry = runner.invoke(args=["cleanup", "--dry-run"])
    assert "inquiries: 2 (oldest " in dry.output
    assert query(LEDGER) == []
    first = runner.invoke(args=["cleanup"])
    assert "inquiries: 2 deleted" in first.output and ": ok, 0 remaining" in first.output
    assert "Not run" in runner.invoke(args=["cleanup"]).output
    forced = runner.invoke(args=["cleanup", "--force"])
    assert forced.exit_code == 0 and "inquiries: 0 deleted" in forced.output
    assert [run.trigger for run in query(LEDGER)] == ["cli", "cli"]


def test_the_old_command_name_says_it_is_now_cleanup_and_runs_it(runner, db_session, clock, query):
    add_inquiries(db_session, aged_inquiries(clock, [200]))
    result = runner.invoke(args=["prune", "--dry-run"])
    assert result.exit_code == 0
    assert "`flask prune` is now `flask cleanup`" in result.output and "inquiries: 1 (oldest " in result.output
    assert query(LEDGER) == []
    assert "inquiries: 1 deleted" in runner.invoke(args=["prune"]).output
