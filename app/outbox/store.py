"""The outbox's rows: written with what they carry, claimed with a lease, finished once.

* ``enqueue``: one row per inquiry and channel, inside the transaction that
  saves the inquiry (or moves it out of spam), so a commit means a send;
  ``add``: a few rows, their ids returned (an admin's test, a reply).
* ``claim_due``: one conditional ``UPDATE ... SET lease_until = ? WHERE id IN
  (the oldest due) AND status = 'pending' AND next_attempt_at <= now AND
  (lease_until IS NULL OR lease_until < now) RETURNING id``: a row is leased
  by the one statement that changed it, and only its sender sends it. On
  PostgreSQL the candidates are picked ``FOR UPDATE SKIP LOCKED``, so
  concurrent passes take different rows instead of waiting for each other.
  ``claim`` does the same for one row (rowcount 1, kept on PostgreSQL by
  ``preserve_rowcount``): an admin's test notification. A sender that dies
  mid-send leaves a lease that runs out, and the row is sent again:
  at-least-once, with the idempotency key for receivers to drop repeats.
* ``finish``: done, retried later (backoff with jitter) or failed (the
  schedule is over, or the outcome is permanent), written only while the
  lease is still the sender's own; a batch's outcomes in one executemany.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache

from flask import current_app
from sqlalchemy import and_, bindparam, delete, insert, or_, select, update
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session

from app.core import clock, db, driver
from app.models import Delivery, DeliveryKind, DeliveryStatus

LEASE = timedelta(seconds=90)  # a batch's sends: each starts only while SEND_MARGIN of it is left
SEND_MARGIN = timedelta(seconds=45)  # longer than one send may take (SMTP 10 s per step, webhook 5 s)
MIN_ATTEMPTS = 10
SCHEDULE = timedelta(hours=24)  # retries go on for about this long, and at least MIN_ATTEMPTS times
MAX_DELAY = timedelta(hours=6)
CLAIM_BATCH = 20  # one connection per channel carries a batch; passes in other workers take the rest
ROWS_PER_INSERT = 50  # an admin's "Not spam" of 500 inquiries: 20 statements, each well under any parameter limit


def new_key() -> str:
    """An idempotency key: ``msg_`` and 32 hex digits from the app's randomness."""
    return "msg_" + clock.random_bytes(16).hex()


def enqueue(
    session: Session,
    inquiry_ids: list[int],
    channels: Sequence[str],
    due: datetime | None = None,
    kind: str = DeliveryKind.INQUIRY,
) -> None:
    """Add one pending delivery per inquiry and channel in the caller's transaction.

    One multi-row ``INSERT`` on the DBAPI cursor (``app.core.driver``), no ORM
    objects and no ``RETURNING``: it runs inside every submission's write
    transaction, where the ORM's unit of work cost several times as long as
    Core on SQLite and Core's executemany clearly longer than one statement
    on the cursor on PostgreSQL (figures: docs/benchmarks.md, "Figures behind the code").
    """
    rows = [_row(inquiry_id, channel, kind, due) for inquiry_id in inquiry_ids for channel in channels]
    connection = session.connection()
    for start in range(0, len(rows), ROWS_PER_INSERT):
        chunk = rows[start : start + ROWS_PER_INSERT]
        values = {f"{name}_{index}": value for index, row in enumerate(chunk) for name, value in row.items()}
        driver.rowcount(connection, _insert_statement(connection.dialect, len(chunk)), values)


@lru_cache(maxsize=16)
def _insert_statement(database: Dialect, count: int) -> driver.Compiled:
    """An ``INSERT`` of ``count`` outbox rows (the columns ``_row`` gives), compiled for ``database``."""
    table = Delivery.__table__
    rows = [
        {name: bindparam(f"{name}_{index}", type_=table.c[name].type) for name in _ROW_COLUMNS}
        for index in range(count)
    ]
    return driver.compile_for(insert(table).values(rows), database)


