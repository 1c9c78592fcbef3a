"""Settings: defaults, then ``SUNDOWN_*`` environment variables, then overrides.

Every setting is listed once, with its meaning, in README.md.
"""

from __future__ import annotations

import os
import secrets
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from flask import Flask

DEFAULTS: dict[str, Any] = {
    "ENV": "production",
    "RP_NAME": "Sundown",
    "MAX_CONTENT_LENGTH": 64 * 1024,
    "TIME_ZONE": "UTC",
    "PROXY_FIX": 0,
    "DEFAULT_RETENTION_DAYS": 180,
    "PRUNE_INTERVAL": 3600,
    "PRUNE_BATCH_SIZE": None,
    "PRUNE_TIME_BUDGET": 10.0,
    "PRUNE_BACKLOG_RETRY": 60,
    "PRUNE_YIELD": None,
    "PRUNE_LEASE": 300,
    "PRUNE_TOKEN": None,
    "SUBMIT_RATE_LIMITS": "5/60,50/86400",
    "AUTH_RATE_LIMIT_PER_CLIENT": "10/600",
    "AUTH_RATE_LIMIT_GLOBAL": "100/600",
    "CHALLENGE_TTL": 300,
    "INVITE_TTL": 3600,
    "SESSION_LIFETIME": 12 * 3600,
    "SESSION_IDLE_TIMEOUT": 2 * 3600,
    "DB_POOL_SIZE": 5,
    "WTF_CSRF_TIME_LIMIT": None,
    "WTF_CSRF_SSL_STRICT": True,
    "CLOCK": lambda: datetime.now(timezone.utc),
    "RANDOM_BYTES": secrets.token_bytes,
}

DEVELOPMENT_DEFAULTS = {"ORIGIN": "http://localhost:5000", "RP_ID": "localhost"}


class ConfigurationError(RuntimeError):
    """A setting with no safe default is missing or wrong; the message says which."""


def load(app: Flask, overrides: dict[str, Any]) -> None:
    """Fill ``app.config`` and check it, failing fast on an unsafe production setup."""
    app.config.from_mapping(DEFAULTS)
    app.config.from_prefixed_env("SUNDOWN")
    app.config.update(overrides)
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
    _configure_cookies(app)


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
