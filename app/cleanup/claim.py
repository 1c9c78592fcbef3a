"""The claim: one atomic conditional write decides which request cleans up.

The ``settings`` row ``last_cleanup_at`` holds epoch milliseconds:

* ``+T``: the last run claimed at ``T`` and has finished; the interval counts
  from ``T``. (After a partial run, ``T`` is moved so that the claim falls due
  ``CLEANUP_BACKLOG_RETRY`` seconds after the run ended.)
* ``-T``: a run claimed at ``T`` and is still running. Nobody may claim, not
  even ``--force``, until it finishes or its lease (``CLEANUP_LEASE`` seconds)
  runs out; a run outlives its lease only if its process died (SIGKILL, OOM).

The claim is an upsert whose ``DO UPDATE`` carries a ``WHERE``: only a
statement that changed a row (rowcount 1) won. A missing row is inserted by
the first caller, which wins too. The database is the only authority; each
process merely remembers when the claim can next be due (see ``app.cleanup.runs``).
"""

from __future__ import annotations

from sqlalchemy import BigInteger, and_, cast, func, or_, select, update
from sqlalchemy.orm import Session

from app.core import db, dialect
from app.models import Setting

KEY = "last_cleanup_at"


def take(session: Session, now_ms: int, interval_ms: int, lease_ms: int, force: bool = False, key: str = KEY) -> bool:
    """Try to claim the run at ``now_ms``; True when this caller won.

    Marks the claim as running (``-now_ms``). ``force`` skips the interval
    but still refuses while another run holds an unexpired lease. ``key``
    names another settings row for another job claimed the same way (the
    IMAP fetch, ``app.conversations.imap``).
    """
    stored = cast(Setting.value, BigInteger)  # epoch ms overflow a 32-bit INTEGER
    not_running = or_(stored >= 0, -stored <= now_ms - lease_ms)
    condition = not_running if force else and_(func.abs(stored) <= now_ms - interval_ms, not_running)
    statement = (
        dialect.upsert(session, Setting)
        .values(key=key, value=str(-now_ms))
        .on_conflict_do_update(index_elements=[Setting.key], set_={"value": str(-now_ms)}, where=condition)
    )
    return db.rowcount(session.execute(statement)) == 1


def release(session: Session, claimed_ms: int, counted_from_ms: int, key: str = KEY) -> bool:
    """Mark the run claimed at ``claimed_ms`` finished; the interval counts from ``counted_from_ms``.

    Does nothing (returns False) if another run has since taken over the claim.
    """
    result = session.execute(
        update(Setting)
        .where(Setting.key == key, Setting.value == str(-claimed_ms))
        .values(value=str(counted_from_ms))
        .execution_options(preserve_rowcount=True)
    )
    return db.rowcount(result) == 1


def stored(session: Session, key: str = KEY) -> int | None:
    """The stored value (signed epoch ms, see the module docstring); None before the first claim."""
    raw = session.scalar(select(Setting.value).where(Setting.key == key))
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None
