"""Fixed-window rate limits stored in the database, so they hold across processes.

Each hit is one upsert that increments a counter row and returns the new
count; rows expire with their window and the pruner removes them.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from dataclasses import dataclass
from datetime import datetime, timezone

from flask import current_app, request
from flask_babel import gettext as _
from flask_babel import ngettext
from sqlalchemy.orm import Session
from werkzeug.exceptions import TooManyRequests

from app import clock, db, dialect
from app.models import RateLimit


@dataclass(frozen=True)
class Limit:
    """At most ``count`` hits per ``seconds``."""

    count: int
    seconds: int


def parse_limits(spec: str) -> list[Limit]:
    """Parse ``"5/60,50/86400"`` into limits (count per seconds)."""
    limits = []
    for part in spec.split(","):
        count, _, seconds = part.strip().partition("/")
        limits.append(Limit(int(count), int(seconds)))
    return limits


def client_id() -> str:
    """A keyed hash of the client address, so no address is stored in clear."""
    secret = current_app.config["SECRET_KEY"].encode()
    address = (request.remote_addr or "unknown").encode()
    return hmac.new(secret, address, hashlib.sha256).hexdigest()[:32]


def hit(bucket: str, subject: str, limits: list[Limit], session: Session | None = None) -> int | None:
    """Count one hit; return seconds to wait if any limit is exceeded, else None.

    In ``session``'s transaction when given (a submission counts its hit in
    the transaction that saves it, so it takes SQLite's write lock once),
    else in a write transaction of its own.
    """
    if session is None:
        with db.transaction(write=True) as own:
            return hit(bucket, subject, limits, own)
    moment = clock.now()
    waits = []
    for limit in limits:
        window = int(moment.timestamp()) // limit.seconds
        window_end = datetime.fromtimestamp((window + 1) * limit.seconds, timezone.utc)
        statement = dialect.upsert(session, RateLimit).values(
            key=f"{bucket}:{limit.seconds}:{subject}:{window}", count=1, expires_at=window_end
        )
        statement = statement.on_conflict_do_update(
            index_elements=[RateLimit.key], set_={"count": RateLimit.count + 1}
        ).returning(RateLimit.count)
        if session.execute(statement).scalar_one() > limit.count:
            waits.append(math.ceil((window_end - moment).total_seconds()))
    return max(waits) if waits else None


def enforce(bucket: str, subject: str, limits: list[Limit]) -> None:
    """Raise 429 with ``Retry-After`` when ``subject`` is over a limit in ``bucket``."""
    wait = hit(bucket, subject, limits)
    if wait is not None:
        raise too_many(wait)


def too_many(wait: int) -> TooManyRequests:
    """The 429 for a wait of ``wait`` seconds: in words, and in ``Retry-After``."""
    return TooManyRequests(_("Too many requests. Please try again in %(wait)s.", wait=_human(wait)),
                           retry_after=wait)


def _human(seconds: int) -> str:
    if seconds < 120:
        return ngettext("%(num)s second", "%(num)s seconds", seconds)
    if seconds < 7200:
        return ngettext("%(num)s minute", "%(num)s minutes", math.ceil(seconds / 60))
    return ngettext("%(num)s hour", "%(num)s hours", math.ceil(seconds / 3600))
