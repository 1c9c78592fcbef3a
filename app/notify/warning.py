"""A warning before the first deletion: the site's recipients hear a week ahead when a form starts to lose inquiries.

A new form, a shortened retention or a changed clock can make the cleanup
delete inquiries that nothing deleted before. Each time the stored forecast
is refreshed (``app.inquiries.forecast_store``, after an admin's response,
in the one process that won the refresh's claim), ``decide`` reads it: a
form whose policy (its retention in days and its clock) differs from the one
last warned about, and whose forecast deletes something in the next
``AHEAD`` days, is warned about once: the date of its first deletion (the
real one: a change that deletes tomorrow says tomorrow), the count that day,
and a link to the Retention page's forecast. The forecast is read, never
recomputed. Its subject, first line and closing notice say what its forms
do: delete, anonymise (``Expiry``), or both.

The per-form record of what was warned about is the ``settings`` row
``retention_warned`` (JSON: by form id, the policy, the date, the count and
the delivery that carried it); the e-mail is built from it when the outbox
sends the delivery (kind ``retention``, no inquiry). A lengthened retention
is recorded without a warning. Over the hourly cap (``app.notify``) nothing
is enqueued nor recorded, so the next refresh tries again. The warning is
advance notice, never a hold: the cleanup does not wait for it.

The same pass enqueues the optional weekly summary (``app.notify.summary``),
sent by the same handler.

Recipients are the site's (the environment's or the Notifications page's);
an address of an admin given some forms hears only of those
(``app.notify.recipients``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from email.message import EmailMessage

from flask import current_app
from flask_babel import gettext as _
from flask_babel import ngettext
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.core import clock, db, dialect, i18n
from app.forms import store as form_store
from app.inquiries import forecast
from app.inquiries.retention import Expiry
from app.models import Delivery, DeliveryChannel, DeliveryKind, Form, Setting
from app.notify import recipients, summary
from app.notify import settings as notify_settings
from app.notify.channels import email
from app.notify.message import Notice
from app.notify.settings import Notifications
from app.outbox import hook, store
from app.outbox.handlers import Batch
from app.outbox.store import Outcome

KEY = "retention_warned"
AHEAD = timedelta(days=7)
KINDS = (DeliveryKind.RETENTION, DeliveryKind.RETENTION_WEEK)


@dataclass(frozen=True)
class Warned:
    """What one form was last warned about (or silently recorded: ``delivery`` None)."""

    days: int
    clock: str
    first: date | None = None
    count: int = 0
    delivery: int | None = None

    def as_json(self) -> dict:
        """The record as stored."""
        first = self.first.isoformat() if self.first is not None else None
        return {"days": self.days, "clock": self.clock, "first": first, "count": self.count, "delivery": self.delivery}

    @classmethod
    def of(cls, data: dict) -> Warned:
        """The record stored as ``data``."""
        first = date.fromisoformat(data["first"]) if data.get("first") else None
        return cls(int(data["days"]), str(data["clock"]), first, int(data.get("count") or 0), data.get("delivery"))


def recorded(session: Session) -> dict[int, Warned]:
    """Each form's record, by form id (none yet: empty)."""
    raw = session.scalar(select(Setting.value).where(Setting.key == KEY))
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        data = {}
    return {int(form_id): Warned.of(each) for form_id, each in data.items() if isinstance(each, dict)}


def _put(session: Session, key: str, value: str) -> None:
    statement = dialect.upsert(session, Setting.__table__).values(key=key, value=value)
    session.execute(statement.on_conflict_do_update(index_elements=["key"], set_={"value": statement.excluded.value}))


def changed(before: Warned | None, line: forecast.Line) -> bool:
    """Whether ``line``'s policy may delete what nothing deleted before: a new form, a shorter retention,
    another clock."""
    return before is None or line.retention_days < before.days or line.clock != before.clock


def due(before: Warned | None, line: forecast.Line, today: date) -> Warned | None:
    """The warning ``line`` calls for, its delivery still to add; None when its first deletion is more than
    ``AHEAD`` away or its policy is one already warned about."""
    if not changed(before, line):
        return None
    first = line.first_day()
    if first is None or first - today > AHEAD:
        return None
    count = next(bucket.inquiries for bucket in line.days if bucket.start == first)
    return Warned(line.retention_days, line.clock, first, count)


