"""The send loop: claim a due delivery, build its message from the inquiry, send, record.

Each delivery is claimed in its own short write transaction and sent with
no transaction open (a slow receiver holds no lock); the attempt is then
recorded under the lease. Every attempt is one log line: delivery id,
channel, outcome, attempt; never an address or content.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from app import clock, db, metrics
from app.models import Delivery, DeliveryStatus, Inquiry
from app.notify import digest, email, outbox, state, webhook
from app.notify import settings as notify_settings
from app.notify.message import Notice, webhook_payload
from app.notify.outbox import Outcome

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


def deliver_due(should_stop: Callable[[], bool] = lambda: False) -> Summary:
    """Send everything due now, until none is left or ``should_stop``; then remember when next to look."""
    summary = Summary()
    while not should_stop():
        with db.transaction(write=True) as session:
            claimed, lease_until = outbox.claim_due(session, clock.now())
        if not claimed:
            break
        for index, delivery_id in enumerate(claimed):
            if should_stop() or clock.now() > lease_until - outbox.SEND_MARGIN:
                with db.transaction(write=True) as session:
                    outbox.release(session, claimed[index:], lease_until)
                break
            status = send_claimed(delivery_id, lease_until)
            if status is not None:
                summary.counts[status] += 1
    learn_next_due()
    return summary


def deliver_one(delivery_id: int) -> str | None:
    """Claim and send one delivery; its new status, or None when another sender has it or it is gone."""
    with db.transaction(write=True) as session:
        lease_until = outbox.claim(session, delivery_id, clock.now())
    return None if lease_until is None else send_claimed(delivery_id, lease_until)


def send_claimed(delivery_id: int, lease_until) -> str | None:
    """Send a delivery this process holds the lease of; its new status, or None when it is gone.

    With a digest interval set, an inquiry's e-mail takes the other due ones
    along: one e-mail lists them all (``app.notify.digest``).
    """
    with db.transaction() as session:
        config = notify_settings.load(session)
        row = session.get(Delivery, delivery_id)
        notice = _notice(session, row, config.include_content) if _still_held(row, lease_until) else None
    if notice is None:  # gone with its inquiry, or already sent in this process's digest
        return None
    if digest.applies(notice, config):
        return _deliver_digest(notice, lease_until, config)
    return _record(row, lease_until, _send(notice, config))


def _deliver_digest(first: Notice, lease_until, config: notify_settings.Notifications) -> str:
    """One e-mail for ``first`` and every other due inquiry e-mail, each row recorded under its lease."""
    now = clock.now()
    with db.transaction(write=True) as session:
        leases = {first.delivery.id: lease_until,
                  **digest.claim_companions(session, first.delivery.id, now, lease_until)}
    with db.transaction() as session:
        rows = [session.get(Delivery, delivery_id) for delivery_id in leases]
        notices = [first] + [notice for row in rows[1:] if row is not None
                             and (notice := _notice(session, row, config.include_content)) is not None]
    if not config.emails or not email.configured():
        outcome = Outcome("e-mail not configured")
    else:
        outcome = email.send(digest.build(notices, config.emails, now))
    statuses = [_record(notice.delivery, leases[notice.delivery.id], outcome) for notice in notices]
    return statuses[0]


def _record(row: Delivery, lease_until, outcome: Outcome) -> str:
    """Record one attempt under its lease: the log line, the counter; the new status."""
    now = clock.now()
    with db.transaction(write=True) as session:
        status = outbox.finish(session, row, lease_until, outcome, now, _jitter())
    result = "ok" if outcome.ok else "retry" if status == DeliveryStatus.PENDING else "failed"
    log.info("delivery %s channel=%s kind=%s outcome=%s attempt=%d%s", row.id, row.channel, row.kind, result,
             row.attempts + 1, f" error={outcome.error!r}" if outcome.error else "")
    metrics.count_delivery(row.channel, result)
    return status


def _still_held(row: Delivery | None, lease_until) -> bool:
    """Whether ``row`` is still pending under this sender's lease."""
    return row is not None and row.status == DeliveryStatus.PENDING and row.lease_until == lease_until


def _notice(session: Session, row: Delivery, include_content: bool) -> Notice | None:
    inquiry = session.get(Inquiry, row.inquiry_id) if row.inquiry_id is not None else None
    if row.inquiry_id is not None and inquiry is None:
        return None
    return Notice(delivery=row, inquiry=inquiry, include_content=include_content)


def _send(notice: Notice, config: notify_settings.Notifications) -> Outcome:
    """One attempt on the delivery's channel, with the settings in force now."""
    now = clock.now()
    if notice.delivery.channel == "email":
        if not config.emails or not email.configured():
            return Outcome("e-mail not configured")
        return email.send(email.build(notice, config.emails, now))
    if not config.webhook_url or not config.secret:
        return Outcome("webhook not configured")
    return webhook.send(config.webhook_url, config.secret, notice.delivery.idempotency_key,
                        webhook_payload(notice, now), now)


def _jitter() -> float:
    """A fraction from 0 to 1 from the app's randomness, to spread retries."""
    return int.from_bytes(clock.random_bytes(2), "big") / 0xFFFF


def learn_next_due() -> None:
    """Remember in this process when the outbox next needs a look (the database decides who sends)."""
    with db.transaction() as session:
        due = outbox.next_due_at(session)
    now_ms = clock.epoch_ms(clock.now())
    recheck = now_ms + RECHECK_MS
    state.current().next_due_ms = recheck if due is None else min(recheck, clock.epoch_ms(due))

