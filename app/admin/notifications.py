"""The Notifications page: recipients, webhook, content and digest; the signing secret; a test; health;
the chat card and the delivery log (their actions: ``app.admin.chat``).

Settings set in the environment (``SUNDOWN_NOTIFY_EMAILS``, ``SUNDOWN_WEBHOOK_URL``,
``SUNDOWN_WEBHOOK_SECRET``) take precedence and are shown read-only. Every
change is in the audit log, by what changed, never by address or secret.
The secret is shown once, in the answer to the POST that made it, and never
again (it is not put in a flash message, which lives in the cookie).
"""

from __future__ import annotations

import json

from flask import abort, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_login import current_user

from app import audit
from app.admin import bp
from app.core import chaturls, db, parsing
from app.models import AuditAction, Delivery, DeliveryKind, DeliveryStatus
from app.notify import channels, digest, health
from app.notify import log as delivery_log
from app.notify import settings as notify_settings
from app.notify.channels import email
from app.notify.settings import CONTENT_KEY, DIGEST_KEY, EMAILS_KEY, SECRET_KEY, WEBHOOK_KEY
from app.outbox import deliver, store

MAX_DIGEST_MINUTES = 7 * 24 * 60


def deliveries_failing() -> bool:
    """Whether the admin pages' banner says deliveries are failing (one indexed query, when a page asks)."""
    return health.failing(db.get_session())


@bp.get("/notifications")
def notifications():
    """The settings in force, the secret, the test buttons, the delivery health and the log (``?page=``,
    ``?channel=``: one channel's deliveries; 404 for a channel Sundown does not have)."""
    channel = request.args.get("channel") or None
    if channel is not None and channels.named(channel) is None:
        abort(404)
    return page_of(log_page=request.args.get("page", 1, type=int), log_channel=channel)


@bp.post("/notifications")
def change_notifications():
    """Save the admin settings (those not set in the environment); 422 with a message per bad field."""
    session = db.get_session(write=True)
    current = notify_settings.load(session)
    values, errors = _parse_form(current)
    if errors:
        return page_of(form=request.form, errors=errors), 422
    changes = _save_changes(session, current, values)
    if changes:
        audit.record(session, current_user, AuditAction.NOTIFICATIONS_CHANGED, 0, ", ".join(changes))
    session.commit()
    flash(_("Notification settings saved.") if changes else _("Notification settings unchanged."))
    return redirect(url_for("admin.notifications"), 303)


@bp.post("/notifications/secret")
def rotate_secret():
    """Make a new signing secret; replacing one first asks to confirm. The new secret is shown once."""
    session = db.get_session(write=True)
    current = notify_settings.load(session)
    if SECRET_KEY in current.from_environment:
        flash(_("The signing secret is set in the environment (SUNDOWN_WEBHOOK_SECRET)."), "error")
        return redirect(url_for("admin.notifications"), 303)
    if current.secret and request.form.get("confirm") != "1":
        return render_template("admin/notifications_confirm_rotate.html")
    secret = notify_settings.new_secret()
    notify_settings.save(session, SECRET_KEY, secret)
    audit.record(
        session,
        current_user,
        AuditAction.WEBHOOK_SECRET_ROTATED if current.secret else AuditAction.WEBHOOK_SECRET_CREATED,
    )
    session.commit()
    return page_of(new_secret=secret)


@bp.post("/notifications/test")
def send_test():
    """Send a test notification on every channel in force (or on the one ``channel`` names), through the
    outbox, and show each outcome."""
    session = db.get_session(write=True)
    names = channels.in_force(notify_settings.load(session))
    if request.form.get("channel"):
        names = [name for name in names if name == request.form["channel"]]
    if not names:
        flash(_("Nothing to test: set e-mail recipients (with an SMTP server) or a webhook URL and secret."), "warning")
        return redirect(url_for("admin.notifications"), 303)
    ids = store.add(session, [(None, name, DeliveryKind.TEST) for name in names])
    audit.record(session, current_user, AuditAction.NOTIFICATION_TEST, len(ids))
    session.commit()
    session.close()  # no transaction open while sending
    for delivery_id, name in zip(ids, names, strict=True):
        _flash_test_outcome(delivery_id, name, deliver.deliver_one(delivery_id))
    return redirect(url_for("admin.notifications"), 303)


