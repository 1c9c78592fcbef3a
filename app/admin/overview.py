"""The Overview page: the inbox over the last year, where owners land after logging in.

Inquiries per week and form, the share answered, and the median time from
receipt to the first reply, each as a chart drawn on the server with its
table. Every count reads through the retention rule (what admins may see)
and the admin's forms (``inquiries.in_scope``): a responder or a viewer sees
only the forms given to them. The weekly counts are one grouped query by
form and UTC day (``dialect.day_of``), added up into ISO weeks here; the
first replies one grouped query by inquiry, as many rows as inquiries
answered by a person in the year.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from babel.dates import format_timedelta
from flask import render_template
from flask_babel import format_date, get_locale
from flask_login import current_user
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.admin import bp, charts, start
from app.admin.inquiries import in_scope
from app.auth import permissions
from app.auth.permissions import Permission
from app.core import clock, db, dialect
from app.forms import store as form_store
from app.inquiries.retention import visible_now
from app.models import Form, Inquiry, Reply, ReplyKind

WEEKS = 52


@dataclass(frozen=True)
class Week:
    """One week's row: its Monday, inquiries and how many are answered."""

    label: str
    inquiries: int
    answered: int

    def share(self) -> float | None:
        """The share answered, from 0 to 1; None for a week with none."""
        return self.answered / self.inquiries if self.inquiries else None


@dataclass(frozen=True)
class FormRow:
    """One form's year: inquiries, answered, and the median time to the first reply (None: no reply)."""

    form: Form
    series: int
    inquiries: int
    answered: int
    median_reply: timedelta | None

    def share(self) -> float | None:
        """The share answered, from 0 to 1; None for a form with no inquiry."""
        return self.answered / self.inquiries if self.inquiries else None


@bp.get("/overview")
def overview():
    """The last year of the inbox, of the forms this admin may read; an owner's getting-started checklist."""
    session = db.get_session()
    today = clock.now().astimezone(UTC).date()
    mondays = [today - timedelta(days=today.weekday(), weeks=WEEKS - 1 - n) for n in range(WEEKS)]
    since = datetime.combine(mondays[0], time(), UTC)
    forms = _forms(session)
    counts = _weekly(session, since, mondays)
    replies = _first_replies(session, since)
    rows = [
        FormRow(
            form,
            n % charts.SERIES_CLASSES,
            sum(week[0] for week in counts[form.id].values()),
            sum(week[1] for week in counts[form.id].values()),
            _median(replies.get(form.id, [])),
        )
        for n, form in enumerate(forms)
    ]
    weeks = [
        Week(_label(monday), sum(counts[f.id][monday][0] for f in forms), sum(counts[f.id][monday][1] for f in forms))
        for monday in mondays
    ]
    return render_template(
        "admin/overview.html",
        weeks=weeks,
        rows=rows,
        weekly_chart=charts.stacked([w.label for w in weeks], [[counts[f.id][m][0] for m in mondays] for f in forms]),
        answered_chart=charts.stacked(
            [w.label for w in weeks], [[round((w.share() or 0) * 100) for w in weeks]], "{:g}%"
        ),
        median_all=_median([each for values in replies.values() for each in values]),
        duration=_duration,
        start=start.for_overview(session, current_user),
    )


def _forms(session: Session) -> list[Form]:
    allowed = permissions.forms_for(current_user, Permission.READ)
    return [form for form in form_store.all_forms(session) if allowed is None or form.id in allowed]


def _weekly(session: Session, since: datetime, mondays: list[date]) -> dict:
    """{form id: {Monday: [inquiries, answered]}} for the weeks from ``since``."""
    day = dialect.day_of(session, Inquiry.created_at)
    statement = (
        select(Inquiry.form_id, day, func.count(), func.count(Inquiry.answered_at))
        .where(visible_now(session), in_scope(), Inquiry.created_at >= since)
        .group_by(Inquiry.form_id, day)
    )
    counts: dict = defaultdict(lambda: {monday: [0, 0] for monday in mondays})
    for form_id, started, number, answered in session.execute(statement):
        received = dialect.as_day(started)
        monday = received - timedelta(days=received.weekday())
        if monday in counts[form_id]:
            counts[form_id][monday][0] += number
            counts[form_id][monday][1] += answered
    return counts


def _first_replies(session: Session, since: datetime) -> dict[int | None, list[float]]:
    """{form id: seconds from receipt to the first reply of a person} for the inquiries received since ``since``."""
    first = (
        select(Reply.inquiry_id, func.min(Reply.created_at).label("first"))
        .where(Reply.kind == ReplyKind.REPLY)
        .group_by(Reply.inquiry_id)
        .subquery()
    )
    statement = (
        select(Inquiry.form_id, Inquiry.created_at, first.c.first)
        .join(first, first.c.inquiry_id == Inquiry.id)
        .where(visible_now(session), in_scope(), Inquiry.created_at >= since)
    )
    found: dict[int | None, list[float]] = defaultdict(list)
    for form_id, received, replied in session.execute(statement):
        replied = replied if replied.tzinfo else replied.replace(tzinfo=UTC)
        found[form_id].append(max(0.0, (replied - received).total_seconds()))
    return found


def _median(seconds: list[float]) -> timedelta | None:
    return timedelta(seconds=statistics.median(seconds)) if seconds else None


def _label(monday: date) -> str:
    return format_date(monday, "medium")


def _duration(value: timedelta | None) -> str:
    """A duration as a person reads it (``3 hours``), in the page's language; a dash for none."""
    if value is None:
        return "—"
    return format_timedelta(value, threshold=1.5, locale=get_locale() or "en")