def decide(computed: forecast.Forecast, over_cap) -> list[int]:
    """Enqueue one warning for the forms ``computed`` calls for and record them, and the weekly summary when
    due (``app.notify.summary``), in one write transaction; the deliveries' ids. ``over_cap(session)`` says
    whether the hourly cap is passed: then that e-mail is neither enqueued nor recorded."""
    with db.transaction(write=True) as session:
        records = recorded(session)
        warned = _warnings(records, computed)
        enqueued = []
        if warned and not over_cap(session):
            delivery = _enqueue(session, DeliveryKind.RETENTION)
            records.update({form_id: replace(each, delivery=delivery) for form_id, each in warned.items()})
            enqueued.append(delivery)
        _put(session, KEY, json.dumps({str(key): each.as_json() for key, each in sorted(records.items())}))
        if summary.due(session, computed.today) and not over_cap(session):
            enqueued.append(_enqueue(session, DeliveryKind.RETENTION_WEEK))
            _put(session, summary.WEEK_KEY, summary.week_of(computed.today))
        return enqueued


def _warnings(records: dict[int, Warned], computed: forecast.Forecast) -> dict[int, Warned]:
    """The warnings ``computed`` calls for, by form id; a lengthened retention is recorded in ``records``."""
    warned: dict[int, Warned] = {}
    for line in computed.lines:
        if line.policy != forecast.INBOX or line.form_id is None:
            continue
        before = records.get(line.form_id)
        found = due(before, line, computed.today)
        if found is not None:
            warned[line.form_id] = found
        elif before is not None and not changed(before, line) and before.days != line.retention_days:
            records[line.form_id] = replace(before, days=line.retention_days)
    return warned


def _enqueue(session: Session, kind: str) -> int:
    [delivery] = store.add(session, [(None, DeliveryChannel.EMAIL, kind)])
    hook.look_next_request()
    return delivery


@dataclass(frozen=True)
class Line:
    """One form's line of a warning; ``anonymise`` when the form anonymises its inquiries instead of deleting."""

    form_id: int
    title: str
    first: date
    count: int
    anonymise: bool = False

    def does(self) -> frozenset[str]:
        """What the cleanup does to the form's inquiries: ``Expiry.DELETE`` or ``Expiry.ANONYMISE``."""
        return frozenset({Expiry.ANONYMISE if self.anonymise else Expiry.DELETE})

    def text(self) -> str:
        """The form, the date and the count."""
        when = i18n.local_date(datetime.combine(self.first, time(12), UTC))
        if self.anonymise:
            return ngettext(
                "%(form)s: %(num)d inquiry will be anonymised on %(when)s, the first under its retention.",
                "%(form)s: %(num)d inquiries will be anonymised on %(when)s, the first under its retention.",
                self.count,
                form=self.title,
                when=when,
            )
        return ngettext(
            "%(form)s: %(num)d inquiry will be deleted on %(when)s, the first under its retention.",
            "%(form)s: %(num)d inquiries will be deleted on %(when)s, the first under its retention.",
            self.count,
            form=self.title,
            when=when,
        )


def lines_of(session: Session, delivery_id: int) -> list[Line]:
    """The forms a warning delivery tells of, from the record (forms deleted since are left out)."""
    records = {form_id: each for form_id, each in recorded(session).items() if each.delivery == delivery_id}
    if not records:
        return []
    forms = session.scalars(select(Form).where(Form.id.in_(records))).all()
    found = [
        Line(
            form.id,
            form_store.words(form.title),
            records[form.id].first or date.min,
            records[form.id].count,
            form.expiry_action == Expiry.ANONYMISE,
        )
        for form in forms
    ]
    return sorted(found, key=lambda each: (each.first, each.title))


def build(delivery: Delivery, found: list, to: list[str], now: datetime) -> EmailMessage:
    """The e-mail of a warning or a weekly summary listing ``found``; its Message-ID is the delivery's key."""
    message = email.build(Notice(delivery=delivery, inquiry=None, include_content=False), to, now)
    del message["Subject"]
    url = f"{current_app.config['ORIGIN']}/admin/retention#forecast"
    link = ["", _("See what each day deletes, and change a retention, on the Retention page:"), url]
    if delivery.kind == DeliveryKind.RETENTION_WEEK:
        subject, head = _summary_words(does(found))
        body = [head, *(each.text() for each in found), *link]
    else:
        subject, head, notice = _warning_words(does(found))
        body = [head, *(each.text() for each in found), *link, "", notice]
    message["Subject"] = subject
    message.set_content("\n".join(body) + "\n")
    return message


def does(found: list) -> frozenset[str]:
    """What the cleanup does to the forms of ``found`` (``Line.does``): delete, anonymise, or both."""
    return frozenset().union(*(each.does() for each in found))