def add(session: Session, rows: list[tuple[int | None, str, str]]) -> list[int]:
    """Add pending deliveries ``(inquiry id or None, channel, kind)`` in the caller's transaction, due now;
    their ids, in order."""
    inserted = session.connection().execute(
        insert(Delivery.__table__).returning(Delivery.id, sort_by_parameter_order=True),
        [_row(inquiry_id, channel, kind) for inquiry_id, channel, kind in rows],
    )
    return list(inserted.scalars())


_ROW_COLUMNS = (
    "inquiry_id",
    "channel",
    "kind",
    "status",
    "attempts",
    "next_attempt_at",
    "idempotency_key",
    "created_at",
)


def _row(inquiry_id: int | None, channel: str, kind: str, due: datetime | None = None) -> dict:
    now = clock.now()
    return {
        "inquiry_id": inquiry_id,
        "channel": channel,
        "kind": kind,
        "status": DeliveryStatus.PENDING,
        "attempts": 0,
        "next_attempt_at": due or now,
        "idempotency_key": new_key(),
        "created_at": now,
    }


def cancel(session: Session, inquiry_ids: list[int], kinds: Sequence[str]) -> int:
    """Delete, in the caller's transaction, the pending deliveries of ``kinds`` for ``inquiry_ids``: those
    not sent yet, whatever their channel; how many. A send already under way may still go: its row, gone,
    records nothing (``finish`` writes only a row it still holds)."""
    if not inquiry_ids:
        return 0
    table = Delivery.__table__
    pending = table.c.status == DeliveryStatus.PENDING
    cancelled = session.connection().execute(
        delete(table)
        .where(table.c.inquiry_id.in_(inquiry_ids), table.c.kind.in_(list(kinds)), pending)
        .execution_options(preserve_rowcount=True)
    )
    return db.rowcount(cancelled)


def due_now(now: datetime):
    """The condition of a delivery that may be claimed at ``now``."""
    return and_(
        Delivery.status == DeliveryStatus.PENDING,
        Delivery.next_attempt_at <= now,
        or_(Delivery.lease_until.is_(None), Delivery.lease_until < now),
    )


def claim_due(session: Session, now: datetime, limit: int = CLAIM_BATCH) -> tuple[list[int], datetime]:
    """Lease up to ``limit`` due deliveries, oldest due first, in one statement; the ids won and the lease's end."""
    lease_until = now + LEASE
    candidates = select(Delivery.id).where(due_now(now)).order_by(Delivery.next_attempt_at, Delivery.id).limit(limit)
    if session.get_bind().dialect.name == "postgresql":
        candidates = candidates.with_for_update(skip_locked=True)
    won = session.scalars(
        update(Delivery)
        .where(Delivery.id.in_(candidates), due_now(now))
        .values(lease_until=lease_until)
        .returning(Delivery.id)
        .execution_options(synchronize_session=False)
    ).all()
    return sorted(won), lease_until


def release(session: Session, delivery_ids: list[int], lease_until: datetime) -> None:
    """Give back leases not used (the process is stopping), so others may send at once."""
    session.execute(
        update(Delivery)
        .where(Delivery.id.in_(delivery_ids), Delivery.lease_until == lease_until)
        .values(lease_until=None)
        .execution_options(synchronize_session=False)
    )


def claim(session: Session, delivery_id: int, now: datetime) -> datetime | None:
    """Take the lease on one due delivery; its expiry when this caller won, else None."""
    lease_until = now + LEASE
    won = (
        db.rowcount(
            session.execute(
                update(Delivery)
                .where(Delivery.id == delivery_id, due_now(now))
                .values(lease_until=lease_until)
                .execution_options(preserve_rowcount=True)
            )
        )
        == 1
    )
    return lease_until if won else None


@dataclass(frozen=True)
class Outcome:
    """What one attempt came to: ``error`` is None on success (no personal data in it).

    A ``permanent`` error is one no retry can mend (the receiver said the
    address is gone for good, the message cannot be made): the delivery is
    failed at once instead of retried for the rest of the schedule.
    """

    error: str | None = None
    permanent: bool = False
    retry_after: float | None = None  # seconds the receiver asked to wait (HTTP 429's Retry-After)

    @property
    def ok(self) -> bool:
        """Whether the receiver accepted it."""
        return self.error is None


