"""Settings: defaults, then ``SUNDOWN_*`` environment variables, then overrides.

Every setting is one record in ``app.settings`` (defaults, check, meaning),
from which README.md's table and ``.env.example`` are generated too. Each is
checked once, here, at start: a bad one stops the app with one line naming it.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

from flask import Flask
from sqlalchemy.exc import ArgumentError

from app.core.parsing import ConfigurationError
from app.settings import BY_NAME, MIN_SECRET_LENGTH, RENAMED, SAME, SETTINGS, rule, text

__all__ = ["DEFAULTS", "MIN_SECRET_LENGTH", "ConfigurationError", "load"]

# Injected by tests through create_app(overrides), never by the environment.
INJECTED: dict[str, Any] = {"CLOCK": lambda: datetime.now(UTC), "RANDOM_BYTES": secrets.token_bytes}
DEFAULTS: dict[str, Any] = {variable.name: variable.default for variable in SETTINGS} | INJECTED


def load(app: Flask, overrides: dict[str, Any]) -> None:
    """Fill ``app.config`` and check every setting, failing fast with one clear line."""
    app.config.from_mapping(DEFAULTS)
    app.config.from_prefixed_env("SUNDOWN")
    app.config.update(overrides)
    _refuse_renamed()
    env_check = cast(Callable[[Any], Any], BY_NAME["ENV"].check)  # ENV's record has a check
    _check(app, env_check, "ENV")  # first: it decides which defaults apply below
    if app.config["ENV"] == "development":
        _development_defaults(app)
    if app.config["DATABASE_URL"] is None:
        app.config["DATABASE_URL"] = f"sqlite:///{Path(app.instance_path) / 'sundown.db'}"
    for variable in SETTINGS:
        if variable.required and not app.config.get(variable.name):
            raise ConfigurationError(
                f"SUNDOWN_{variable.name} is not set: set it to {variable.expected}"
                " (or SUNDOWN_ENV=development for local defaults)."
            )
    app.config["ORIGINS"] = _origins(app.config["ORIGIN"])
    app.config["ORIGIN"] = app.config["ORIGINS"][0]
    for variable in SETTINGS:
        if variable.check is not None and variable.name != "ENV":
            _check(app, variable.check, variable.name)
    # RP_ID last: what it may be depends on the origin.
    host = urlsplit(app.config["ORIGIN"]).hostname or ""
    _check(
        app,
        rule(text, lambda rp_id: _rp_id_fits(rp_id, host)),
        "RP_ID",
        f"{host} (the host of SUNDOWN_ORIGIN) or a registrable domain it ends with",
    )
    _configure_cookies(app)


def _check(app: Flask, check: Callable[[Any], Any], key: str, expected: str = "") -> None:
    """Replace ``app.config[key]`` by its checked, normalised value, or raise saying what it must be."""
    value = app.config[key]
    try:
        app.config[key] = check(value)
    except (ValueError, TypeError, LookupError, ArithmeticError, ArgumentError):
        # Secrets and database URLs (passwords) are never echoed to the log.
        shown = "" if BY_NAME[key].secret else f", not {value!r}"
        raise ConfigurationError(f"SUNDOWN_{key} must be {expected or BY_NAME[key].expected}{shown}.") from None


def _development_defaults(app: Flask) -> None:
    """Local defaults where production has none: the origin, the RP ID, a secret kept in ``instance/``."""
    for variable in SETTINGS:
        if variable.development is not SAME and app.config.get(variable.name) is None:
            app.config[variable.name] = variable.development
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = _instance_secret_key(app)


def _refuse_renamed() -> None:
    """Stop on a variable of an old name (``app.settings.RENAMED``), which would otherwise be ignored."""
    for name in sorted(name for name in os.environ if name.startswith("SUNDOWN_")):
        for old, new in RENAMED.items():
            bare = name.removeprefix("SUNDOWN_")
            if bare == old or (old.endswith("_") and bare.startswith(old)):
                raise ConfigurationError(
                    f"{name} was renamed SUNDOWN_{new}{bare.removeprefix(old)}: rename it in the environment."
                )


def _rp_id_fits(rp_id: str, host: str) -> bool:
    # WebAuthn: the RP ID is the origin's host or a registrable domain the host
    # ends with. The dot rules out a bare top-level domain ("org"); an IP
    # address (digits and dots, or a colon) has no parent domains.
    is_ip = host.replace(".", "").isdigit() or ":" in host
    return rp_id == host or (not is_ip and "." in rp_id and host.endswith("." + rp_id))


def _origins(value: str | list[str]) -> list[str]:
    """Accept one origin, a comma-separated string or a list; reject malformed ones."""
    items = value if isinstance(value, list) else str(value).split(",")
    origins = [item.strip().rstrip("/") for item in items if item.strip()]
    for origin in origins:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path:
            raise ConfigurationError(f"SUNDOWN_ORIGIN {origin!r} is not an origin like https://host[:port].")
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
