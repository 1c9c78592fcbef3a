"""The Retention page: inquiries and spam, each shown, changed, and a shorter one confirmed against the preview."""

from __future__ import annotations

from dataclasses import dataclass

from flask import flash, redirect, render_template, request, url_for

from app import db, retention
from app.admin import audit, bp
from app.i18n import days as plural_days

INVALID = f"Enter a whole number of days from {retention.MIN_DAYS} to {retention.MAX_DAYS}."


@dataclass(frozen=True)
class Form:
    """One retention form on the page: its policy, field, URL, audit action and words."""

    policy: retention.Policy
    field: str
    endpoint: str
    action: str
    name: str  # "Retention" / "Spam retention", starting the messages
    rows: str  # what a cleanup deletes, plural
    row: str  # singular


INQUIRIES = Form(retention.INBOX, "retention_days", "admin.change_retention", "retention_changed",
                 "Retention", "inquiries", "inquiry")
SPAM = Form(retention.SPAM, "spam_retention_days", "admin.change_spam_retention", "spam_retention_changed",
            "Spam retention", "spam inquiries", "spam inquiry")
UNCHANGED = "{name} unchanged: {days}."
CHANGED = "{name} set to {days} (was {current})."


@bp.context_processor
def retention_bounds() -> dict:
    """The bounds of the retention rule, for the form's limits and hint."""
    return {"min_days": retention.MIN_DAYS, "max_days": retention.MAX_DAYS}


@bp.get("/settings")
def settings():
    """Both retentions and the forms to change them."""
    return _page()


@bp.post("/settings")
def change_retention():
    """Save a new inquiry retention; a shorter one first shows what it would delete and asks to confirm."""
    return _change(INQUIRIES)


@bp.post("/settings/spam")
def change_spam_retention():
    """Save a new spam retention, with the same preview and confirmation."""
    return _change(SPAM)


def _page(form: Form | None = None, raw: str = "", error: str | None = None):
    """The page; ``form`` (with its ``raw`` value and ``error``) is the one just refused."""
    session = db.get_session()
    current = {each.field: retention.retention_days(session, each.policy) for each in (INQUIRIES, SPAM)}
    values = dict(current, **({form.field: raw} if form else {}))
    errors = {form.field: error} if form else {}
    return render_template("admin/settings.html", current=current, values=values, errors=errors)


def _change(form: Form):
    session = db.get_session()
    current = retention.retention_days(session, form.policy)
    raw = request.form.get(form.field, "")
    days = retention.parse(raw)
    if days is None:
        return _page(form, raw.strip(), INVALID), 422
    if days == current:
        flash(UNCHANGED.format(name=form.name, days=plural_days(days)))
        return redirect(url_for("admin.settings"), 303)
    if days < current and request.form.get("confirm") != "1":
        preview = retention.preview(session, days, form.policy)
        return render_template("admin/settings_confirm.html", current=current, preview=preview, form=form)
    retention.save(session, days, form.policy)
    audit.record(session, form.action, 0, f"{current} → {plural_days(days)}")
    session.commit()
    flash(CHANGED.format(name=form.name, days=plural_days(days), current=current))
    return redirect(url_for("admin.settings"), 303)