@dataclass(frozen=True)
class Attempt:
    """One attempt made: the row, its outcome, when it ended, and the lease it was made under."""

    row: Delivery
    outcome: Outcome
    at: datetime
    lease_until: datetime


_FINISHED_COLUMNS = ("status", "attempts", "last_error", "next_attempt_at", "delivered_at", "finished_at")


def finish(session: Session, attempts: list[tuple[Attempt, float]]) -> list[str]:
    """Record attempts, each with a jitter (0–1) for its retry; each one's new status (``pending`` means
    retried later).

    One Core ``UPDATE`` run as an executemany, every column it may change
    set on every row (a done row keeps its next attempt time; a retried one
    has no delivery or finish time yet): an ORM update per row held
    SQLite's write lock, which submissions wait for, noticeably longer for
    every delivery, and cost PostgreSQL a round trip each
    (figures: docs/benchmarks.md, "Figures behind the code"). A lease lost meanwhile
    (the send outlived it) writes nothing: the row's new owner records its
    own attempt.
    """
    rows = [_finished(attempt, jitter) for attempt, jitter in attempts]
    if rows:
        table = Delivery.__table__
        session.connection().execute(
            update(table)
            .where(table.c.id == bindparam("row_id"), table.c.lease_until == bindparam("held_until"))
            .values(lease_until=None, **{column: bindparam(column) for column in _FINISHED_COLUMNS}),
            rows,
        )
    return [row["status"] for row in rows]


def _finished(attempt: Attempt, jitter: float) -> dict:
    """The values an attempt leaves on its row: done, failed (the schedule is over, or the error is
    permanent) or retried."""
    row, outcome, now = attempt.row, attempt.outcome, attempt.at
    attempts = row.attempts + 1
    values = {
        "row_id": row.id,
        "held_until": attempt.lease_until,
        "status": DeliveryStatus.PENDING,
        "attempts": attempts,
        "last_error": outcome.error,
        "next_attempt_at": row.next_attempt_at,
        "delivered_at": None,
        "finished_at": None,
    }
    if outcome.ok:
        values.update(status=DeliveryStatus.DONE, delivered_at=now, finished_at=now)
        return values
    last_chance = row.created_at + SCHEDULE  # the schedule's last attempt is about 24 hours in
    if outcome.permanent or (attempts >= MIN_ATTEMPTS and now >= last_chance):
        values.update(status=DeliveryStatus.FAILED, finished_at=now)
    else:
        retry_at = now + retry_delay(attempts, jitter)
        if outcome.retry_after is not None:  # the receiver's own word on when to come back
            retry_at = max(retry_at, now + timedelta(seconds=outcome.retry_after))
        values.update(next_attempt_at=min(retry_at, last_chance) if now < last_chance else retry_at)
    return values


def retry_delay(attempts: int, jitter: float) -> timedelta:
    """The wait after ``attempts`` failed attempts: the base, doubling, capped; stretched by ``jitter`` (0–1) up to 25%.

    Jitter only lengthens the wait, so the first retry is never sooner than
    ``SUNDOWN_DELIVERY_RETRY_BASE``; it spreads retries that failed together.
    """
    base = current_app.config["DELIVERY_RETRY_BASE"]
    seconds = min(base * 2 ** min(attempts - 1, 30), MAX_DELAY.total_seconds())
    return timedelta(seconds=seconds * (1 + 0.25 * jitter))


def next_due_at(session: Session, sample: int = 50) -> datetime | None:
    """When the earliest pending delivery falls due (a leased one when its lease runs out), or None."""
    rows = session.execute(
        select(Delivery.next_attempt_at, Delivery.lease_until)
        .where(Delivery.status == DeliveryStatus.PENDING)
        .order_by(Delivery.next_attempt_at)
        .limit(sample)
    ).all()
    return min((max(due, lease or due) for due, lease in rows), default=None)
