"""Notification settings: the operator's in the environment, the admins' in ``notification_settings``.

``SUNDOWN_NOTIFY_EMAILS``, ``SUNDOWN_WEBHOOK_URL`` and ``SUNDOWN_WEBHOOK_SECRET``,
when set, take precedence over what admins saved on the Notifications page
(which then shows them read-only). The parsers live in ``app.core.parsing``, which
``app.config`` also checks the environment with: what starts is what is used.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from flask import current_app
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.core import clock
from app.core.parsing import SECRET_PREFIX
from app.models import NotificationSetting
from app.notify import state

SECRET_BYTES = 32
# How long a process enqueues new inquiries under the settings it read: every
# submission asks, and reading ``settings`` in its write transaction added a measurable cost to
# every one on both databases (docs/notifications.md; figures: docs/benchmarks.md, "Figures behind the code").
# A change saved by another process or replica applies here this much later.
FRESH_FOR = timedelta(seconds=1)

# The keys of the admins' settings in ``notification_settings`` (not ``settings``: the cleanup's claim is there,
# and a request that finds no cleanup due must not touch it).
EMAILS_KEY, WEBHOOK_KEY, SECRET_KEY = "notify_emails", "notify_webhook_url", "notify_webhook_secret"
CONTENT_KEY, DIGEST_KEY = "notify_include_content", "notify_digest_minutes"
KEYS = (EMAILS_KEY, WEBHOOK_KEY, SECRET_KEY, CONTENT_KEY, DIGEST_KEY)
ENV_KEYS = {EMAILS_KEY: "NOTIFY_EMAILS", WEBHOOK_KEY: "WEBHOOK_URL", SECRET_KEY: "WEBHOOK_SECRET"}


def new_secret() -> str:
    """A fresh signing secret from the app's randomness."""
    return SECRET_PREFIX + base64.b64encode(clock.random_bytes(SECRET_BYTES)).decode()


@dataclass(frozen=True)
class Notifications:
    """The settings in force: each value, and which came from the environment (read-only)."""

    emails: list[str]
    webhook_url: str | None
    secret: str | None
    include_content: bool
    digest_minutes: int
    from_environment: frozenset[str]

    def for_form(self, form: Any) -> Notifications:
        """The settings for an inquiry to ``form``: its own recipients and webhook where it sets them
        (``Form.notify_emails``, ``Form.webhook_url``), the site's otherwise; the same signing secret."""
        if form is None or (form.notify_emails is None and form.webhook_url is None):
            return self
        return replace(
            self,
            emails=list(form.notify_emails) if form.notify_emails is not None else self.emails,
            webhook_url=form.webhook_url or self.webhook_url,
        )


def load(session: Session) -> Notifications:
    """The settings in force: the environment's, else what admins saved."""
    config = current_app.config
    rows = session.execute(select(NotificationSetting.key, NotificationSetting.value))
    stored = {key: value for key, value in rows}
    from_env = frozenset(key for key, name in ENV_KEYS.items() if config.get(name))
    emails = config["NOTIFY_EMAILS"] if EMAILS_KEY in from_env else json.loads(stored.get(EMAILS_KEY) or "[]")
    return Notifications(
        emails=list(emails),
        webhook_url=config["WEBHOOK_URL"] if WEBHOOK_KEY in from_env else stored.get(WEBHOOK_KEY) or None,
        secret=config["WEBHOOK_SECRET"] if SECRET_KEY in from_env else stored.get(SECRET_KEY) or None,
        include_content=stored.get(CONTENT_KEY) == "1",
        digest_minutes=int(stored.get(DIGEST_KEY) or 0),
        from_environment=from_env,
    )


def for_new_inquiries(session: Session) -> Notifications:
    """The settings a new inquiry is enqueued under: ``load``, read again once ``FRESH_FOR`` has passed
    in this process, or at once after this process saved a change."""
    now = clock.now()
    memory = state.current()
    if memory.settings is None or not now - FRESH_FOR <= memory.settings[0] <= now:
        memory.settings = (now, load(session))
    return memory.settings[1]


def save(session: Session, key: str, value: str | None) -> None:
    """Store one admin setting (None removes it); the caller audits and commits. This process reads the
    settings again for the next new inquiry."""
    state.current().settings = None
    session.execute(delete(NotificationSetting).where(NotificationSetting.key == key))
    if value is not None:
        session.add(NotificationSetting(key=key, value=value))
