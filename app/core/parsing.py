"""Pure parsers of settings, and the error a bad setting stops the app with.

A leaf: it imports nothing from the app, so ``app.config`` checks every
setting at start with the same parsers the features use at run time (what
starts is what is used) without importing the features themselves. Each
parser returns the value normalised or raises ``ValueError``.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from email_validator import EmailNotValidError, validate_email

SECRET_PREFIX = "whsec_"
MAX_RECIPIENTS = 20
SMTP_PORTS = {"smtp": 25, "smtp+starttls": 587, "smtps": 465}


class ConfigurationError(RuntimeError):
    """A setting with no safe default is missing or wrong; the message says which."""


@dataclass(frozen=True)
class SmtpServer:
    """Where e-mail goes: ``security`` is ``plain``, ``starttls`` or ``tls`` (smtps)."""

    host: str
    port: int
    security: str
    username: str | None
    password: str | None


def parse_smtp_url(url: str) -> SmtpServer:
    """``smtp://host:25``, ``smtp+starttls://user:pass@host:587`` or ``smtps://user:pass@host:465``."""
    parts = urlsplit(url)
    if parts.scheme not in SMTP_PORTS or not parts.hostname or parts.path not in ("", "/") or parts.query:
        raise ValueError(url)
    security = {"smtp": "plain", "smtp+starttls": "starttls", "smtps": "tls"}[parts.scheme]
    return SmtpServer(
        host=parts.hostname,
        port=parts.port or SMTP_PORTS[parts.scheme],
        security=security,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
    )


@dataclass(frozen=True)
class ImapServer:
    """An IMAP mailbox: host, port, ``tls`` (implicit) or ``starttls``, login and the mailbox's name."""

    host: str
    port: int
    security: str
    username: str
    password: str
    mailbox: str


IMAP_PORTS = {"imaps": 993, "imap+starttls": 143}


def parse_imap_url(url: str) -> ImapServer:
    """``imaps://user:pass@host:993/INBOX`` or ``imap+starttls://user:pass@host:143/INBOX`` (TLS either way)."""
    parts = urlsplit(url)
    if parts.scheme not in IMAP_PORTS or not parts.hostname or not parts.username or parts.password is None:
        raise ValueError(url)
    mailbox = unquote(parts.path.lstrip("/")) or "INBOX"
    if parts.query or any(char in mailbox for char in '"\\\r\n'):
        raise ValueError(url)
    return ImapServer(
        host=parts.hostname,
        port=parts.port or IMAP_PORTS[parts.scheme],
        security="tls" if parts.scheme == "imaps" else "starttls",
        username=unquote(parts.username),
        password=unquote(parts.password),
        mailbox=mailbox,
    )


def parse_address(value: str) -> str:
    """One e-mail address, normalised; raises ValueError on anything else."""
    try:
        return validate_email(value.strip(), check_deliverability=False).normalized
    except EmailNotValidError as error:
        raise ValueError(value) from error


def parse_emails(value: Any) -> list[str]:
    """A list of addresses: a comma-separated string, or a list (a JSON list in the environment)."""
    items = value if isinstance(value, list) else str(value).replace("\n", ",").split(",")
    if not all(isinstance(item, str) for item in items):
        raise ValueError(value)
    addresses = [parse_address(item) for item in items if item.strip()]
    if len(addresses) > MAX_RECIPIENTS:
        raise ValueError(value)
    return list(dict.fromkeys(addresses))


def parse_webhook_url(value: str) -> str:
    """An ``http://`` or ``https://`` URL with a host."""
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or len(value) > 500:
        raise ValueError(value)
    return value.strip()


def parse_secret(value: str) -> str:
    """A Standard Webhooks secret: ``whsec_`` and base64 of at least 24 bytes."""
    if not value.startswith(SECRET_PREFIX):
        raise ValueError("missing whsec_ prefix")
    try:
        raw = base64.b64decode(value[len(SECRET_PREFIX) :], validate=True)
    except binascii.Error as error:
        raise ValueError("not base64") from error
    if len(raw) < 24:
        raise ValueError("too short")
    return value
