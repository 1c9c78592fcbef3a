"""The webhook channel: signed per Standard Webhooks, ``POST`` JSON, signed afresh at each attempt.

``webhook-id`` is the delivery's idempotency key, the same on every attempt;
``webhook-timestamp`` and ``webhook-signature`` are made at send time (the
``standardwebhooks`` package), since receivers refuse old timestamps. A 2xx
answer is success, 410 Gone a permanent failure (the receiver says the URL
is gone for good: no retry), any other answer a failure retried later;
redirects are not followed; 5 s for the connection and each read, 10 s for
a whole delivery.

The host is resolved at send time and the connection goes to the address
that was checked (no second lookup a DNS change could redirect): loopback,
link-local, private and other non-public addresses are refused unless
``SUNDOWN_WEBHOOK_ALLOW_PRIVATE`` is set. The deliveries of one batch share a
kept-alive connection per URL (``Poster``).
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import ipaddress
import json
import socket
import ssl
import threading
from datetime import datetime
from typing import cast
from urllib.parse import urlsplit

from flask import current_app
from flask_babel import lazy_gettext as _l
from standardwebhooks import Webhook

from app.models import DeliveryChannel
from app.notify.message import Notice, webhook_payload
from app.notify.settings import Notifications
from app.outbox.handlers import Batch
from app.outbox.store import Outcome

TIMEOUT = 5.0  # seconds: connect, and each read
# Seconds one delivery may take in all: a receiver that trickles its answer a byte at a time never lets a
# read time out, so past this the connection is shut and the attempt counts as timed out.
DEADLINE = 10.0
MAX_ANSWER = 64 * 1024  # bytes of a receiver's answer read; a longer one closes the connection
GONE = 410  # the receiver's word that the URL will never take a delivery again


class Refused(Exception):
    """The URL's host resolves to an address Sundown does not send to."""


def headers(secret: str, key: str, now: datetime, body: str) -> dict[str, str]:
    """The Standard Webhooks headers for ``body``, signed at ``now``."""
    return {
        "Content-Type": "application/json",
        "User-Agent": "Sundown",
        "webhook-id": key,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Webhook(secret).sign(key, now, body),
    }


def send(url: str, secret: str, key: str, payload: dict, now: datetime) -> Outcome:
    """POST ``payload`` to ``url`` on a connection of its own; the outcome."""
    with Poster(url, secret) as poster:
        return poster.send(key, payload, now)


class Poster:
    """One connection to the webhook for the deliveries of a pass, kept alive between them.

    The host is resolved and checked when the connection opens. A connection
    the receiver closed while idle is opened again once for the same
    delivery (the receiver drops a repeat by its ``webhook-id``); any other
    failure closes it, and the next delivery starts afresh.
    """

    def __init__(self, url: str, secret: str) -> None:
        self._parts = urlsplit(url)
        self._secret = secret
        self._connection: http.client.HTTPConnection | None = None
        self._expired = False

    def __enter__(self) -> Poster:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def send(self, key: str, payload: dict, now: datetime) -> Outcome:
        """POST one delivery's ``payload``; the outcome, with a reason free of personal data."""
        body = json.dumps(payload, separators=(",", ":"))
        self._expired = False
        watchdog = threading.Timer(DEADLINE, self._expire)
        watchdog.start()
        try:
            try:
                reused = self._connection is not None
                status = self._post(key, body, now)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                if not reused or self._expired:
                    raise
                self.close()
                status = self._post(key, body, now)
        except Refused as error:
            return Outcome(str(error))
        except TimeoutError:
            self.close()
            return Outcome("webhook timed out")
        except (OSError, http.client.HTTPException) as error:
            self.close()
            return Outcome("webhook timed out" if self._expired else f"webhook {type(error).__name__}")
        finally:
            watchdog.cancel()
        if self._expired:
            self.close()
            return Outcome("webhook timed out")
        if 200 <= status < 300:
            return Outcome()
        return Outcome(f"webhook HTTP {status}", permanent=status == GONE)

    def _expire(self) -> None:
        """Past ``DEADLINE``: shut the socket, so the read blocked on it ends at once."""
        self._expired = True
        sock = self._connection.sock if self._connection is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """Close the connection, if one is open."""
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def _post(self, key: str, body: str, now: datetime) -> int:
        parts = self._parts
        if self._connection is None:
            host = cast(str, parts.hostname)  # parsing.parse_webhook_url took only a URL with a host
            address = resolve(host, parts.port or (443 if parts.scheme == "https" else 80))
            self._connection = connection(parts.scheme, host, address)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._connection.request("POST", path, body.encode(), headers(self._secret, key, now, body))
        response = self._connection.getresponse()
        response.read(MAX_ANSWER)  # the answer is not used; read so the connection can carry the next
        if response.will_close or not response.isclosed():  # the receiver closes it, or answered at length
            self.close()
        return response.status


