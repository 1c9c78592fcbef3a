"""The Notifications page's chat card and delivery log: the site's chat URLs and each chat channel's digest,
and "Send again" for a failed notification.

The URLs saved here add to ``SUNDOWN_NOTIFY_URLS`` (shown read-only) and
to a form's own. Their secrets are never shown back whole: the editor shows
each saved URL masked (``Target.shown``), and a line left as shown keeps the
URL it stands for (``chaturls.edited``). The audit log says how many URLs
and which digest changed, never a URL.
"""

from __future__ import annotations

import json

from flask import abort, current_app, flash, redirect, request, url_for
from flask_babel import gettext as _
from flask_login import current_user

from app import audit
from app.admin import bp
from app.admin.notifications import page_of
from app.core import chaturls, db
from app.models import AuditAction
from app.notify import channels, digest
from app.notify import log as delivery_log
from app.notify import settings as notify_settings
from app.notify.settings import CHAT_DIGEST_KEY, URLS_KEY
from app.outbox import hook

CHAT = [channel for channel in channels.CHANNELS if channel.name in chaturls.SERVICES]


@bp.post("/notifications/chat")
def change_chat():
    """Save the site's chat URLs and each chat channel's digest; 422 naming the six for a URL of another."""
    session = db.get_session(write=True)
    current = notify_settings.load(session)
    errors: dict[str, str] = {}
    try:
        urls = chaturls.edited(request.form.get("chat_urls", ""), current.chat_urls, _environment_targets())
    except ValueError as error:
        errors["chat_urls"] = chaturls.message_of(error)
    modes = {channel.name: request.form.get(f"digest-{channel.name}", "0") for channel in CHAT}
    if any(value not in {str(each) for each in digest.CHAT_CHOICES} for value in modes.values()):
        errors["chat_digest"] = _("Choose each inquiry, one message an hour or one a day.")
    if errors:
        return page_of(errors=errors, chat_form=_masked_form(current)), 422
    chosen = {name: int(value) for name, value in modes.items() if int(value)}
    changes = _save(session, current, urls, chosen)
    if changes:
        audit.record(session, current_user, AuditAction.NOTIFICATIONS_CHANGED, 0, ", ".join(changes))
    session.commit()
    flash(_("Chat settings saved.") if changes else _("Chat settings unchanged."))
    return redirect(url_for("admin.notifications", _anchor="chat"), 303)


@bp.post("/notifications/deliveries/<int:delivery_id>/again")
def send_again(delivery_id: int):
    """Send a failed notification again, as a new delivery (the failed one stays in the log); audited."""
    session = db.get_session(write=True)
    row = delivery_log.send_again(session, delivery_id)
    if row is None:
        abort(404)
    audit.record(session, current_user, AuditAction.DELIVERY_SENT_AGAIN, 1, f"#{row.id} {row.channel}")
    session.commit()
    hook.wake()
    flash(_("%(channel)s notification queued again.", channel=channels.label_of(row.channel)))
    return redirect(url_for("admin.notifications", _anchor="log"), 303)


def _environment_targets() -> list[chaturls.Target]:
    return list(current_app.config["NOTIFY_URLS"] or ())


def _masked_form(current: notify_settings.Notifications) -> dict:
    """What the refused form shows again: the digests chosen, and the saved URLs masked, never what was typed
    (it may hold secrets)."""
    return request.form.to_dict(flat=True) | {"chat_urls": chaturls.shown_lines(current.chat_urls)}


def _save(session, current: notify_settings.Notifications, urls: list[str], chosen: dict[str, int]) -> list[str]:
    """Store what changed; the audit's words for it (a count of URLs, never one)."""
    changes = []
    if tuple(urls) != current.chat_urls:
        notify_settings.save(session, URLS_KEY, json.dumps(urls) if urls else None)
        changes.append(f"chat URLs {len(current.chat_urls)} → {len(urls)}")
    if chosen != current.chat_digest:
        notify_settings.save(session, CHAT_DIGEST_KEY, json.dumps(chosen, sort_keys=True) if chosen else None)
        listed = ", ".join(f"{name} {minutes} min" for name, minutes in chosen.items())
        changes.append("chat digest " + (listed or "off"))
    return changes
