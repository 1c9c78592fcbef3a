"""The retention setting: show it, change it, confirm a shorter one against the preview."""

from __future__ import annotations

from flask import flash, redirect, render_template, request, url_for

from app import db, retention
from app.admin import audit, bp
from app.admin.display import days as plural_days

INVALID = f"Enter a whole number of days from {retention.MIN_DAYS} to {retention.MAX_DAYS}."


@bp.context_processor
def retention_bounds() -> dict:
    """The bounds of the retention rule, for the form's limits and hint."""
    return {"min_days": retention.MIN_DAYS, "max_days": retention.MAX_DAYS}


@bp.get("/settings")
def settings():
    """The current retention and the form to change it."""
    current = retention.retention_days(db.get_session())
    return render_template("admin/settings.html", current=current, value=current, error=None)


@bp.post("/settings")
def change_retention():
    """Save a new retention; a shorter one first shows what it would delete and asks to confirm."""
    session = db.get_session()
    current = retention.retention_days(session)
    raw = request.form.get("retention_days", "")
    days = retention.parse(raw)
    if days is None:
        return render_template("admin/settings.html", current=current, value=raw.strip(), error=INVALID), 422
    if days == current:
        flash(f"Retention unchanged: {plural_days(days)}.")
        return redirect(url_for("admin.settings"), 303)
    if days < current and request.form.get("confirm") != "1":
        preview = retention.preview(session, days)
        return render_template("admin/settings_confirm.html", current=current, preview=preview)
    retention.save(session, days)
    audit.record(session, "retention_changed", 0, f"{current} → {plural_days(days)}")
    session.commit()
    flash(f"Retention set to {plural_days(days)} (was {current}).")
    return redirect(url_for("admin.settings"), 303)
