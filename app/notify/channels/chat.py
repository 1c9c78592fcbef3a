"""What the six chat channels share: their URLs, and one guarded request each.

A channel's URLs are those of its service in force (``Notifications.chat``):
``SUNDOWN_NOTIFY_URLS``, the ones saved on the Notifications page, and the
inquiry's form's own; at most ``chaturls.PER_SERVICE`` of them, so a
delivery ends within its lease.

Each service is a module (``slack``, ``discord``, ``teams``, ``telegram``,
``matrix``, ``ntfy``) giving a ``ChatChannel`` the request its API documents
for a notice; the channel sends it to every URL of that service. The request
goes through the webhooks' guard (``app.notify.channels.webhook``): the host
resolved at send time, a private address refused unless
``SUNDOWN_WEBHOOK_ALLOW_PRIVATE``, the connection pinned to the address
checked, 5 s per read and ``DEADLINE`` for the whole request, redirects not
followed. ``SUNDOWN_NOTIFY_API_BASES`` replaces a service's host (a proxy, or
a local receiver). Reasons recorded never carry a URL: its path holds secrets.

The answer: 2xx is success; 429 is retried no sooner than its
``Retry-After``; the statuses a service gives a revoked or wrong token or a
deleted webhook (``permanent``) fail the delivery at once; anything else is
retried on the outbox's schedule.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

from flask import current_app

from app.core import clock
from app.core.chaturls import PER_SERVICE, Target
from app.models import DeliveryChannel
from app.notify.channels import webhook
from app.notify.message import Notice
from app.notify.settings import Notifications
from app.outbox.handlers import Batch
from app.outbox.store import MAX_DELAY, Outcome

REVOKED = frozenset({401, 403, 404, 410})  # a wrong or revoked token, a deleted webhook or room: no retry helps
TOO_MANY = 429


@dataclass(frozen=True)
class Request:
    """What a service is sent: the method, what follows the target's path, the JSON body, extra headers."""

    method: str
    body: dict
    path: str = ""
    headers: dict[str, str] = field(default_factory=dict)


class ChatChannel:
    """A chat service as a channel: configured when a URL for it is in force."""

    def __init__(
        self,
        name: DeliveryChannel,
        label: str,
        build: Callable[[Notice, Target], Request],
        permanent: frozenset[int] = REVOKED,
    ) -> None:
        self.name = name
        self.label = label
        self.build = build
        self.permanent = permanent

    def targets(self, settings: Notifications) -> list[Target]:
        """This service's URLs in force under ``settings``, in order (the first ``PER_SERVICE``)."""
        return [each for each in settings.chat if each.service == self.name][:PER_SERVICE]

    def configured(self, settings: Notifications) -> bool:
        """Whether a URL for this service is in force."""
        return any(each.service == self.name for each in settings.chat)

    def send(self, notice: Notice, settings: Notifications, now: datetime, batch: Batch) -> Outcome:
        """The notice to each URL of this service; the first failure (permanent only when every one is)."""
        targets = self.targets(settings)
        if not targets:
            return Outcome(f"{self.name} not configured")
        failed = [
            outcome
            for outcome in (send(self.name, target, self.build(notice, target), self.permanent) for target in targets)
            if not outcome.ok
        ]
        if not failed:
            return Outcome()
        return Outcome(
            failed[0].error,
            permanent=all(each.permanent for each in failed),
            retry_after=max((each.retry_after or 0 for each in failed), default=None) or None,
        )


def send(service: str, target: Target, request: Request, permanent: frozenset[int]) -> Outcome:
    """One request to ``target`` through the guard; its outcome, with a reason free of secrets."""
    base = urlsplit(current_app.config["NOTIFY_API_BASES"].get(service, target.base))
    headers = {"Content-Type": "application/json", "User-Agent": "Sundown", **request.headers}
    if target.token:
        headers["Authorization"] = target.token
    try:
        address = webhook.resolve(base.hostname, base.port or (443 if base.scheme == "https" else 80))
    except webhook.Refused:
        return Outcome(f"{service} host resolves to a private address (SUNDOWN_WEBHOOK_ALLOW_PRIVATE is off)")
    except OSError:
        return Outcome(f"{service} host not found")
    connection = webhook.connection(base.scheme, base.hostname, address)
    expired = threading.Event()
    watchdog = threading.Timer(webhook.DEADLINE, _expire, (connection, expired))
    watchdog.start()
    try:
        connection.request(
            request.method, target.path + request.path, json.dumps(request.body, ensure_ascii=False).encode(), headers
        )
        response = connection.getresponse()
        response.read(webhook.MAX_ANSWER)
    except (OSError, http.client.HTTPException) as error:
        timed_out = expired.is_set() or isinstance(error, TimeoutError)
        return Outcome(f"{service} timed out" if timed_out else f"{service} {type(error).__name__}")
    finally:
        watchdog.cancel()
        connection.close()
    return answer(service, response.status, response.getheader("Retry-After"), permanent)


def _expire(connection: http.client.HTTPConnection, expired: threading.Event) -> None:
    """Past the deadline: shut the socket, so a read blocked on a trickling answer ends at once."""
    expired.set()
    if connection.sock is not None:
        with contextlib.suppress(OSError):
            connection.sock.shutdown(socket.SHUT_RDWR)


def answer(service: str, status: int, retry_after: str | None, permanent: frozenset[int]) -> Outcome:
    """The outcome of an answer with ``status`` (and the ``Retry-After`` header of a 429)."""
    if 200 <= status < 300:
        return Outcome()
    if status == TOO_MANY:
        return Outcome(f"{service} HTTP 429", retry_after=wait_of(retry_after))
    return Outcome(f"{service} HTTP {status}", permanent=status in permanent)


def wait_of(retry_after: str | None, now: datetime | None = None) -> float | None:
    """``Retry-After`` in seconds: a number of seconds or an HTTP date; at most the outbox's longest wait."""
    if not retry_after:
        return None
    try:
        seconds = float(retry_after)
    except ValueError:
        try:
            moment = parsedate_to_datetime(retry_after)
        except (TypeError, ValueError):
            return None
        seconds = (moment - (now or clock.now())).total_seconds()
    return min(max(seconds, 0.0), MAX_DELAY.total_seconds())


def text_of(lines: list[str], url: str) -> str:
    """The lines and the link, as plain text."""
    return "\n".join([*lines, url])
