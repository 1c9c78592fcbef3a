"""How the outbox sends notifications: the handler ``app.notify`` registers for its kinds of delivery.

For a batch's notifications it reads, in the batch's one read transaction,
the settings in force, the inquiries, their forms and their files' names
and sizes (never a file's bytes): a few queries, however many rows. Each
delivery then goes out on its channel (``app.notify.channels``) with its
form's settings, over the batch's connection to that receiver. With a
digest interval set, or messages the hourly cap held back, an inquiry's
e-mail (or chat message) takes the other due ones of its channel along: one
message lists them all (``app.notify.digest``), each row recorded under its
own lease.

An e-mail goes only to the recipients who hear of its inquiry's form
(``app.notify.recipients``: a responder's or viewer's address hears of their
forms only). An e-mail digest is one message per group of recipients who hear of the
same inquiries, each listing those; a row whose every recipient is scoped
away is done with no e-mail. An ``assignee`` row is the e-mail of a
person's answer to the inquiry's assignee alone (``app.notify.assignee``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from email.message import EmailMessage

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.attachments import store as attachments
from app.core import clock, db
from app.models import (
    Delivery,
    DeliveryChannel,
    DeliveryKind,
    Form,
    InboundMessage,
    Inquiry,
    MessageKind,
    MessageState,
)
from app.notify import assignee, channels, digest, recipients, spamnote
from app.notify import settings as notify_settings
from app.notify.channels import email
from app.notify.message import File, Notice
from app.outbox.handlers import Batch
from app.outbox.store import Attempt, Outcome

KINDS = (
    DeliveryKind.INQUIRY,
    DeliveryKind.CAPPED,
    DeliveryKind.TEST,
    DeliveryKind.MESSAGE,
    DeliveryKind.SPAM,
    DeliveryKind.ASSIGNEE,
)
ANSWERS = (DeliveryKind.MESSAGE, DeliveryKind.ASSIGNEE)  # the kinds that tell of a person's answer


@dataclass(frozen=True)
class Job:
    """One notification of a batch, with the settings read at the batch's start (the site's), who of the
    recipients is scoped to some forms, and for an ``assignee`` row the address told (None: nobody)."""

    notice: Notice
    settings: notify_settings.Notifications
    scopes: recipients.Scopes
    assignee: str | None = None


class Notifications:
    """The handler of a new inquiry's notifications, the capped ones, an admin's test and a person's answer."""

    def prepare(self, session: Session, rows: list[Delivery]) -> dict[int, Job]:
        """The job of each row whose inquiry is still there (a test has none), by delivery id."""
        config = notify_settings.load(session)
        emails = any(row.channel == DeliveryChannel.EMAIL for row in rows)
        scopes = recipients.load(session) if emails else {}
        found = notices(session, rows, config.include_content)
        assigned = [notice for notice in found if notice.delivery.kind == DeliveryKind.ASSIGNEE]
        told = assignee.to_tell(session, assigned, config, scopes)
        return {notice.delivery.id: Job(notice, config, scopes, told.get(notice.delivery.id)) for notice in found}

    def send(self, job: Job, batch: Batch) -> Outcome | list[Attempt]:
        """One attempt on the row's channel with its form's settings; or a digest: its attempts."""
        if digest.applies(job.notice, job.settings):
            return _deliver_digest(job.notice, batch, job.settings, job.scopes)
        if job.notice.delivery.kind == DeliveryKind.ASSIGNEE:
            return _tell_assignee(job, batch)
        if spamnote.is_note(job.notice):
            return _deliver_listed([job.notice], batch, job.settings.for_form(job.notice.form), job.scopes)
        channel = channels.named(job.notice.delivery.channel)
        if channel is None:
            return Outcome(f"no channel {job.notice.delivery.channel!r}", permanent=True)
        config = job.settings.for_form(job.notice.form)
        if channel.name == DeliveryChannel.EMAIL and not job.notice.is_test:
            heard = recipients.of(config.emails, job.scopes, job.notice.received.form_id)
            if config.emails and not heard:
                return Outcome()  # every recipient is a scoped admin's address without this form: nobody to tell
            config = replace(config, emails=heard)
        return channel.send(job.notice, config, clock.now(), batch)

    def finished(self, session: Session, finished: list[tuple[Delivery, str, datetime]]) -> None:
        """Nothing to keep: the outbox row is the notification's whole record."""


HANDLER = Notifications()


def _tell_assignee(job: Job, batch: Batch) -> Outcome:
    """The e-mail of the answer to the assignee's own address alone; done with no e-mail when nobody is told
    (``app.notify.assignee``)."""
    if job.assignee is None:
        return Outcome()
    config = replace(job.settings.for_form(job.notice.form), emails=[job.assignee])
    return email.CHANNEL.send(job.notice, config, clock.now(), batch)


def _deliver_digest(
    first: Notice, batch: Batch, config: notify_settings.Notifications, scopes: recipients.Scopes
) -> list[Attempt]:
    """The digest on ``first``'s channel of ``first`` and every other due inquiry's row of that channel to the
    site's place (those due now leased here): by e-mail, one per group of recipients who hear of the same
    ones (``send_digests``); in a chat, one message. An attempt for each row listed."""
    now = clock.now()
    channel = first.delivery.channel
    with db.transaction(write=True) as session:
        # With no digest interval, only the rows the hourly cap held back go along; a form's own place, none.
        batched = digest.batches(config, first.form, channel)
        kinds = (DeliveryKind.INQUIRY, DeliveryKind.CAPPED, DeliveryKind.SPAM) if batched else (DeliveryKind.CAPPED,)
        leases = {first.delivery.id: batch.lease_until}
        if not digest.own_place(first.form, channel):
            leases.update(digest.claim_companions(session, first.delivery.id, now, batch.lease_until, kinds, channel))
    companions = [delivery_id for delivery_id in leases if delivery_id != first.delivery.id]
    with db.transaction() as session:
        rows = (
            session.scalars(select(Delivery).where(Delivery.id.in_(companions)).order_by(Delivery.id)).all()
            if companions
            else []
        )
        listed = [first, *notices(session, rows, config.include_content)]
    return _deliver_listed(listed, batch, config, scopes, leases)


