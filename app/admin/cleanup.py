"""The cleanup page: last run, next due, the ledger, the audit log, "Run cleanup now", delivery health."""

from __future__ import annotations

from flask import flash, redirect, render_template, url_for
from flask_babel import gettext as _
from flask_babel import ngettext

from app import audit, cleanup
from app.admin import bp
from app.admin.labels import label
from app.cleanup import ledger
from app.core import db
from app.notify import health as delivery_health

RECENT_RUNS = 20


@bp.get("/cleanup")
def cleanup_page():
    """The cleanup ledger and the admin audit log."""
    session = db.get_session()
    runs = [ledger.view_of(row) for row in ledger.recent_runs(session, RECENT_RUNS)]
    return render_template(
        "admin/cleanup.html",
        last=runs[0] if runs else None,
        runs=runs,
        next_due=cleanup.next_due_at(session),
        entries=audit.recent(session),
        channels=delivery_health.per_channel(session),
    )


@bp.post("/cleanup/run")
def run_cleanup():
    """Run a cleanup now (forced through the claim) and report its result."""
    db.get_session().close()  # hold no transaction while the cleanup deletes
    row = cleanup.run("admin_manual", force=True)
    if row is None:
        flash(_("A cleanup is already running; its result will appear below."), "warning")
        return redirect(url_for("admin.cleanup_page"), 303)
    result = ledger.view_of(row)
    if result.failed:
        flash(_("Cleanup failed: %(error)s.", error=row.error or label(row.status)), "error")
    else:
        flash(
            ngettext(
                "Cleanup finished: deleted %(num)s row (%(counts)s).",
                "Cleanup finished: deleted %(num)s rows (%(counts)s).",
                result.total,
                counts=_counts(result.counts),
            )
        )
    return redirect(url_for("admin.cleanup_page"), 303)


def _counts(counts: dict[str, int]) -> str:
    return _(", ").join(f"{label(target)} {count}" for target, count in counts.items()) or _("nothing to delete")
