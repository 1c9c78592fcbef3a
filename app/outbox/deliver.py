"""The send loop: claim due deliveries, hand each to the handler of its kind, record the outcomes.

A pass claims a batch in one short write transaction, reads the batch's
rows and what their handlers need (an inquiry, its files' names and sizes,
never a file's bytes) in one read transaction, sends with no transaction
open (a slow receiver holds no lock) over the batch's connections (one per
receiver: one SMTP connection, one per webhook URL), and records every
attempt of the batch under its lease in one write transaction. So a busy
minute costs a few transactions per batch, not per delivery. Every attempt
is one log line: delivery id, channel, kind, outcome, attempt; never an
address or content.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.core import clock, db, metrics
from app.models import Delivery, DeliveryStatus
from app.outbox import handlers, state, store
from app.outbox.handlers import Batch
from app.outbox.store import Attempt, Outcome

log = logging.getLogger(__name__)

RECHECK_MS = 5 * 60 * 1000  # with nothing due, look at the outbox again after this long (other processes' rows)


@dataclass
class Summary:
    """What a pass over the outbox did: attempts by resulting status."""

    counts: dict[str, int] = field(default_factory=lambda: {"done": 0, "pending": 0, "failed": 0})

    @property
    def attempts(self) -> int:
        """How many deliveries were attempted."""
        return sum(self.counts.values())


def deliver_due(
    should_stop: Callable[[], bool] = lambda: False, before_send: Callable[[], None] = lambda: None
) -> Summary:
    """Send everything due now, until none is left or ``should_stop``; then remember when next to look.

    ``before_send`` is called before each claim and each send (the runner
    waits there for a quiet moment). Waiting before the claim lets a burst's
    deliveries gather into one batch, claimed and recorded in one
    transaction each, instead of one small batch per submission. A pass with
    nothing due learns so from one read and neither waits nor claims: the
    runner's other jobs (a cleanup run) are not held up behind it.
    """
    summary = Summary()
    while not should_stop() and _anything_due():
        before_send()
        with db.transaction(write=True) as session:
            claimed, lease_until = store.claim_due(session, clock.now())
        if not claimed:
            break
        for status in send_claimed(claimed, lease_until, should_stop, before_send):
            summary.counts[status] += 1
    learn_next_due()
    return summary


def deliver_one(delivery_id: int) -> str | None:
    """Claim and send one delivery; its new status, or None when another sender has it or it is gone."""
    with db.transaction(write=True) as session:
        lease_until = store.claim(session, delivery_id, clock.now())
    statuses = [] if lease_until is None else send_claimed([delivery_id], lease_until)
    return statuses[0] if statuses else None


def send_claimed(
    delivery_ids: list[int],
    lease_until: datetime,
    should_stop: Callable[[], bool] = lambda: False,
    before_send: Callable[[], None] = lambda: None,
) -> list[str]:
    """Send the deliveries this process holds the lease of, in order; the new status of each one attempted.

    Deliveries gone (with their inquiry) are skipped. A send starts only
    while ``store.SEND_MARGIN`` of the lease is left and the process is not
    stopping; the rest are released for the next pass. A handler may send
    other rows along with one (a digest): those are recorded at once, and
    skipped when their turn in the batch comes.
    """
    with db.transaction() as session:
        rows, items = _prepared(session, delivery_ids, lease_until)
    attempts: list[Attempt] = []
    statuses: list[str] = []
    recorded: set[int] = set()
    with Batch(lease_until) as batch:
        for index, row in enumerate(rows):
            before_send()
            if should_stop() or clock.now() > lease_until - store.SEND_MARGIN:
                with db.transaction(write=True) as session:
                    store.release(session, [each.id for each in rows[index:]], lease_until)
                break
            if row.id in recorded:  # sent along with an earlier row of this batch
                continue
            sent = _send(row, items[row.id], batch)
            if isinstance(sent, Outcome):
                attempts.append(Attempt(row, sent, clock.now(), lease_until))
                continue
            statuses += record(sent)
            recorded.update(attempt.row.id for attempt in sent)
    return statuses + record(attempts)


def _send(row: Delivery, item: Any, batch: Batch) -> Outcome | list[Attempt]:
    handler = handlers.of(row.kind)
    if handler is None:  # a kind no client of this version sends: retrying cannot help
        return Outcome(f"no sender for kind {row.kind!r}", permanent=True)
    return handler.send(item, batch)


def _prepared(session: Session, delivery_ids: list[int], lease_until: datetime) -> tuple[list[Delivery], dict]:
    """The deliveries still pending under this lease, in ``delivery_ids`` order, and what each handler
    prepared for its own (a few queries per handler, however many rows); those it left out are dropped."""
    rows = session.scalars(
        select(Delivery).where(
            Delivery.id.in_(delivery_ids),
            Delivery.status == DeliveryStatus.PENDING,
            Delivery.lease_until == lease_until,
        )
    ).all()
    order = {delivery_id: index for index, delivery_id in enumerate(delivery_ids)}
    rows = sorted(rows, key=lambda row: order[row.id])
    items: dict[int, Any] = {row.id: None for row in rows if handlers.of(row.kind) is None}
    for handler, own in _by_handler(rows, lambda row: row):
        items.update(handler.prepare(session, own))
    return [row for row in rows if row.id in items], items


def _by_handler(entries: list, row_of: Callable[[Any], Delivery]) -> list[tuple[handlers.Handler, list]]:
    """``entries`` grouped by the handler of their row's kind, in order (those of no handler left out)."""
    grouped: dict[int, tuple[handlers.Handler, list]] = {}
    for entry in entries:
        handler = handlers.of(row_of(entry).kind)
        if handler is not None:
            grouped.setdefault(id(handler), (handler, []))[1].append(entry)
    return list(grouped.values())


def record(attempts: list[Attempt]) -> list[str]:
    """Record attempts (each under the lease it was made under) in one transaction, with what their
    handlers keep of them; then a log line and the counter each. Their new statuses, in order."""
    if not attempts:
        return []
    with db.transaction(write=True) as session:
        statuses = store.finish(session, [(attempt, _jitter()) for attempt in attempts])
        finished = [(attempt.row, status, attempt.at) for attempt, status in zip(attempts, statuses, strict=True)]
        for handler, own in _by_handler(finished, lambda each: each[0]):
            handler.finished(session, own)
    for attempt, status in zip(attempts, statuses, strict=True):
        row, outcome = attempt.row, attempt.outcome
        result = "ok" if outcome.ok else "retry" if status == DeliveryStatus.PENDING else "failed"
        log.info(
            "delivery %s channel=%s kind=%s outcome=%s attempt=%d%s",
            row.id,
            row.channel,
            row.kind,
            result,
            row.attempts + 1,
            f" error={outcome.error!r}" if outcome.error else "",
        )
        metrics.count_delivery(row.channel, result)
    return statuses


def _jitter() -> float:
    """A fraction from 0 to 1 from the app's randomness, to spread retries."""
    return int.from_bytes(clock.random_bytes(2), "big") / 0xFFFF


def _anything_due() -> bool:
    """Whether a pending delivery is due now (a read: no write lock taken)."""
    with db.transaction() as session:
        due = store.next_due_at(session)
    return due is not None and due <= clock.now()


def learn_next_due() -> None:
    """Remember in this process when the outbox next needs a look (the database decides who sends)."""
    with db.transaction() as session:
        due = store.next_due_at(session)
    now_ms = clock.epoch_ms(clock.now())
    recheck = now_ms + RECHECK_MS
    state.current().next_due_ms = recheck if due is None else min(recheck, clock.epoch_ms(due))
