"""How the outbox sends notifications: the handler ``app.notify`` registers for its kinds of delivery.

For a batch's notifications it reads, in the batch's one read transaction,
the settings in force, the inquiries, their forms and their files' names
and sizes (never a file's bytes): a few queries, however many rows. Each
delivery then goes out on its channel (``app.notify.channels``) with its
form's settings, over the batch's connection to that receiver. With a
digest interval set, or e-mails the hourly cap held back, an inquiry's
e-mail takes the other due ones along: one e-mail lists them all
(``app.notify.digest``), each row recorded under its own lease.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.attachments import store as attachments
from app.core import clock, db
from app.models import Delivery, DeliveryKind, Form, InboundMessage, Inquiry, MessageKind, MessageState
from app.notify import channels, digest, spamnote
from app.notify import settings as notify_settings
from app.notify.channels import email
from app.notify.message import File, Notice
from app.outbox.handlers import Batch
from app.outbox.store import Attempt, Outcome

KINDS = (DeliveryKind.INQUIRY, DeliveryKind.CAPPED, DeliveryKind.TEST, DeliveryKind.MESSAGE, DeliveryKind.SPAM)


@dataclass(frozen=True)
class Job:
    """One notification of a batch, with the settings read at the batch's start (the site's)."""

    notice: Notice
    settings: notify_settings.Notifications


class Notifications:
    """The handler of a new inquiry's notifications, the capped ones, an admin's test and a person's answer."""

    def prepare(self, session: Session, rows: list[Delivery]) -> dict[int, Job]:
        """The job of each row whose inquiry is still there (a test has none), by delivery id."""
        config = notify_settings.load(session)
        return {notice.delivery.id: Job(notice, config) for notice in notices(session, rows, config.include_content)}

    def send(self, job: Job, batch: Batch) -> Outcome | list[Attempt]:
        """One attempt on the row's channel with its form's settings; or a digest: its attempts."""
        if digest.applies(job.notice, job.settings):
            return _deliver_digest(job.notice, batch, job.settings)
        if spamnote.is_note(job.notice):
            return _deliver_listed([job.notice], batch, job.settings.for_form(job.notice.form))
        channel = channels.named(job.notice.delivery.channel)
        if channel is None:
            return Outcome(f"no channel {job.notice.delivery.channel!r}", permanent=True)
        return channel.send(job.notice, job.settings.for_form(job.notice.form), clock.now(), batch)

    def finished(self, session: Session, finished: list[tuple[Delivery, str, datetime]]) -> None:
        """Nothing to keep: the outbox row is the notification's whole record."""


HANDLER = Notifications()


def _deliver_digest(first: Notice, batch: Batch, config: notify_settings.Notifications) -> list[Attempt]:
    """One e-mail, over the batch's relay, for ``first`` and every other due inquiry e-mail to the site's
    recipients (those due now leased here); an attempt for each row it lists."""
    now = clock.now()
    with db.transaction(write=True) as session:
        # With no digest interval, only the e-mails the hourly cap held back go along.
        kinds = (
            (DeliveryKind.INQUIRY, DeliveryKind.CAPPED, DeliveryKind.SPAM)
            if digest.batches(config, first.form)
            else (DeliveryKind.CAPPED,)
        )
        leases = {
            first.delivery.id: batch.lease_until,
            **digest.claim_companions(session, first.delivery.id, now, batch.lease_until, kinds),
        }
    companions = [delivery_id for delivery_id in leases if delivery_id != first.delivery.id]
    with db.transaction() as session:
        rows = (
            session.scalars(select(Delivery).where(Delivery.id.in_(companions)).order_by(Delivery.id)).all()
            if companions
            else []
        )
        listed = [first, *notices(session, rows, config.include_content)]
    return _deliver_listed(listed, batch, config, leases)


def _deliver_listed(
    listed: list[Notice],
    batch: Batch,
    config: notify_settings.Notifications,
    leases: dict[int, datetime] | None = None,
) -> list[Attempt]:
    """One e-mail for ``listed``: a digest of its inquiries, its spam notes' counts last (``app.notify.spamnote``),
    or the notes alone; an attempt for each row. A note whose spam is all gone is done with no e-mail."""
    now = clock.now()
    with db.transaction() as session:
        counts = spamnote.counts(session, listed, config)
    inquiries = [notice for notice in listed if not spamnote.is_note(notice)]
    if not email.CHANNEL.configured(config):
        outcome = Outcome("e-mail not configured")
    elif inquiries:
        outcome = email.relay_of(batch).send(digest.build(inquiries, config.emails, now, spamnote.lines(counts)))
    elif counts:
        outcome = email.relay_of(batch).send(spamnote.build(listed[0], counts, config.emails, now))
    else:
        outcome = Outcome(None)
    sent_at = clock.now()
    held = leases or {listed[0].delivery.id: batch.lease_until}
    return [Attempt(notice.delivery, outcome, sent_at, held[notice.delivery.id]) for notice in listed]


def notices(session: Session, rows: Sequence[Delivery], include_content: bool) -> list[Notice]:
    """The notices of ``rows``, in their order, with their inquiries, forms and files: a query each, however
    many rows; those whose inquiry is gone are left out."""
    wanted = sorted({row.inquiry_id for row in rows if row.inquiry_id is not None})
    inquiries = (
        {each.id: each for each in session.scalars(select(Inquiry).where(Inquiry.id.in_(wanted)))} if wanted else {}
    )
    files = attachments.of_inquiries(session, wanted)
    forms = _forms(session)
    answers = _answers(session, [row for row in rows if row.kind == DeliveryKind.MESSAGE])
    found = []
    for row in rows:
        inquiry = None if row.inquiry_id is None else inquiries.get(row.inquiry_id)
        if row.inquiry_id is not None and inquiry is None:
            continue
        found.append(
            Notice(
                delivery=row,
                inquiry=inquiry,
                include_content=include_content,
                form=_form_of(forms, inquiry),
                files=tuple(File.of(each) for each in own_files(files, inquiry)),
                answer=answers.get(row.id),
            )
        )
    return found


def _answers(session: Session, rows: list[Delivery]) -> dict[int, InboundMessage]:
    """For each ``message`` row, by delivery id, the person's latest answer in its thread when it was queued."""
    if not rows:
        return {}
    found = {}
    for row in rows:
        found[row.id] = session.scalars(
            select(InboundMessage)
            .where(
                InboundMessage.inquiry_id == row.inquiry_id,
                InboundMessage.state == MessageState.THREAD,
                InboundMessage.kind == MessageKind.MESSAGE,
                InboundMessage.received_at <= row.created_at,
            )
            .order_by(InboundMessage.received_at.desc(), InboundMessage.id.desc())
            .limit(1)
        ).first()
    return {delivery_id: answer for delivery_id, answer in found.items() if answer is not None}


def _forms(session: Session) -> dict[int, Form]:
    """Every form by id (a short table), detached, for the notices of a batch."""
    forms = {form.id: form for form in session.scalars(select(Form))}
    for form in forms.values():
        session.expunge(form)
    return forms


def _form_of(forms: dict[int, Form], inquiry: Inquiry | None) -> Form | None:
    return forms.get(inquiry.form_id) if inquiry is not None and inquiry.form_id is not None else None


def own_files(files: dict, inquiry: Inquiry | None) -> tuple:
    """The files of ``inquiry`` among ``files`` (none for a test notification, which has no inquiry)."""
    return () if inquiry is None else tuple(files.get(inquiry.id, ()))