def _warning_words(done: frozenset[str]) -> tuple[str, str, str]:
    """A warning's subject, opening line and closing notice, as its forms delete, anonymise or both."""
    if done == {Expiry.ANONYMISE}:
        return (
            _("Inquiries will be anonymised for the first time"),
            _("The cleanup will start anonymising inquiries of these forms:"),
            _("This is advance notice, not a hold: the cleanup anonymises on these dates unless a retention changes."),
        )
    if Expiry.ANONYMISE in done:
        return (
            _("Inquiries will be deleted or anonymised for the first time"),
            _("The cleanup will start deleting or anonymising inquiries of these forms:"),
            _(
                "This is advance notice, not a hold: the cleanup deletes or anonymises on these dates unless a "
                "retention changes."
            ),
        )
    return (
        _("Inquiries will be deleted for the first time"),
        _("The cleanup will start deleting inquiries of these forms:"),
        _("This is advance notice, not a hold: the cleanup deletes on these dates unless a retention changes."),
    )


def _summary_words(done: frozenset[str]) -> tuple[str, str]:
    """A weekly summary's subject and opening line, as its forms delete, anonymise, both or nothing."""
    if not done:
        return _("What the cleanup deletes in the next seven days"), _("Nothing will be deleted.")
    if done == {Expiry.ANONYMISE}:
        return (
            _("What the cleanup anonymises in the next seven days"),
            _("Anonymised by the cleanup in the next seven days:"),
        )
    if Expiry.ANONYMISE in done:
        return (
            _("What the cleanup deletes or anonymises in the next seven days"),
            _("Deleted or anonymised by the cleanup in the next seven days:"),
        )
    return _("What the cleanup deletes in the next seven days"), _("Deleted by the cleanup in the next seven days:")


def addressed(found: list, config: Notifications, scopes: recipients.Scopes) -> dict[tuple[int, ...], list[str]]:
    """The site's recipients grouped by the forms of ``found`` they hear of (each group one e-mail)."""
    groups: dict[tuple[int, ...], list[str]] = {}
    if not found:  # a summary of nothing: for the addresses that hear of every form
        everyone = [address for address in config.emails if address.casefold() not in scopes]
        return {(): everyone} if everyone else {}
    for address in config.emails:
        heard = tuple(each.form_id for each in found if recipients.hears_of(address, scopes, each.form_id))
        if heard:
            groups.setdefault(heard, []).append(address)
    return groups


@dataclass(frozen=True)
class Job:
    """A warning to send: its row, its forms, the site's settings and the scoped addresses."""

    delivery: Delivery
    found: list  # of ``Line`` (a warning) or ``summary.Line``
    settings: Notifications
    scopes: recipients.Scopes


class Warnings:
    """The handler of the warnings before a first deletion (kind ``retention``)."""

    def prepare(self, session: Session, rows: list[Delivery]) -> dict[int, Job]:
        """Each row's job; a row whose forms are all gone is left out."""
        config = notify_settings.load(session)
        scopes = recipients.load(session)
        jobs = {row.id: Job(row, _lines(session, row), config, scopes) for row in rows}
        return {delivery_id: job for delivery_id, job in jobs.items() if job.found or _is_summary(job.delivery)}

    def send(self, job: Job, batch: Batch) -> Outcome:
        """One e-mail per group of recipients hearing of the same forms; the first failure, else done."""
        if not email.CHANNEL.configured(job.settings):
            return Outcome("e-mail not configured")
        now = clock.now()
        outcome = Outcome()
        for heard, group in addressed(job.found, job.settings, job.scopes).items():
            message = build(job.delivery, [each for each in job.found if each.form_id in heard], group, now)
            if group != job.settings.emails:
                _tell_apart(message, group)
            sent = email.relay_of(batch).send(message)
            outcome = outcome if not outcome.ok else sent
        return outcome

    def finished(self, session: Session, finished: list) -> None:
        """Nothing to keep: the record already says what was warned about."""


HANDLER = Warnings()


def _is_summary(row: Delivery) -> bool:
    return row.kind == DeliveryKind.RETENTION_WEEK


def _lines(session: Session, row: Delivery) -> list:
    return summary.lines_of(session) if _is_summary(row) else lines_of(session, row.id)


def _tell_apart(message: EmailMessage, group: list[str]) -> None:
    """Give the e-mail to ``group`` a Message-ID of its own, the same on a retry."""
    key = hashlib.sha256("\n".join(sorted(address.casefold() for address in group)).encode()).hexdigest()[:12]
    local, _at, host = message["Message-ID"].strip("<>").partition("@")
    message.replace_header("Message-ID", f"<{local}.{key}@{host}>")
