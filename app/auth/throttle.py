"""Rate limits for login, enrollment and invite redemption: per client and in all."""

from __future__ import annotations

from flask import current_app

from app import ratelimit

GLOBAL_SUBJECT = "all"


def limit_attempt() -> None:
    """Count one authentication attempt; raise 429 with ``Retry-After`` when over a limit."""
    config = current_app.config
    ratelimit.enforce(
        "auth", ratelimit.client_id(), ratelimit.parse_limits(config["AUTH_RATE_LIMIT_PER_CLIENT"])
    )
    ratelimit.enforce(
        "auth-global", GLOBAL_SUBJECT, ratelimit.parse_limits(config["AUTH_RATE_LIMIT_GLOBAL"])
    )
