"""The forecast: how many inquiries, files and bytes the cleanup deletes on each coming day and month.

For each form and policy (the inbox and spam), following the retention
rule (``app.inquiries.retention``): an inquiry is deleted on the UTC day its
retention ends, counted from receipt or, for a form whose clock is
``Clock.LAST_MESSAGE``, from its thread's last message; one already past it
counts on today (the next cleanup deletes it); one on legal hold not at all.
A form that anonymises its inquiries instead (``retention.Expiry``) has
lines whose ``action`` says so, counting the inquiries the cleanup will
anonymise (never one anonymised already); its spam is deleted as any form's.

The counts come from grouped queries, one per policy and retention: the
inquiries of the forms sharing it, read along the ``(status, form_id,
created_at)`` index up to the horizon's bound and grouped by the UTC day
their clock started (``dialect.day_of``); files and bytes from the files'
side, each file looking up its inquiry by key. Python then only adds up
days, about 400 groups per form, never inquiries.

Reading every inquiry in the horizon is still a read of most of the table:
seconds at a million rows, so pages never compute it. They read the stored
snapshot (``app.inquiries.forecast_store``), refreshed after a response.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, case, func, or_, select, true
from sqlalchemy.orm import QueryableAttribute, Session

from app.core import dialect
from app.inquiries import retention
from app.models import Attachment, Form, Inquiry

DAYS = 30
MONTHS = 12
SPAM = "spam"
INBOX = "inbox"


@dataclass
class Bucket:
    """What is deleted in one day or month starting on ``start``."""

    start: date
    inquiries: int = 0
    files: int = 0
    bytes: int = 0

    def add(self, inquiries: int, files: int, size: int) -> None:
        """Count more inquiries, files and bytes here."""
        self.inquiries += inquiries
        self.files += files
        self.bytes += size


@dataclass
class Line:
    """One form's forecast for one policy (``policy``: "inbox" or "spam"); ``form_id`` None: every form."""

    form_id: int | None
    policy: str
    retention_days: int
    clock: str
    days: list[Bucket] = field(default_factory=list)
    months: list[Bucket] = field(default_factory=list)
    action: str = retention.Expiry.DELETE  # what the cleanup does to them: delete or anonymise

    def total(self) -> int:
        """Inquiries deleted in the twelve months."""
        return sum(bucket.inquiries for bucket in self.months)

    def next_days(self) -> int:
        """Inquiries deleted in the next thirty days."""
        return sum(bucket.inquiries for bucket in self.days)

    def first_day(self) -> date | None:
        """The first day on which something is deleted, in the thirty days."""
        return next((bucket.start for bucket in self.days if bucket.inquiries), None)


@dataclass
class Forecast:
    """Every line from ``today`` on: each form's inbox and spam."""

    today: date
    lines: list[Line]

    def line(self, form_id: int | None, policy: str) -> Line | None:
        """The line of form ``form_id`` and ``policy``."""
        return next((each for each in self.lines if each.form_id == form_id and each.policy == policy), None)

    def summed(self, policy: str, form_ids: Iterable[int] | None = None, action: str | None = None) -> Line:
        """One line adding up ``policy``'s lines (of ``form_ids``, or every form; of one ``action``, or both)."""
        wanted = None if form_ids is None else set(form_ids)
        total = Line(None, policy, 0, retention.Clock.RECEIVED, *empty_buckets(self.today), action=action or "")
        for each in self.lines:
            if each.policy == policy and (wanted is None or each.form_id in wanted) and action in (None, each.action):
                for mine, theirs in zip(total.days + total.months, each.days + each.months, strict=True):
                    mine.add(theirs.inquiries, theirs.files, theirs.bytes)
        return total


def empty_buckets(today: date) -> tuple[list[Bucket], list[Bucket]]:
    """Thirty days from ``today`` and twelve months from the first of its month, all empty."""
    days = [Bucket(today + timedelta(days=n)) for n in range(DAYS)]
    months = [Bucket(month_start(today, n)) for n in range(MONTHS)]
    return days, months