def _flash_test_outcome(delivery_id: int, channel: str, status: str | None) -> None:
    name = channels.label_of(channel)
    if status == DeliveryStatus.DONE:
        flash(_("%(channel)s test delivered.", channel=name))
        return
    if status is None:  # a pass after another response took it first: its outcome is in the delivery log
        flash(_("%(channel)s test is being sent: its outcome will show in the delivery log.", channel=name), "warning")
        return
    row = db.get_session().get(Delivery, delivery_id)
    reason = (row.last_error if row is not None else None) or "?"
    if status == DeliveryStatus.PENDING:
        flash(_("%(channel)s test failed: %(reason)s. It will be retried.", channel=name, reason=reason), "error")
        return
    # A permanent answer (a 404, a revoked token, a refused address) ends the delivery: no retry would mend it.
    flash(
        _(
            "%(channel)s test failed: %(reason)s. It will not be retried: check the channel's address or token.",
            channel=name,
            reason=reason,
        ),
        "error",
    )


def _parse_form(current: notify_settings.Notifications) -> tuple[dict, dict]:
    """The submitted values, checked; and an error message per bad field."""
    values: dict = {}
    errors: dict = {}
    if EMAILS_KEY not in current.from_environment:
        try:
            values[EMAILS_KEY] = parsing.parse_emails(request.form.get("emails", ""))
        except ValueError:
            errors["emails"] = _(
                "Enter e-mail addresses separated by commas or lines (at most %(n)s).", n=parsing.MAX_RECIPIENTS
            )
    if WEBHOOK_KEY not in current.from_environment:
        raw = request.form.get("webhook_url", "").strip()
        try:
            values[WEBHOOK_KEY] = parsing.parse_webhook_url(raw) if raw else None
        except ValueError:
            errors["webhook_url"] = _("Enter an http:// or https:// URL, or leave it empty.")
    values[CONTENT_KEY] = request.form.get("include_content") == "1"
    raw_digest = request.form.get("digest_minutes", "0").strip() or "0"
    if raw_digest.isascii() and raw_digest.isdigit() and len(raw_digest) <= 6 and int(raw_digest) <= MAX_DIGEST_MINUTES:
        values[DIGEST_KEY] = int(raw_digest)
    else:
        errors["digest_minutes"] = _(
            "Enter a whole number of minutes from 0 (no digest) to %(max)s.", max=MAX_DIGEST_MINUTES
        )
    return values, errors


def _save_changes(session, current: notify_settings.Notifications, values: dict) -> list[str]:
    """Store what changed; the audit's words for it (no addresses, no URLs)."""
    changes = []
    if EMAILS_KEY in values and values[EMAILS_KEY] != current.emails:
        notify_settings.save(session, EMAILS_KEY, json.dumps(values[EMAILS_KEY]) if values[EMAILS_KEY] else None)
        changes.append(f"recipients {len(current.emails)} → {len(values[EMAILS_KEY])}")
    if WEBHOOK_KEY in values and values[WEBHOOK_KEY] != current.webhook_url:
        notify_settings.save(session, WEBHOOK_KEY, values[WEBHOOK_KEY])
        changes.append("webhook URL " + ("set" if values[WEBHOOK_KEY] else "removed"))
    if values[CONTENT_KEY] != current.include_content:
        notify_settings.save(session, CONTENT_KEY, "1" if values[CONTENT_KEY] else None)
        changes.append("content " + ("included" if values[CONTENT_KEY] else "left out"))
    if values[DIGEST_KEY] != current.digest_minutes:
        notify_settings.save(session, DIGEST_KEY, str(values[DIGEST_KEY]) if values[DIGEST_KEY] else None)
        changes.append(f"digest {current.digest_minutes} → {values[DIGEST_KEY]} min")
    return changes


def page_of(
    form=None,
    errors: dict | None = None,
    new_secret: str | None = None,
    log_page: int = 1,
    log_channel: str | None = None,
    chat_form: dict | None = None,
):
    """The Notifications page (with a refused form's values and errors, or a new secret shown once)."""
    session = db.get_session()
    current = notify_settings.load(session)
    return render_template(
        "admin/notifications.html",
        current=current,
        form=form,
        errors=errors or {},
        new_secret=new_secret,
        channels=health.per_channel(session),
        in_force=channels.in_force(current),
        log=delivery_log.page(session, log_page, log_channel),
        log_channel=log_channel,
        chat_channels=[channel for channel in channels.CHANNELS if channel.name in chaturls.SERVICES],
        chat_choices=digest.CHAT_CHOICES,
        chat_form=chat_form,
        chat_shown=chaturls.shown_lines(current.chat_urls),
        channel_label=channels.label_of,
        DeliveryStatus=DeliveryStatus,
        emails_text="\n".join(current.emails),
        smtp_ready=email.configured(),
    )
