"""The send loop: claim due deliveries, build their messages from the inquiries, send, record.

A pass claims a batch in one short write transaction, reads the batch's
inquiries and their files' names and sizes (never a file's bytes) in one
read transaction, sends with no transaction open (a slow receiver holds no
lock) over one SMTP connection and one webhook connection, and records
every attempt of the batch under its lease in one write transaction. So a
busy minute costs a few transactions per batch, not per delivery. Every
attempt is one log line: delivery id, channel, outcome, attempt; never an
address or content.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.attachments import store as attachments
from app.core import clock, db, metrics
from app.models import Delivery, DeliveryStatus, Form, Inquiry
from app.notify import digest, email, outbox, state, webhook
from app.notify import settings as notify_settings
from app.notify.message import File, Notice, webhook_payload
from app.notify.outbox import Outcome
from app.replies import delivery as replies

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


def deliver_due(should_stop: Callable[[], bool] = lambda: False,
                before_send: Callable[[], None] = lambda: None) -> Summary:
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
            claimed, lease_until = outbox.claim_due(session, clock.now())
        if not claimed:
            break
        for status in send_claimed(claimed, lease_until, should_stop, before_send):
            summary.counts[status] += 1
    learn_next_due()
    return summary


def deliver_one(delivery_id: int) -> str | None:
    """Claim and send one delivery; its new status, or None when another sender has it or it is gone."""
    with db.transaction(write=True) as session:
        lease_until = outbox.claim(session, delivery_id, clock.now())
    statuses = [] if lease_until is None else send_claimed([delivery_id], lease_until)
    return statuses[0] if statuses else None


def send_claimed(delivery_ids: list[int], lease_until, should_stop: Callable[[], bool] = lambda: False,
                 before_send: Callable[[], None] = lambda: None) -> list[str]:
    """Send the deliveries this process holds the lease of, in order; the new status of each one attempted.

    Deliveries gone with their inquiry are skipped. A send starts only while
    ``outbox.SEND_MARGIN`` of the lease is left and the process is not
    stopping; the rest are released for the next pass. With a digest
    interval set, an inquiry's e-mail takes the other due ones along: one
    e-mail lists them all (``app.notify.digest``).
    """
    with db.transaction() as session:
        config = notify_settings.load(session)
        notices = _held_notices(session, delivery_ids, lease_until, config.include_content)
    attempts: list[tuple[Delivery, Outcome, datetime]] = []
    statuses: list[str] = []
    recorded: set[int] = set()
    with Channels(config) as channels:
        for index, notice in enumerate(notices):
            before_send()
            if should_stop() or clock.now() > lease_until - outbox.SEND_MARGIN:
                with db.transaction(write=True) as session:
                    outbox.release(session, [each.delivery.id for each in notices[index:]], lease_until)
                break
            if notice.delivery.id in recorded:  # listed in an earlier digest of this batch
                continue
            if digest.applies(notice, config):
                status, listed = _deliver_digest(notice, lease_until, config)
                statuses.append(status)
                recorded.update(listed)
                continue
            outcome = channels.send(notice)
            attempts.append((notice.delivery, outcome, clock.now()))
    return statuses + _record(attempts, lease_until)


class Channels:
    """The connections of one batch, each opened when its first delivery is sent, closed at the end:
    one to the mail relay, one per webhook URL (a form may have its own)."""

    def __init__(self, config: notify_settings.Notifications) -> None:
        self._config = config
        self._stack = ExitStack()
        self._relay: email.Relay | None = None
        self._posters: dict[str, webhook.Poster] = {}

    def __enter__(self) -> Channels:
        return self

    def __exit__(self, *_exc) -> None:
        self._stack.close()

    def send(self, notice: Notice) -> Outcome:
        """One attempt on the delivery's channel, with the settings in force at the batch's start (its
        form's recipients and webhook where it sets them)."""
        config, now = self._config.for_form(notice.form), clock.now()
        if replies.is_reply(notice.delivery):  # to the person who wrote, not the site's recipients
            if not email.configured():
                return Outcome("e-mail not configured")
            return Outcome(replies.send(notice.delivery, notice.inquiry, self._mail_relay))
        if notice.delivery.channel == "email":
            if not config.emails or not email.configured():
                return Outcome("e-mail not configured")
            return self._mail_relay().send(email.build(notice, config.emails, now))
        if not config.webhook_url or not config.secret:
            return Outcome("webhook not configured")
        poster = self._posters.get(config.webhook_url)
        if poster is None:
            poster = self._posters[config.webhook_url] = self._stack.enter_context(
                webhook.Poster(config.webhook_url, config.secret))
        return poster.send(notice.delivery.idempotency_key, webhook_payload(notice, now), now)

    def _mail_relay(self) -> email.Relay:
        if self._relay is None:
            self._relay = self._stack.enter_context(email.Relay())
        return self._relay


def _deliver_digest(first: Notice, lease_until, config: notify_settings.Notifications) -> tuple[str, set[int]]:
    """One e-mail for ``first`` and every other due inquiry e-mail, each row recorded under its lease;
    the first row's status and the ids recorded."""
    now = clock.now()
    with db.transaction(write=True) as session:
        # With no digest interval, only the e-mails the hourly cap held back go along.
        kinds = (outbox.INQUIRY, outbox.CAPPED) if digest.batches(config, first.form) else (outbox.CAPPED,)
        leases = {first.delivery.id: lease_until,
                  **digest.claim_companions(session, first.delivery.id, now, lease_until, kinds)}
    companions = [delivery_id for delivery_id in leases if delivery_id != first.delivery.id]
    with db.transaction() as session:
        rows = session.scalars(select(Delivery).where(Delivery.id.in_(companions)).order_by(Delivery.id)).all() \
            if companions else []
        notices = [first, *_notices(session, rows, config.include_content)]
    if not config.emails or not email.configured():
        outcome = Outcome("e-mail not configured")
    else:
        outcome = email.send(digest.build(notices, config.emails, now))
    sent_at = clock.now()
    statuses = [_record([(notice.delivery, outcome, sent_at)], leases[notice.delivery.id])[0] for notice in notices]
    return statuses[0], {notice.delivery.id for notice in notices}


def _record(attempts: list[tuple[Delivery, Outcome, datetime]], lease_until) -> list[str]:
    """Record attempts (each with the moment it ended) under their lease in one transaction, then a log
    line and the counter each; the statuses."""
    if not attempts:
        return []
    with db.transaction(write=True) as session:
        statuses = outbox.finish(session, [(row, outcome, at, _jitter()) for row, outcome, at in attempts],
                                 lease_until)
        replies.record(session, [(row, status, at)
                                 for (row, _outcome, at), status in zip(attempts, statuses, strict=True)])
    for (row, outcome, _at), status in zip(attempts, statuses, strict=False):
        result = "ok" if outcome.ok else "retry" if status == DeliveryStatus.PENDING else "failed"
        log.info("delivery %s channel=%s kind=%s outcome=%s attempt=%d%s", row.id, row.channel, row.kind, result,
                 row.attempts + 1, f" error={outcome.error!r}" if outcome.error else "")
        metrics.count_delivery(row.channel, result)
    return statuses


def _held_notices(session: Session, delivery_ids: list[int], lease_until, include_content: bool) -> list[Notice]:
    """The notices of the deliveries still pending under this lease, in ``delivery_ids`` order (``_notices``);
    those whose inquiry is gone are left out."""
    rows = session.scalars(
        select(Delivery).where(Delivery.id.in_(delivery_ids), Delivery.status == DeliveryStatus.PENDING,
                               Delivery.lease_until == lease_until)
    ).all()
    order = {delivery_id: index for index, delivery_id in enumerate(delivery_ids)}
    return _notices(session, sorted(rows, key=lambda row: order[row.id]), include_content)


def _notices(session: Session, rows: list[Delivery], include_content: bool) -> list[Notice]:
    """The notices of ``rows``, in their order, with their inquiries, forms and files: a query each, however
    many rows; those whose inquiry is gone are left out."""
    wanted = sorted({row.inquiry_id for row in rows if row.inquiry_id is not None})
    inquiries = {each.id: each for each in session.scalars(select(Inquiry).where(Inquiry.id.in_(wanted)))} \
        if wanted else {}
    files = attachments.of_inquiries(session, wanted)
    forms = _forms(session)
    notices = []
    for row in rows:
        inquiry = inquiries.get(row.inquiry_id)
        if row.inquiry_id is not None and inquiry is None:
            continue
        notices.append(Notice(delivery=row, inquiry=inquiry, include_content=include_content,
                              form=_form_of(forms, inquiry),
                              files=tuple(File.of(each) for each in files.get(row.inquiry_id, ()))))
    return notices


def _forms(session: Session) -> dict[int, Form]:
    """Every form by id (a short table), detached, for the notices of a batch."""
    forms = {form.id: form for form in session.scalars(select(Form))}
    for form in forms.values():
        session.expunge(form)
    return forms


def _form_of(forms: dict[int, Form], inquiry: Inquiry | None) -> Form | None:
    return forms.get(inquiry.form_id) if inquiry is not None and inquiry.form_id is not None else None


def _jitter() -> float:
    """A fraction from 0 to 1 from the app's randomness, to spread retries."""
    return int.from_bytes(clock.random_bytes(2), "big") / 0xFFFF


def _anything_due() -> bool:
    """Whether a pending delivery is due now (a read: no write lock taken)."""
    with db.transaction() as session:
        due = outbox.next_due_at(session)
    return due is not None and due <= clock.now()


def learn_next_due() -> None:
    """Remember in this process when the outbox next needs a look (the database decides who sends)."""
    with db.transaction() as session:
        due = outbox.next_due_at(session)
    now_ms = clock.epoch_ms(clock.now())
    recheck = now_ms + RECHECK_MS
    state.current().next_due_ms = recheck if due is None else min(recheck, clock.epoch_ms(due))

