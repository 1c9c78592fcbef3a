"""Fixed-window rate limits stored in the database, so they hold across processes.

Each hit is one upsert that increments a counter row per window (one
statement for all of them) and returns the new counts; rows expire with
their window and the cleanup removes them.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

from flask import current_app, request
from flask_babel import gettext as _
from flask_babel import ngettext
from sqlalchemy import select
from sqlalchemy.orm import Session
from werkzeug.exceptions import TooManyRequests

from app.core import clock, db, dialect
from app.models import RateLimit

COUNT_MOST = 2**31 - 1  # rate_limits.count is an INTEGER


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
    """A keyed hash of the client's address, so no address is stored in clear.

    An IPv6 client is its /64: one end site is usually given a whole /64, so
    keying the full address would let one visitor rotate through endless
    buckets. An IPv4-mapped IPv6 address counts as its IPv4 address.
    """
    secret = current_app.config["SECRET_KEY"].encode()
    return hmac.new(secret, network_of(request.remote_addr).encode(), hashlib.sha256).hexdigest()[:32]


def network_of(address: str | None) -> str:
    """What one client is: an IPv4 address, an IPv6 /64, or the raw text of anything else."""
    try:
        parsed = ipaddress.ip_address(address or "")
    except ValueError:
        return address or "unknown"
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
        parsed = parsed.ipv4_mapped
    if isinstance(parsed, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network(f"{parsed}/64", strict=False))
    return str(parsed)


def hit(bucket: str, subject: str, limits: list[Limit], session: Session | None = None) -> int | None:
    """Count one hit; return seconds to wait if any limit is exceeded, else None.

    In ``session``'s transaction when given (a submission counts its hit in
    the transaction that saves it, so it takes SQLite's write lock once),
    else in a write transaction of its own.
    """
    return hit_all([(bucket, subject, limits)], session)


class Added(NamedTuple):
    """An amount added to ``subject``'s count in ``bucket``'s current window of ``seconds``, judged by nobody
    here (the notifications' hourly cap is read when they are planned)."""

    bucket: str
    subject: str
    seconds: int
    amount: int


def hit_all(
    counters: list[tuple[str, str, list[Limit]]], session: Session | None = None, also: Sequence[Added] = ()
) -> int | None:
    """Count one hit on each ``(bucket, subject, limits)``, and add ``also``'s amounts, in one statement; the
    longest wait the hits must make, or None."""
    if session is None:
        with db.transaction(write=True) as own:
            return hit_all(counters, own, also)
    moment = clock.now()
    windows: dict[str, tuple[datetime, list[Limit]]] = {}  # limits of the same length share their window's row
    for bucket, subject, limits in counters:
        for limit in limits:
            key, window_end = _window(bucket, subject, limit.seconds, moment)
            windows.setdefault(key, (window_end, []))[1].append(limit)
    rows = {key: (window_end, 1) for key, (window_end, _limits) in windows.items()}
    for added in also:
        key, window_end = _window(added.bucket, added.subject, added.seconds, moment)
        rows[key] = (window_end, rows.get(key, (window_end, 0))[1] + added.amount)
    counts = _count_hits(session, rows)
    waits = [
        math.ceil((window_end - moment).total_seconds())
        for key, (window_end, each) in windows.items()
        if any(counts[key] > limit.count for limit in each)
    ]
    return max(waits) if waits else None


def over(bucket: str, subject: str, limits: list[Limit], session: Session | None = None) -> int | None:
    """Seconds ``subject`` must wait in ``bucket`` if it is already over a limit (nothing counted); else None."""
    if session is None:
        with db.transaction() as own:
            return over(bucket, subject, limits, own)
    counts = _counts(session, bucket, subject, limits)
    waits = [
        math.ceil((window_end - clock.now()).total_seconds())
        for window_end, count, limit in counts
        if count > limit.count
    ]
    return max(waits) if waits else None


def counted(bucket: str, subject: str, limits: list[Limit], session: Session | None = None) -> bool:
    """Whether ``subject`` has any hit in ``bucket`` in the current window of one of ``limits``."""
    if session is None:
        with db.transaction() as own:
            return counted(bucket, subject, limits, own)
    return any(count for _end, count, _limit in _counts(session, bucket, subject, limits))


def _counts(session: Session, bucket: str, subject: str, limits: list[Limit]) -> list[tuple[datetime, int, Limit]]:
    moment = clock.now()
    keyed = [(*_window(bucket, subject, limit.seconds, moment), limit) for limit in limits]
    keys = [key for key, _end, _limit in keyed]
    stored = dict(session.execute(select(RateLimit.key, RateLimit.count).where(RateLimit.key.in_(keys))).all())
    return [(window_end, stored.get(key, 0), limit) for key, window_end, limit in keyed]


def _count_hits(session: Session, windows: dict[str, tuple[datetime, int]]) -> dict[str, int]:
    """Add to each window's row (``key``: the window's end and the amount, one for a hit), in one multi-row
    upsert; the new counts.

    One statement for all of a hit's windows: a submission checks two
    limits, and on PostgreSQL each statement is a round trip. The rows go
    as executemany parameters, which SQLAlchemy folds into one ``VALUES``
    list ("insertmanyvalues"): unlike ``.values([...])`` the statement is
    then compiled once per process, not on every submission.
    """
    upsert = dialect.upsert(session, RateLimit.__table__)
    statement = upsert.on_conflict_do_update(
        index_elements=[RateLimit.key], set_={"count": RateLimit.count + upsert.excluded["count"]}
    ).returning(RateLimit.key, RateLimit.count)
    rows = [{"key": key, "count": amount, "expires_at": window_end} for key, (window_end, amount) in windows.items()]
    return {key: count for key, count in session.connection().execute(statement, rows).all()}


def enforce(bucket: str, subject: str, limits: list[Limit]) -> None:
    """Raise 429 with ``Retry-After`` when ``subject`` is over a limit in ``bucket``."""
    wait = hit(bucket, subject, limits)
    if wait is not None:
        raise too_many(wait)


def too_many(wait: int) -> TooManyRequests:
    """The 429 for a wait of ``wait`` seconds: in words, and in ``Retry-After``."""
    return TooManyRequests(_("Too many requests. Please try again in %(wait)s.", wait=_human(wait)), retry_after=wait)


def _human(seconds: int) -> str:
    if seconds < 120:
        return ngettext("%(num)s second", "%(num)s seconds", seconds)
    if seconds < 7200:
        return ngettext("%(num)s minute", "%(num)s minutes", math.ceil(seconds / 60))
    return ngettext("%(num)s hour", "%(num)s hours", math.ceil(seconds / 3600))


def take(bucket: str, subject: str, amount: int, limit: Limit, session: Session) -> int | None:
    """Take ``amount`` from ``subject``'s budget of ``limit.count`` per ``limit.seconds`` in ``bucket`` (bytes,
    say, rather than hits); None when taken, else the seconds until the window ends (nothing taken).

    One statement, in the caller's write transaction: an upsert that adds ``amount`` only while the new total
    stays within the budget (``ON CONFLICT DO UPDATE ... WHERE``) and returns it; no row back means refused.
    PostgreSQL evaluates the condition on the row as the last committed take left it (the row is locked, a
    racing take waits), SQLite under its write lock: racing takes can never pass the budget together.
    """
    moment = clock.now()
    key, window_end = _window(bucket, subject, limit.seconds, moment)
    refused = math.ceil((window_end - moment).total_seconds())
    # A larger budget (a setting meant as no limit) is as good as the column's most, and PostgreSQL refuses
    # a larger bound parameter for it ("integer out of range": every upload was a 503).
    budget = min(limit.count, COUNT_MOST)
    if amount > budget:
        return refused
    statement = dialect.upsert(session, RateLimit).values(key=key, count=amount, expires_at=window_end)
    statement = statement.on_conflict_do_update(
        index_elements=[RateLimit.key],
        set_={"count": RateLimit.count + amount},
        where=RateLimit.count + amount <= budget,
    ).returning(RateLimit.count)
    return None if session.execute(statement).first() is not None else refused


def count_of(bucket: str, subject: str, limit: Limit, session: Session) -> int:
    """``subject``'s count in ``bucket``'s current window of ``limit``, as committed (a read: no row lock;
    ``Added`` adds to it)."""
    [(_window_end, count, _limit)] = _counts(session, bucket, subject, [limit])
    return count


def _window(bucket: str, subject: str, seconds: int, moment: datetime) -> tuple[str, datetime]:
    """The key of ``subject``'s row in ``bucket`` for the window of ``seconds`` that holds ``moment``, and
    the window's end."""
    window = int(moment.timestamp()) // seconds
    return f"{bucket}:{seconds}:{subject}:{window}", datetime.fromtimestamp((window + 1) * seconds, UTC)