def resolve(host: str, port: int) -> tuple[str, int]:
    """The first address ``host`` resolves to, refused unless public (or private ones are allowed)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    allow_private = current_app.config["WEBHOOK_ALLOW_PRIVATE"]
    for _family, _type, _proto, _name, sockaddr in infos:
        if allow_private or is_public(ipaddress.ip_address(sockaddr[0])):
            return str(sockaddr[0]), int(sockaddr[1])  # an IPv4 or IPv6 address (SOCK_STREAM's families)
    raise Refused("webhook host resolves to a private address (SUNDOWN_WEBHOOK_ALLOW_PRIVATE is off)")


# IPv6 ranges that carry an IPv4 address a gateway may forward to: NAT64 (RFC 6052, and the local-use
# 64:ff9b:1::/48 of RFC 8215), 6to4 (2002::/16) and the deprecated IPv4-compatible ::a.b.c.d.
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
_SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")
_COMPATIBLE = ipaddress.IPv6Network("::/96")


def is_public(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether ``ip`` is a global address, and so is any IPv4 address it carries (mapped, NAT64, 6to4,
    IPv4-compatible): ``::127.0.0.1`` or ``64:ff9b::10.0.0.1`` reach private hosts too."""
    if not ip.is_global:
        return False
    if isinstance(ip, ipaddress.IPv4Address):
        return True
    carried = ip.ipv4_mapped or ip.sixtofour
    if carried is None and (any(ip in network for network in _NAT64) or ip in _COMPATIBLE):
        carried = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return carried is None or carried.is_global


class _PinnedHTTP(http.client.HTTPConnection):
    """HTTP to an address resolved and checked beforehand; the Host header keeps the name."""

    def __init__(self, host: str, address: tuple[str, int]):
        super().__init__(host, address[1], timeout=TIMEOUT)
        self.address = address

    def connect(self) -> None:
        self.sock = _no_delay(socket.create_connection(self.address, self.timeout))


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to a checked address, the certificate verified for the host name."""

    def __init__(self, host: str, address: tuple[str, int]):
        self.tls = _verifying_context()
        super().__init__(host, address[1], timeout=TIMEOUT, context=self.tls)
        self.address = address

    def connect(self) -> None:
        sock = _no_delay(socket.create_connection(self.address, self.timeout))
        self.sock = self.tls.wrap_socket(sock, server_hostname=self.host)


def _no_delay(sock: socket.socket) -> socket.socket:
    """Send each write at once. ``http.client`` writes the headers and the body separately; on a
    kept-alive connection Nagle's algorithm then holds the body until the receiver's delayed
    acknowledgement of the headers, a delay far longer than the request itself
    (figures: docs/benchmarks.md, "Figures behind the code")."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


@functools.lru_cache(maxsize=1)
def _verifying_context() -> ssl.SSLContext:
    """The system's CAs, loaded once per process: loading them is slow next to a send
    (figures: docs/benchmarks.md, "Figures behind the code")."""
    return ssl.create_default_context()


def connection(scheme: str, host: str, address: tuple[str, int]) -> http.client.HTTPConnection:
    """A connection to ``address`` (resolved and checked by ``resolve``) for ``host``, TLS for ``https``."""
    return (_PinnedHTTPS if scheme == "https" else _PinnedHTTP)(host, address)


class Hook:
    """Notifications to the webhook in force (the form's own, else the site's), on the batch's connection
    to its URL."""

    name = DeliveryChannel.WEBHOOK
    label = _l("Webhook")

    def configured(self, settings: Notifications) -> bool:
        """Whether there are a URL and a signing secret."""
        return bool(settings.webhook_url and settings.secret)

    def send(self, notice: Notice, settings: Notifications, now: datetime, batch: Batch) -> Outcome:
        """POST the notice's payload on the batch's connection to the URL; the outcome."""
        url, secret = settings.webhook_url, settings.secret
        if not (url and secret):  # not self.configured(settings), spelled out so the types narrow
            return Outcome("webhook not configured")
        poster = batch.connection((self.name, url), lambda: Poster(url, secret))
        return poster.send(notice.delivery.idempotency_key, webhook_payload(notice, now), now)


CHANNEL = Hook()
