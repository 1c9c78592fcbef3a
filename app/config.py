"""Settings: defaults, then ``SUNDOWN_*`` environment variables, then overrides.

Every setting is listed once, with its meaning, in README.md, and checked
once, here, at start: a bad one stops the app with one line naming it. The
file runs past 200 lines because the checks are one table, a row a setting.
"""

from __future__ import annotations

import math
import os
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from flask import Flask
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from app.attachments.rules import DEFAULT_TYPES, parse_types

# None of these imports this module (no cycle): ratelimit and retention need only
# app.core.clock, app.core.db, app.core.dialect and app.models.
from app.core import db, i18n
from app.core.parsing import (
    ConfigurationError,
    parse_address,
    parse_emails,
    parse_imap_url,
    parse_secret,
    parse_smtp_url,
    parse_webhook_url,
)
from app.core.ratelimit import parse_limits
from app.inquiries.retention import MAX_DAYS, MIN_DAYS

DEFAULTS: dict[str, Any] = {
    "ENV": "production",
    "RP_NAME": "Sundown",
    "MAX_CONTENT_LENGTH": 64 * 1024,
    "TIME_ZONE": "UTC",
    "DEFAULT_LOCALE": "en",
    "PROXY_FIX": 0,
    "DEFAULT_RETENTION_DAYS": 180,
    "CLEANUP_INTERVAL": 3600,
    "CLEANUP_BATCH_SIZE": None,
    "CLEANUP_TIME_BUDGET": 10.0,
    "CLEANUP_BACKLOG_RETRY": 60,
    "CLEANUP_YIELD": None,
    "CLEANUP_LEASE": 300,
    "CLEANUP_TOKEN": None,
    "METRICS_TOKEN": None,
    "LOG_FORMAT": "text",
    "SUBMIT_RATE_LIMITS": "5/60,50/86400",
    "AUDIT_RETENTION_DAYS": 365,
    "NOTIFY_HOURLY_CAP": 100,
    "SUBMIT_GLOBAL_RATE_LIMITS": "300/60,10000/86400",
    "POW_TTL": 600,
    "POW_MAX_NUMBER": 2500,
    "MIN_FILL_SECONDS": 3,
    "AUTH_RATE_LIMIT_PER_CLIENT": "10/600",
    "AUTH_RATE_LIMIT_GLOBAL": "100/600",
    "CHALLENGE_TTL": 300,
    "INVITE_TTL": 3600,
    "SESSION_LIFETIME": 12 * 3600,
    "SESSION_IDLE_TIMEOUT": 2 * 3600,
    "DB_POOL_SIZE": 5,
    "DB_CONNECT_TIMEOUT": db.CONNECT_TIMEOUT,
    "DB_STATEMENT_TIMEOUT": db.STATEMENT_TIMEOUT,
    "SMTP_URL": None,
    "SMTP_CA_FILE": None,
    "MAIL_FROM": None,
    "REPLY_TO": None,
    "ACK_HOURLY_CAP": 50,
    "ACK_PER_ADDRESS_SECONDS": 3600,
    "ACK_PER_CLIENT_LIMITS": "3/3600,10/86400",
    "INBOUND_ADDRESS": None,
    "INBOUND_TOKEN": None,
    "INBOUND_MAX_BYTES": 25 * 1024 * 1024,
    "INBOUND_RATE_LIMITS": "120/60,2000/86400",
    "IMAP_URL": None,
    "IMAP_CA_FILE": None,
    "IMAP_INTERVAL": 60,
    "ATTACHMENT_MAX_BYTES": 10 * 1024 * 1024,
    "ATTACHMENT_TYPES": ",".join(DEFAULT_TYPES),
    "NOTIFY_EMAILS": None,
    "WEBHOOK_URL": None,
    "WEBHOOK_SECRET": None,
    "WEBHOOK_ALLOW_PRIVATE": False,
    "DELIVERY_RETRY_BASE": 60,
    "WTF_CSRF_TIME_LIMIT": None,
    "WTF_CSRF_SSL_STRICT": True,
    "CLOCK": lambda: datetime.now(UTC),
    "RANDOM_BYTES": secrets.token_bytes,
}

