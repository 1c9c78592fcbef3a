"""Rate limits for login, enrollment and invite redemption, such that no stranger can lock admins out.

* Per client (``SUNDOWN_AUTH_RATE_LIMIT_PER_CLIENT``; an IPv6 client is its
  /64): every attempt that asks the server for work counts, a ceremony's
  options or its verification. Pages (GET) never count.
* In all (``SUNDOWN_AUTH_RATE_LIMIT_GLOBAL``): failed verifications only,
  from every client together. Over it, a client that has itself failed in
  the window is refused; one that has not failed never is, so a flood of
  wrong passkeys or guessed links from any number of addresses cannot stop
  an admin's own login.
"""

from __future__ import annotations

from flask import current_app

from app.core import db, ratelimit

GLOBAL_SUBJECT = "all"
FAILED = "auth-failed"


def limit_attempt() -> None:
    """Count one authentication attempt; raise 429 with ``Retry-After`` when over a limit (see the module)."""
    config = current_app.config
    client = ratelimit.client_id()
    ratelimit.enforce("auth", client, ratelimit.parse_limits(config["AUTH_RATE_LIMIT_PER_CLIENT"]))
    limits = ratelimit.parse_limits(config["AUTH_RATE_LIMIT_GLOBAL"])
    with db.transaction() as session:
        wait = ratelimit.over(FAILED, GLOBAL_SUBJECT, limits, session)
        refused = wait is not None and ratelimit.counted(FAILED, client, limits, session)
    if refused and wait is not None:
        raise ratelimit.too_many(wait)


def record_failure() -> None:
    """A verification failed (a wrong passkey, a used or guessed link): count it for this client and in all."""
    limits = ratelimit.parse_limits(current_app.config["AUTH_RATE_LIMIT_GLOBAL"])
    with db.transaction(write=True) as session:
        ratelimit.hit(FAILED, ratelimit.client_id(), limits, session)
        ratelimit.hit(FAILED, GLOBAL_SUBJECT, limits, session)
