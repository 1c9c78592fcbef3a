"""Notification settings: the operator's in the environment, the admins' in ``preferences``.

``SUNDOWN_NOTIFY_EMAILS``, ``SUNDOWN_WEBHOOK_URL`` and ``SUNDOWN_WEBHOOK_SECRET``,
when set, take precedence over what admins saved on the Notifications page
(which then shows them read-only). Chat URLs add up instead: those of
``SUNDOWN_NOTIFY_URLS`` (shown read-only), the site's saved ones, and an
inquiry's form's own (``Form.notify_urls``). The parsers live in ``app.core.parsing``, which
``app.config`` also checks the environment with: what starts is what is used.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from flask import current_app
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.core import clock
from app.core.chaturls import Target, parse_stored
from app.core.parsing import SECRET_PREFIX
from app.models import Preference
from app.notify import state

SECRET_BYTES = 32
# How long a process enqueues new inquiries under the settings it read: every
# submission asks, and reading them in its write transaction added a measurable cost to
# every one on both databases (docs/notifications.md; figures: docs/benchmarks.md, "Figures behind the code").
# A change saved by another process or replica applies here this much later.
FRESH_FOR = timedelta(seconds=1)

# The keys of the admins' settings in the ``preferences`` table.
EMAILS_KEY, WEBHOOK_KEY, SECRET_KEY = "notify_emails", "notify_webhook_url", "notify_webhook_secret"
CONTENT_KEY, DIGEST_KEY = "notify_include_content", "notify_digest_minutes"
URLS_KEY, CHAT_DIGEST_KEY = "notify_urls", "notify_chat_digest"  # a JSON list; a JSON object: minutes by channel
KEYS = (EMAILS_KEY, WEBHOOK_KEY, SECRET_KEY, CONTENT_KEY, DIGEST_KEY, URLS_KEY, CHAT_DIGEST_KEY)
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
    chat: tuple[Target, ...] = ()  # the chat URLs in force: the environment's, the site's, the form's
    chat_urls: tuple[str, ...] = ()  # the site's saved chat URLs (secrets in them: never shown whole)
    chat_digest: dict[str, int] = field(default_factory=dict)  # minutes per chat channel; 0 or absent: each

    def for_form(self, form: Any) -> Notifications:
        """The settings for an inquiry to ``form``: its own recipients and webhook where it sets them
        (``Form.notify_emails``, ``Form.webhook_url``), the site's otherwise; its chat URLs besides the
        site's (``Form.notify_urls``); the same signing secret."""
        own_urls = getattr(form, "notify_urls", None)
        if form is None or (form.notify_emails is None and form.webhook_url is None and not own_urls):
            return self
        return replace(
            self,
            emails=list(form.notify_emails) if form.notify_emails is not None else self.emails,
            webhook_url=form.webhook_url or self.webhook_url,
            chat=self.chat + parse_stored(tuple(own_urls or ())),
        )


def load(session: Session) -> Notifications:
    """The settings in force: the environment's, else what admins saved."""
    config = current_app.config
    rows = session.execute(select(Preference.key, Preference.value).where(Preference.key.in_(KEYS)))
    stored = {key: value for key, value in rows}
    from_env = frozenset(key for key, name in ENV_KEYS.items() if config.get(name))
    emails = config["NOTIFY_EMAILS"] if EMAILS_KEY in from_env else json.loads(stored.get(EMAILS_KEY) or "[]")
    chat_urls = tuple(json.loads(stored.get(URLS_KEY) or "[]"))
    return Notifications(
        emails=list(emails),
        webhook_url=config["WEBHOOK_URL"] if WEBHOOK_KEY in from_env else stored.get(WEBHOOK_KEY) or None,
        secret=config["WEBHOOK_SECRET"] if SECRET_KEY in from_env else stored.get(SECRET_KEY) or None,
        include_content=stored.get(CONTENT_KEY) == "1",
        digest_minutes=int(stored.get(DIGEST_KEY) or 0),
        from_environment=from_env,
        chat=tuple(config["NOTIFY_URLS"] or ()) + parse_stored(chat_urls),
        chat_urls=chat_urls,
        chat_digest={str(key): int(value) for key, value in json.loads(stored.get(CHAT_DIGEST_KEY) or "{}").items()},
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
    session.execute(delete(Preference).where(Preference.key == key))
    if value is not None:
        session.add(Preference(key=key, value=value))
