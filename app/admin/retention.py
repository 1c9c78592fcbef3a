"""The Retention page: inquiries and spam, each shown, changed, and a shorter one confirmed against the preview."""

from __future__ import annotations

from dataclasses import dataclass

from flask import flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import ngettext
from flask_login import current_user

from app import audit
from app.admin import bp
from app.admin import forecast as forecast_view
from app.core import db
from app.forms import store as form_store
from app.inquiries import forecast_store, retention
from app.models import AuditAction
from app.notify import settings as notify_settings
from app.notify import summary


@dataclass(frozen=True)
class Form:
    """One retention form on the page: its policy, field, URL, audit action and words."""

    policy: retention.Policy
    field: str
    endpoint: str
    action: AuditAction
    spam: bool  # chooses the sentences the messages use


INQUIRIES = Form(retention.INBOX, "retention_days", "admin.change_retention", AuditAction.RETENTION_CHANGED, False)
SPAM = Form(
    retention.SPAM, "spam_retention_days", "admin.change_spam_retention", AuditAction.SPAM_RETENTION_CHANGED, True
)


@bp.get("/settings")
def settings_moved():
    """The Retention page's first address: bookmarks keep working."""
    return redirect(url_for("admin.retention_page"), 301)


@bp.get("/retention")
def retention_page():
    """Both retentions and the forms to change them."""
    return _page()


@bp.post("/retention")
def change_retention():
    """Save a new inquiry retention; a shorter one first shows what it would delete and asks to confirm."""
    return _change(INQUIRIES)


@bp.post("/retention/spam")
def change_spam_retention():
    """Save a new spam retention, with the same preview and confirmation."""
    return _change(SPAM)


@bp.post("/retention/summary")
def change_retention_summary():
    """Turn the weekly e-mail of what the next seven days delete on or off (``app.notify.summary``)."""
    session = db.get_session(write=True)
    chosen = request.form.get("weekly_summary") == "1"
    notify_settings.save(session, summary.KEY, "1" if chosen else None)
    audit.record(
        session, current_user, AuditAction.NOTIFICATIONS_CHANGED, 0, f"weekly retention summary: {_on_off(chosen)}"
    )
    session.commit()
    flash(_("Weekly summary turned on.") if chosen else _("Weekly summary turned off."))
    return redirect(url_for("admin.retention_page"), 303)


def _on_off(chosen: bool) -> str:
    return "on" if chosen else "off"  # stored words stay English: the audit log is a record


def _page(form: Form | None = None, raw: str = "", error: str | None = None):
    """The page; ``form`` (with its ``raw`` value and ``error``) is the one just refused."""
    session = db.get_session()
    current = {each.field: retention.retention_days(session, each.policy) for each in (INQUIRIES, SPAM)}
    values = dict(current, **({form.field: raw} if form else {}))
    errors = {form.field: error} if form else {}
    forms = form_store.all_forms(session)
    own = [form for form in forms if form.retention_days or form.spam_retention_days]
    snapshot = forecast_store.current(session)
    by_form = (
        [(form, snapshot.forecast.line(form.id, "inbox"), snapshot.forecast.line(form.id, "spam")) for form in forms]
        if snapshot
        else []
    )
    return render_template(
        "admin/retention.html",
        current=current,
        values=values,
        errors=errors,
        own=own,
        fc=forecast_view.view(snapshot),
        by_form=by_form,
        weekly_summary=summary.enabled(session),
    )


def _change(form: Form):
    session = db.get_session(write=True)
    current = retention.retention_days(session, form.policy)
    raw = request.form.get(form.field, "")
    days = retention.parse(raw)
    if days is None:
        return _page(form, raw.strip(), _invalid()), 422
    if days == current:
        flash(_unchanged(form, days))
        return redirect(url_for("admin.retention_page"), 303)
    if days < current and request.form.get("confirm") != "1":
        preview = retention.preview(session, days, form.policy)
        return render_template("admin/retention_confirm.html", current=current, preview=preview, form=form)
    retention.save(session, days, form.policy)
    # Stored words stay English whatever the admin's language (the audit log is a record).
    change = f"{current} → {days} day" if days == 1 else f"{current} → {days} days"
    audit.record(session, current_user, form.action, 0, change)
    session.commit()
    flash(_changed(form, days, current))
    return redirect(url_for("admin.retention_page"), 303)


def _invalid() -> str:
    return _("Enter a whole number of days from %(min)s to %(max)s.", min=retention.MIN_DAYS, max=retention.MAX_DAYS)


def _unchanged(form: Form, days: int) -> str:
    if form.spam:
        return ngettext("Spam retention unchanged: %(num)s day.", "Spam retention unchanged: %(num)s days.", days)
    return ngettext("Retention unchanged: %(num)s day.", "Retention unchanged: %(num)s days.", days)


def _changed(form: Form, days: int, current: int) -> str:
    if form.spam:
        return ngettext(
            "Spam retention set to %(num)s day (was %(current)s).",
            "Spam retention set to %(num)s days (was %(current)s).",
            days,
            current=current,
        )
    return ngettext(
        "Retention set to %(num)s day (was %(current)s).",
        "Retention set to %(num)s days (was %(current)s).",
        days,
        current=current,
    )
