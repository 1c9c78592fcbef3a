"""The retention setting: show it, change it, confirm a shorter one against the preview."""

from __future__ import annotations

from flask import flash, redirect, render_template, request, url_for

from app import db, pruning
from app.admin import audit, bp
from app.admin.display import days as plural_days
from app.dialect import upsert
from app.models import Setting

MIN_DAYS = 1
MAX_DAYS = pruning.MAX_RETENTION_DAYS


@bp.get("/settings")
def settings():
    """The current retention and the form to change it."""
    current = pruning.retention_days(db.get_session())
    return render_template("admin/settings.html", current=current, value=current, error=None)


@bp.post("/settings")
def change_retention():
    """Save a new retention; a shorter one first shows what it would delete and asks to confirm."""
    session = db.get_session()
    current = pruning.retention_days(session)
    raw = request.form.get("retention_days", "").strip()
    days, error = parse_retention(raw)
    if error:
        return render_template("admin/settings.html", current=current, value=raw, error=error), 422
    if days == current:
        flash(f"Retention unchanged: {plural_days(days)}.")
        return redirect(url_for("admin.settings"), 303)
    if days < current and request.form.get("confirm") != "1":
        preview = pruning.preview(session, days)
        return render_template("admin/settings_confirm.html", current=current, preview=preview)
    save_retention(days, current)
    flash(f"Retention set to {plural_days(days)} (was {current}).")
    return redirect(url_for("admin.settings"), 303)


def parse_retention(raw: str) -> tuple[int | None, str | None]:
    """``(days, None)`` for a whole number of days in range, else ``(None, message)``."""
    message = f"Enter a whole number of days from {MIN_DAYS} to {MAX_DAYS}."
    if not raw.isascii() or not raw.isdigit() or len(raw) > 6:
        return None, message
    days = int(raw)
    if not MIN_DAYS <= days <= MAX_DAYS:
        return None, message
    return days, None


def save_retention(days: int, previous: int) -> None:
    """Store ``days`` in the ``retention_days`` setting and record the change in the audit log."""
    session = db.get_session()
    stmt = upsert(session, Setting.__table__).values(key="retention_days", value=str(days))
    session.execute(
        stmt.on_conflict_do_update(index_elements=["key"], set_={"value": stmt.excluded.value})
    )
    audit.record(session, "retention_changed", 0, f"{previous} → {plural_days(days)}")
    session.commit()
