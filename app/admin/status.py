"""The cleanup status page: last run, next due, the ledger, the audit log, "Run cleanup now"."""

from __future__ import annotations

from flask import flash, redirect, render_template, url_for

from app import db
from app.admin import audit, bp, cleanup


@bp.get("/status")
def status():
    """The pruner's ledger and the admin audit log."""
    session = db.get_session()
    runs = cleanup.recent_runs(session)
    return render_template(
        "admin/status.html",
        last=runs[0] if runs else None,
        runs=runs,
        next_due=cleanup.next_due(session),
        entries=audit.recent(session),
    )


@bp.post("/status/run")
def run_cleanup():
    """Run a cleanup now (forced through the claim) and report its result."""
    db.get_session().close()  # hold no transaction while the cleanup deletes
    result = cleanup.run_now()
    if result is None:
        flash("A cleanup is already running; its result will appear below.", "warning")
    elif result.failed:
        flash(f"Cleanup failed: {result.run.error or result.run.status}.", "error")
    else:
        flash(f"Cleanup finished: deleted {result.total} rows ({_counts(result.counts)}).")
    return redirect(url_for("admin.status"), 303)


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{target} {count}" for target, count in counts.items()) or "nothing to delete"