DEVELOPMENT_DEFAULTS = {"ORIGIN": "http://localhost:5000", "RP_ID": "localhost"}


# Values arrive JSON-decoded from the environment ("3600" as 3600, "1.5" as
# 1.5, "abc" as "abc") or as Python values from overrides, so a number may be
# an int, a float or a numeric string. A converter returns the proper type or
# raises; its rule then checks the range.


def _float(value: Any) -> float:
    # bool is an int subclass ("true" must not pass as 1); json.loads accepts NaN and Infinity.
    if isinstance(value, bool) or not isinstance(value, (int, float, str)) or not math.isfinite(float(value)):
        raise ValueError(value)
    return float(value)


def _integer(value: Any) -> int:
    number = value if isinstance(value, int) and not isinstance(value, bool) else _float(value)
    if number != int(number):
        raise ValueError(value)
    return int(number)


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(value)
    return value


def _as_is(value: Any) -> Any:
    return value


def _rule(convert: Callable[[Any], Any], ok: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A checker: ``convert`` the value, then require ``ok`` of the result to be true."""
    def check(value: Any) -> Any:
        if not ok(converted := convert(value)):
            raise ValueError(value)
        return converted
    return check


def _optional(checker: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else checker(value)


def _limits_ok(spec: str) -> bool:
    # The parser the views use at request time, so what starts also works.
    return all(limit.count > 0 and limit.seconds > 0 for limit in parse_limits(spec))


def _rp_id_fits(rp_id: str, host: str) -> bool:
    # WebAuthn: the RP ID is the origin's host or a registrable domain the host
    # ends with. The dot rules out a bare top-level domain ("org"); an IP
    # address (digits and dots, or a colon) has no parent domains.
    is_ip = host.replace(".", "").isdigit() or ":" in host
    return rp_id == host or (not is_ip and "." in rp_id and host.endswith("." + rp_id))


POSITIVE = _rule(_integer, lambda n: n > 0)
LIMITS = _rule(_string, _limits_ok)
SECONDS = "a positive whole number of seconds"
MIN_SECRET_LENGTH = 32  # it signs sessions, render times and challenges: one character would be guessed
SECRET_TEXT = "a random string of at least 32 characters (python -c 'import secrets; print(secrets.token_hex(32))')"
TEXT = "a non-empty string (quote one that reads as JSON, e.g. '\"2024\"')"
LIMITS_TEXT = "comma-separated count/seconds pairs of positive whole numbers, e.g. 5/60,50/86400"
SQL_BACKENDS = ("sqlite", "postgresql", "postgres")  # app.core.db maps postgres:// too
# These may hold secrets: never logged.
UNSHOWN = {"SECRET_KEY", "CLEANUP_TOKEN", "METRICS_TOKEN", "DATABASE_URL", "SMTP_URL", "WEBHOOK_SECRET",
           "INBOUND_TOKEN", "IMAP_URL"}

# Every setting but ENV (checked first), ORIGIN (_origins) and RP_ID (needs
# ORIGIN). CLOCK and RANDOM_BYTES are injected by tests and left alone;
# "CLEANUP_LEASE longer than CLEANUP_TIME_BUDGET" is checked in app.cleanup.
# A rule may also raise (ZoneInfo, make_url, parse_limits do on bad input).
SETTINGS: list[tuple[str, Callable[[Any], Any], str]] = [
    ("SECRET_KEY", _rule(_string, lambda key: len(key) >= MIN_SECRET_LENGTH), SECRET_TEXT),
    ("RP_NAME", _rule(_string, bool), TEXT),
    ("DATABASE_URL", _rule(_as_is, lambda url: make_url(url).get_backend_name() in SQL_BACKENDS),
     "a sqlite:///path or postgresql://user:pass@host/db URL"),
    ("TIME_ZONE", _rule(_string, ZoneInfo), "an IANA time zone name such as UTC or Europe/Paris"),
    ("DEFAULT_LOCALE", _rule(i18n.normalize, bool), "one of en, ja, zh-Hans"),
    ("PROXY_FIX", _rule(_integer, lambda n: 0 <= n <= 10), "a whole number of trusted proxies from 0 to 10"),
    ("MAX_CONTENT_LENGTH", _rule(_integer, lambda n: n >= 1024), "a whole number of bytes, at least 1024"),
    ("DEFAULT_RETENTION_DAYS", _rule(_integer, lambda n: MIN_DAYS <= n <= MAX_DAYS),
     f"a whole number of days from {MIN_DAYS} to {MAX_DAYS}"),
    ("SUBMIT_RATE_LIMITS", LIMITS, LIMITS_TEXT),
    ("NOTIFY_HOURLY_CAP", _rule(_integer, lambda n: n >= 1), "a whole number of at least 1"),
    ("AUDIT_RETENTION_DAYS", _rule(_integer, lambda n: 365 <= n <= 3650), "a whole number of days from 365 to 3650"),
    ("SUBMIT_GLOBAL_RATE_LIMITS", LIMITS, LIMITS_TEXT),
    ("AUTH_RATE_LIMIT_PER_CLIENT", LIMITS, LIMITS_TEXT),
    ("AUTH_RATE_LIMIT_GLOBAL", LIMITS, LIMITS_TEXT),
    ("POW_TTL", POSITIVE, SECONDS),
    # The counter a browser must find is a uint32 (the altcha package's counter mode).
    ("POW_MAX_NUMBER", _rule(_integer, lambda n: 1 <= n <= 0xFFFFFFFF), "a whole number from 1 to 4294967295"),
    ("MIN_FILL_SECONDS", _rule(_float, lambda n: n >= 0), "a number of seconds, 0 or more"),
    ("CHALLENGE_TTL", POSITIVE, SECONDS),
    ("INVITE_TTL", POSITIVE, SECONDS),
    ("SESSION_LIFETIME", POSITIVE, SECONDS),
    ("SESSION_IDLE_TIMEOUT", POSITIVE, SECONDS),
    ("CLEANUP_INTERVAL", POSITIVE, SECONDS),
    ("CLEANUP_BATCH_SIZE", _optional(POSITIVE), "a positive whole number of rows, or null for the database's default"),
    # 0 is allowed: at least one batch always runs, so it means one batch a run.
    ("CLEANUP_TIME_BUDGET", _rule(_float, lambda n: n >= 0), "a number of seconds, 0 or more"),
    ("CLEANUP_BACKLOG_RETRY", POSITIVE, SECONDS),
    ("CLEANUP_YIELD", _optional(_rule(_float, lambda n: n >= 0)),
     "a number of at least 0, or null for the database's default"),
    ("CLEANUP_LEASE", POSITIVE, SECONDS),
    ("CLEANUP_TOKEN", _optional(_rule(_string, lambda s: len(s) >= 16)), "unset or a string of at least 16 characters"),
    ("METRICS_TOKEN", _optional(_rule(_string, lambda s: len(s) >= 16)), "unset or a string of at least 16 characters"),
    ("LOG_FORMAT", _rule(_string, lambda s: s in ("text", "json")), "text or json"),
    ("DB_POOL_SIZE", POSITIVE, "a positive whole number of connections"),
    ("DB_CONNECT_TIMEOUT", _rule(_integer, lambda n: n >= 2),
     "a whole number of seconds, at least 2 (PostgreSQL's minimum)"),
    ("DB_STATEMENT_TIMEOUT", _rule(_float, lambda n: n > 0), "a positive number of seconds"),
    ("SMTP_URL", _optional(_rule(_string, parse_smtp_url)),
     "unset or smtp://host:25, smtp+starttls://user:pass@host:587 or smtps://user:pass@host:465"),
    ("SMTP_CA_FILE", _optional(_rule(_string, os.path.isfile)), "unset or the path of a PEM file of CA certificates"),
    ("MAIL_FROM", _optional(_rule(_string, parse_address)), "unset or an e-mail address, e.g. sundown@example.org"),
    ("REPLY_TO", _optional(_rule(_string, parse_address)), "unset or an e-mail address, e.g. team@example.org"),
    ("ACK_HOURLY_CAP", _rule(_integer, lambda n: n >= 1), "a whole number of at least 1"),
    ("ACK_PER_ADDRESS_SECONDS", _rule(_integer, lambda n: n >= 3600), "a whole number of seconds, at least 3600"),
    ("ACK_PER_CLIENT_LIMITS", LIMITS, LIMITS_TEXT),
    ("INBOUND_ADDRESS", _optional(_rule(lambda s: parse_address(_string(s)), lambda s: "+" not in s)),
     "unset or the e-mail address people's answers go to, without a +tag, e.g. replies@example.org"),
    ("INBOUND_TOKEN", _optional(_rule(_string, lambda s: len(s) >= 16)), "unset or a string of at least 16 characters"),
    ("INBOUND_MAX_BYTES", _rule(_integer, lambda n: 64 * 1024 <= n <= 200 * 1024 * 1024),
     "a whole number of bytes from 65536 to 209715200 (200 MB)"),
    ("INBOUND_RATE_LIMITS", LIMITS, LIMITS_TEXT),
    ("IMAP_URL", _optional(_rule(_string, parse_imap_url)),
     "unset or imaps://user:pass@host:993/INBOX or imap+starttls://user:pass@host:143/INBOX"),
    ("IMAP_CA_FILE", _optional(_rule(_string, os.path.isfile)), "unset or the path of a PEM file of CA certificates"),
    ("IMAP_INTERVAL", _rule(_integer, lambda n: n >= 10), "a whole number of seconds, at least 10"),
    ("ATTACHMENT_MAX_BYTES", _rule(_integer, lambda n: 1024 <= n <= 100 * 1024 * 1024),
     "a whole number of bytes from 1024 to 104857600 (100 MB)"),
    ("ATTACHMENT_TYPES", parse_types,
     "MIME types, comma-separated, each one that is detected by content, e.g. image/png,application/pdf,text/plain"),
    ("NOTIFY_EMAILS", _optional(parse_emails),
     "unset or e-mail addresses, comma-separated or a JSON list (at most 20)"),
    ("WEBHOOK_URL", _optional(_rule(_string, parse_webhook_url)), "unset or an http:// or https:// URL"),
    ("WEBHOOK_SECRET", _optional(_rule(_string, parse_secret)),
     "unset or a Standard Webhooks secret: whsec_ and base64 of at least 24 bytes"),
    ("WEBHOOK_ALLOW_PRIVATE", _rule(_as_is, lambda v: v in (0, 1) and not isinstance(v, float)), "0 or 1"),
    ("DELIVERY_RETRY_BASE", _rule(_float, lambda n: n > 0), "a positive number of seconds"),
    ("WTF_CSRF_TIME_LIMIT", _optional(POSITIVE), f"{SECONDS}, or null for the session's lifetime"),
    ("WTF_CSRF_SSL_STRICT", _rule(_as_is, lambda v: isinstance(v, bool)), "true or false"),
]


def load(app: Flask, overrides: dict[str, Any]) -> None:
    """Fill ``app.config`` and check every setting, failing fast with one clear line."""
    app.config.from_mapping(DEFAULTS)
    app.config.from_prefixed_env("SUNDOWN")
    app.config.update(overrides)
    _refuse_renamed()
    # ENV first: it decides which settings get defaults below.
    _check(app, "ENV", _rule(_string, lambda s: s in ("production", "development")),
           "production or development")
    if app.config["ENV"] == "development":
        for key, value in DEVELOPMENT_DEFAULTS.items():
            app.config.setdefault(key, value)
        if not app.config.get("SECRET_KEY"):
            app.config["SECRET_KEY"] = _instance_secret_key(app)
    app.config.setdefault(
        "DATABASE_URL", f"sqlite:///{Path(app.instance_path) / 'sundown.db'}"
    )
    _require(app, "SECRET_KEY", "a long random string (python -c 'import secrets; print(secrets.token_hex(32))')")
    _require(app, "ORIGIN", "the public URL admins use, e.g. https://inbox.example.org")
    _require(app, "RP_ID", "the WebAuthn relying party ID, the origin's host, e.g. inbox.example.org")
    app.config["ORIGINS"] = _origins(app.config["ORIGIN"])
    app.config["ORIGIN"] = app.config["ORIGINS"][0]
    for key, checker, expected in SETTINGS:
        _check(app, key, checker, expected)
    host = urlsplit(app.config["ORIGIN"]).hostname or ""
    _check(app, "RP_ID", _rule(_string, lambda rp_id: _rp_id_fits(rp_id, host)),
           f"{host} (the host of SUNDOWN_ORIGIN) or a registrable domain it ends with")
    _configure_cookies(app)


def _check(app: Flask, key: str, checker: Callable[[Any], Any], expected: str) -> None:
    """Replace ``app.config[key]`` by its checked, normalised value, or raise."""
    value = app.config[key]
    try:
        app.config[key] = checker(value)
    except (ValueError, TypeError, LookupError, ArithmeticError, ArgumentError):
        # Secrets and database URLs (passwords) are never echoed to the log.
        shown = "" if key in UNSHOWN else f", not {value!r}"
        raise ConfigurationError(f"SUNDOWN_{key} must be {expected}{shown}.") from None


def _refuse_renamed() -> None:
    """Stop on a ``SUNDOWN_PRUNE_*`` variable, which would otherwise be silently ignored."""
    for name in sorted(name for name in os.environ if name.startswith("SUNDOWN_PRUNE_")):
        new = name.replace("SUNDOWN_PRUNE_", "SUNDOWN_CLEANUP_", 1)
        raise ConfigurationError(f"{name} was renamed {new}: rename it in the environment.")


def _require(app: Flask, key: str, what: str) -> None:
    if not app.config.get(key):
        raise ConfigurationError(
            f"SUNDOWN_{key} is not set: set it to {what}"
            " (or SUNDOWN_ENV=development for local defaults)."
        )


def _origins(value: str | list[str]) -> list[str]:
    """Accept one origin, a comma-separated string or a list; reject malformed ones."""
    items = value if isinstance(value, list) else str(value).split(",")
    origins = [item.strip().rstrip("/") for item in items if item.strip()]
    for origin in origins:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path:
            raise ConfigurationError(
                f"SUNDOWN_ORIGIN {origin!r} is not an origin like https://host[:port]."
            )
    return origins


def _configure_cookies(app: Flask) -> None:
    secure = app.config["ORIGIN"].startswith("https://")
    app.config.update(
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=secure,
        SESSION_COOKIE_NAME="__Host-sundown" if secure else "sundown",
    )


def _instance_secret_key(app: Flask) -> str:
    """Generate a development secret once and keep it in ``instance/``."""
    path = Path(app.instance_path) / "secret_key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        draft = path.with_name(f"secret_key.{os.getpid()}")
        draft.write_text(secrets.token_hex(32))
        draft.chmod(0o600)
        try:
            # A hard link publishes the whole file at once, and only the first
            # of several starting workers wins.
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    return path.read_text().strip()