def _deliver_listed(
    listed: list[Notice],
    batch: Batch,
    config: notify_settings.Notifications,
    scopes: recipients.Scopes,
    leases: dict[int, datetime] | None = None,
) -> list[Attempt]:
    """``listed``'s messages (``_send_listed``); an attempt for each row, under its lease (``leases``, else
    the batch's for the one row)."""
    outcomes = _send_listed(listed, config, scopes, batch, clock.now())
    sent_at = clock.now()
    held = leases or {listed[0].delivery.id: batch.lease_until}
    return [
        Attempt(notice.delivery, outcomes[notice.delivery.id], sent_at, held[notice.delivery.id]) for notice in listed
    ]


def send_digests(
    listed: list[Notice], config: notify_settings.Notifications, scopes: recipients.Scopes, batch: Batch, now: datetime
) -> dict[int, Outcome]:
    """One e-mail per group of ``config.emails`` that hear of the same rows of ``listed`` (inquiries and spam
    notes, by form), each listing only those (``_message``); each row's outcome, by delivery id: the first
    failure of an e-mail listing it, else done (also when nobody hears of it, or a note's spam is all gone).

    The e-mail to every address keeps the first row's Message-ID; another group's adds a digest of its
    addresses, so that each e-mail has its own, the same on a retry."""
    addresses = config.emails
    with db.transaction() as session:
        counts = {n.delivery.id: spamnote.counts(session, [n], config) for n in listed if spamnote.is_note(n)}
    groups: dict[tuple[int, ...], list[str]] = {}
    for address in addresses:
        heard = tuple(
            notice.delivery.id for notice in listed if recipients.hears_of(address, scopes, notice.received.form_id)
        )
        if heard:
            groups.setdefault(heard, []).append(address)
    outcomes = {notice.delivery.id: Outcome() for notice in listed}
    for heard, group in groups.items():
        message = _message([notice for notice in listed if notice.delivery.id in heard], counts, group, now)
        if message is None:
            continue
        if group != addresses:
            _tell_apart(message, group)
        outcome = email.relay_of(batch).send(message)
        for delivery_id in heard:
            if outcomes[delivery_id].ok:
                outcomes[delivery_id] = outcome
    return outcomes


def _message(listed: list[Notice], counts: dict, to: list[str], now: datetime) -> EmailMessage | None:
    """A digest of ``listed``'s inquiries with its spam notes' counts last (``app.notify.spamnote``), the
    notes alone, or nothing when they are all that is listed and their spam is gone."""
    found = [count for notice in listed for count in counts.get(notice.delivery.id, [])]
    inquiries = [notice for notice in listed if not spamnote.is_note(notice)]
    if inquiries:
        return digest.build(inquiries, to, now, spamnote.lines(found))
    return spamnote.build(listed[0], found, to, now) if found else None


def _tell_apart(message, group: list[str]) -> None:
    """Give the e-mail to ``group`` a Message-ID of its own (the first row's key and a digest of the group)."""
    key = hashlib.sha256("\n".join(sorted(address.casefold() for address in group)).encode()).hexdigest()[:12]
    local, _at, host = message["Message-ID"].strip("<>").partition("@")
    message.replace_header("Message-ID", f"<{local}.{key}@{host}>")


def _send_listed(
    listed: list[Notice], config: notify_settings.Notifications, scopes: recipients.Scopes, batch: Batch, now
) -> dict[int, Outcome]:
    """Each listed row's outcome, by delivery id: e-mails per group of recipients (``send_digests``), or the
    one chat message listing them all."""
    first = listed[0]
    if first.delivery.channel == DeliveryChannel.EMAIL:
        if not email.CHANNEL.configured(config):
            return _each(listed, Outcome("e-mail not configured"))
        return send_digests(listed, config, scopes, batch, now)
    channel = channels.named(first.delivery.channel)
    if channel is None:
        return _each(listed, Outcome(f"no channel {first.delivery.channel!r}", permanent=True))
    notice = replace(first, listed=tuple(listed)) if len(listed) > 1 else first
    return _each(listed, channel.send(notice, config.for_form(first.form), now, batch))


def _each(listed: list[Notice], outcome: Outcome) -> dict[int, Outcome]:
    return {notice.delivery.id: outcome for notice in listed}


def notices(session: Session, rows: Sequence[Delivery], include_content: bool) -> list[Notice]:
    """The notices of ``rows``, in their order, with their inquiries, forms and files: a query each, however
    many rows; those whose inquiry is gone are left out."""
    wanted = sorted({row.inquiry_id for row in rows if row.inquiry_id is not None})
    inquiries = (
        {each.id: each for each in session.scalars(select(Inquiry).where(Inquiry.id.in_(wanted)))} if wanted else {}
    )
    files = attachments.of_inquiries(session, wanted)
    forms = _forms(session)
    answers = _answers(session, [row for row in rows if row.kind in ANSWERS])
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
    """For each ``message`` or ``assignee`` row, by delivery id, the person's latest answer in its thread when it
    was queued."""
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
