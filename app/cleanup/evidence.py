"""The retention report: what an auditor asks of one form for a period, from what the site records.

Per form: its policy (its own period or the site's, for the inbox and for
spam) and its clock; the inquiries on legal hold and how long each has been
held; the oldest inquiry stored now. For the period, the form's inquiries
the cleanup deleted (inbox and spam) and anonymised, those admins deleted
and those erased on request, each counted per form where it happened
(``app.inquiries.tally``); and the cleanup runs and how many failed, which
serve every form at once (``site_wide`` names those two).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.inquiries import retention, tally
from app.models import CleanupRun, CleanupStatus, Form, Inquiry, InquiryStatus, TallyKind

FAILED = (CleanupStatus.ERROR, CleanupStatus.ABANDONED)
SITE_WIDE = ("runs", "failed_runs")
CLEANUP_DELETIONS = (TallyKind.INQUIRIES, TallyKind.SPAM)
ADMIN_DELETIONS = (TallyKind.DELETED, TallyKind.SPAM_DELETED)


@dataclass(frozen=True)
class Period:
    """The days from ``first`` to ``last``, both included (UTC)."""

    first: date
    last: date

    @property
    def start(self) -> datetime:
        """The period's first moment."""
        return datetime.combine(self.first, time.min, UTC)

    @property
    def end(self) -> datetime:
        """The moment after the period."""
        return datetime.combine(self.last + timedelta(days=1), time.min, UTC)


@dataclass
class Report:
    """One form's retention evidence for a period (see the module docstring)."""

    form: Form
    period: Period
    retention_days: int
    spam_retention_days: int
    clock: str
    expiry: str = retention.Expiry.DELETE
    holds: list[tuple[int, datetime | None]] = field(default_factory=list)
    oldest: datetime | None = None
    runs: int = 0
    failed_runs: int = 0
    deleted_by_cleanup: dict[str, int] = field(default_factory=dict)
    anonymised_by_cleanup: int = 0  # inquiries of forms that anonymise, kept without what named a person
    deleted_by_admins: int = 0
    erased: int = 0


def build(session: Session, form: Form, period: Period) -> Report:
    """Gather the report of ``form`` for ``period``."""
    report = Report(
        form=form,
        period=period,
        retention_days=form.retention_days or retention.retention_days(session),
        spam_retention_days=form.spam_retention_days or retention.spam_retention_days(session),
        clock=form.retention_clock,
        expiry=form.expiry_action,
    )
    held = select(Inquiry.id, Inquiry.held_at).where(Inquiry.form_id == form.id, Inquiry.legal_hold.is_(True))
    report.holds = [(row.id, row.held_at) for row in session.execute(held.order_by(Inquiry.id))]
    oldest = [_oldest(session, form.id, status) for status in (InquiryStatus.INBOX, InquiryStatus.SPAM)]
    report.oldest = min((each for each in oldest if each is not None), default=None)
    _add_runs(session, report)
    counted = tally.totals(session, form.id, period.start, period.end)
    report.deleted_by_cleanup = {kind.value: counted.get(kind, 0) for kind in CLEANUP_DELETIONS}
    report.anonymised_by_cleanup = counted.get(TallyKind.ANONYMISED, 0)
    report.deleted_by_admins = sum(counted.get(kind, 0) for kind in ADMIN_DELETIONS)
    report.erased = counted.get(TallyKind.ERASED, 0)
    return report


def _oldest(session: Session, form_id: int, status: str) -> datetime | None:
    """The oldest inquiry of the form in one folder: the first row of its index range."""
    return session.scalar(
        select(Inquiry.created_at)
        .where(Inquiry.status == status, Inquiry.form_id == form_id)
        .order_by(Inquiry.created_at)
        .limit(1)
    )


def _add_runs(session: Session, report: Report) -> None:
    """The period's runs, for every form, and how many of them failed."""
    runs, failed = session.execute(
        select(func.count(), func.count().filter(CleanupRun.status.in_(FAILED))).where(
            CleanupRun.started_at >= report.period.start, CleanupRun.started_at < report.period.end
        )
    ).one()
    report.runs, report.failed_runs = runs, failed


def as_dict(report: Report, now: datetime) -> dict[str, Any]:
    """The report as JSON-ready data (no personal data: ids, dates and counts)."""
    return {
        "form": {"id": report.form.id, "slug": report.form.slug},
        "period": {"first": report.period.first.isoformat(), "last": report.period.last.isoformat()},
        "policy": {
            "retention_days": report.retention_days,
            "spam_retention_days": report.spam_retention_days,
            "clock": report.clock,
            "expiry": report.expiry,
        },
        "holds": [
            {"inquiry_id": inquiry_id, "held_at": _iso(held_at), "held_days": _days(now, held_at)}
            for inquiry_id, held_at in report.holds
        ],
        "oldest_inquiry_at": _iso(report.oldest),
        "runs": report.runs,
        "failed_runs": report.failed_runs,
        "deleted_by_cleanup": report.deleted_by_cleanup,
        "anonymised_by_cleanup": report.anonymised_by_cleanup,
        "deleted_by_admins": report.deleted_by_admins,
        "erased": report.erased,
        "site_wide": list(SITE_WIDE),
    }


def csv_rows(report: Report, now: datetime) -> list[tuple[str, str]]:
    """The report as ``(field, value)`` rows, one figure a row, each hold on its own."""
    data = as_dict(report, now)
    rows = [
        ("form", report.form.slug),
        ("period_first", data["period"]["first"]),
        ("period_last", data["period"]["last"]),
        *((f"policy_{key}", str(value)) for key, value in data["policy"].items()),
        ("oldest_inquiry_at", data["oldest_inquiry_at"] or ""),
        ("runs", str(report.runs)),
        ("failed_runs", str(report.failed_runs)),
        *((f"deleted_by_cleanup_{key}", str(value)) for key, value in report.deleted_by_cleanup.items()),
        ("anonymised_by_cleanup", str(report.anonymised_by_cleanup)),
        ("deleted_by_admins", str(report.deleted_by_admins)),
        ("erased", str(report.erased)),
    ]
    rows += [(f"hold_{hold['inquiry_id']}_held_days", str(hold["held_days"])) for hold in data["holds"]]
    return rows


def held_days(now: datetime, held_at: datetime | None) -> int | None:
    """Whole days an inquiry has been on hold at ``now``; None when the hold's time is not known."""
    return _days(now, held_at)


def _days(now: datetime, moment: datetime | None) -> int | None:
    return (now - moment).days if moment is not None else None


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None