def month_start(today: date, ahead: int) -> date:
    """The first day of the month ``ahead`` months after ``today``'s."""
    index = today.year * 12 + today.month - 1 + ahead
    return date(index // 12, index % 12 + 1, 1)


@dataclass(frozen=True)
class _Group:
    """Forms sharing one retention and clock under one policy."""

    days: int
    last_message: bool
    anonymise: bool
    form_ids: tuple[int | None, ...]


def compute(session: Session, now: datetime) -> Forecast:
    """The forecast at ``now`` for every form and both policies."""
    today = now.astimezone(UTC).date()
    end = month_start(today, MONTHS)
    lines = []
    for policy in retention.POLICIES:
        groups = _groups(session, policy)
        counts = _counts(session, policy, groups, end)
        for group in groups:
            for form_id in group.form_ids:
                if form_id is None:
                    continue
                clock_name = retention.Clock.LAST_MESSAGE if group.last_message else retention.Clock.RECEIVED
                line = Line(form_id, policy.status, group.days, clock_name, *empty_buckets(today), _action(group))
                _fill(line, today, counts.get(form_id, {}))
                lines.append(line)
    return Forecast(today, lines)


def _groups(session: Session, policy: retention.Policy) -> list[_Group]:
    """The forms (and inquiries with no form: ``None``) grouped by their retention and clock."""
    site = retention.retention_days(session, policy)
    own = retention.form_retentions(session, policy)
    inbox = policy is retention.INBOX
    clocks = retention.from_last_message(session) if inbox else frozenset()
    anonymising = retention.anonymising(session) if inbox else frozenset()
    by: dict[tuple[int, bool, bool], list[int | None]] = defaultdict(list)
    by[site, False, False].append(None)
    for form_id in session.scalars(select(Form.id).order_by(Form.id)):
        by[own.get(form_id, site), form_id in clocks, form_id in anonymising].append(form_id)
    return [_Group(*key, tuple(ids)) for key, ids in sorted(by.items(), key=lambda kv: kv[0])]


def _action(group: _Group) -> str:
    return retention.Expiry.ANONYMISE if group.anonymise else retention.Expiry.DELETE


def _not_done(group: _Group) -> ColumnElement[bool]:
    """An anonymising group's inquiries not anonymised yet (those are never expired again); any other's."""
    return Inquiry.anonymised_at.is_(None) if group.anonymise else true()


def _start(group: _Group) -> ColumnElement[Any] | QueryableAttribute[Any]:
    """When an inquiry's retention started: receipt, or the later of it and the last message."""
    if not group.last_message:
        return Inquiry.created_at
    later = and_(Inquiry.last_message_at.is_not(None), Inquiry.last_message_at > Inquiry.created_at)
    return case((later, Inquiry.last_message_at), else_=Inquiry.created_at)


def _bound(group: _Group, end: date) -> datetime:
    """Inquiries whose clock started before this are deleted before ``end``."""
    return datetime.combine(end, time(), UTC) - timedelta(days=group.days)


def _in_group(group: _Group) -> ColumnElement[bool]:
    ids = [each for each in group.form_ids if each is not None]
    listed = Inquiry.form_id.in_(ids)
    return or_(listed, Inquiry.form_id.is_(None)) if None in group.form_ids else listed


def _counts(session: Session, policy: retention.Policy, groups: list[_Group], end: date) -> dict:
    """{form id: {start day: [inquiries, files, bytes]}} for every group of ``policy``."""
    counts: dict = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    for group in groups:
        start = _start(group)
        day = dialect.day_of(session, start)
        bound = _bound(group, end)
        kept = and_(
            Inquiry.status == policy.status,
            Inquiry.legal_hold.is_(False),
            start < bound,
            _in_group(group),
            _not_done(group),
        )
        rows = session.execute(
            select(Inquiry.form_id, day, func.count())
            .where(kept, Inquiry.created_at < bound)
            .group_by(Inquiry.form_id, day)
        )
        for form_id, started, number in rows:
            counts[form_id][dialect.as_day(started)][0] += number
        for form_id, started, files, size in session.execute(_files(session, policy, group, bound)):
            entry = counts[form_id][dialect.as_day(started)]
            entry[1] += files
            entry[2] += int(size or 0)
    return counts


def _files(session: Session, policy: retention.Policy, group: _Group, bound: datetime):
    """Files and bytes of the group's inquiries, from the files' side: each file looks its inquiry up by key.

    The status is compared as ``status || ''`` so that no index on the
    inquiries can lead (``retention.visible_in``'s ``by_id``): the planner
    walks the files, not the inquiries.
    """
    start = _start(group)
    day = dialect.day_of(session, start)
    kept = and_(
        Inquiry.status.concat("") == policy.status,
        Inquiry.legal_hold.is_(False),
        start < bound,
        _in_group(group),
        _not_done(group),
    )
    return (
        select(Inquiry.form_id, day, func.count(Attachment.id), func.sum(Attachment.size))
        .select_from(Attachment)
        .join(Inquiry, Inquiry.id == Attachment.inquiry_id)
        .where(kept)
        .group_by(Inquiry.form_id, day)
    )


def _fill(line: Line, today: date, by_day: dict) -> None:
    """Put each start day's counts in the day and month its retention ends (today for those past it)."""
    for started, (inquiries, files, size) in by_day.items():
        deleted = max(today, started + timedelta(days=line.retention_days))
        offset = (deleted - today).days
        if offset < DAYS:
            line.days[offset].add(inquiries, files, size)
        month = (deleted.year - today.year) * 12 + deleted.month - today.month
        if month < MONTHS:
            line.months[month].add(inquiries, files, size)


def as_json(forecast: Forecast) -> dict:
    """The forecast as JSON-ready data."""
    return {
        "today": forecast.today.isoformat(),
        "lines": [
            {
                "form_id": line.form_id,
                "policy": line.policy,
                "retention_days": line.retention_days,
                "clock": line.clock,
                "action": line.action,
                "days": [_bucket_json(bucket) for bucket in line.days],
                "months": [_bucket_json(bucket) for bucket in line.months],
            }
            for line in forecast.lines
        ],
    }


def _bucket_json(bucket: Bucket) -> dict:
    return {
        "start": bucket.start.isoformat(),
        "inquiries": bucket.inquiries,
        "files": bucket.files,
        "bytes": bucket.bytes,
    }


def from_json(data: dict) -> Forecast:
    """A forecast stored by ``as_json``."""
    lines = [
        Line(
            each["form_id"],
            each["policy"],
            each["retention_days"],
            each["clock"],
            [_bucket_of(bucket) for bucket in each["days"]],
            [_bucket_of(bucket) for bucket in each["months"]],
            each.get("action", retention.Expiry.DELETE),
        )
        for each in data["lines"]
    ]
    return Forecast(date.fromisoformat(data["today"]), lines)


def _bucket_of(data: dict) -> Bucket:
    return Bucket(date.fromisoformat(data["start"]), data["inquiries"], data["files"], data["bytes"])
