"""The forecast on the admin pages: the Retention page's and each form's, and the owners' JSON.

The numbers come from the stored forecast (``app.inquiries.forecast_store``):
a page never computes it. The JSON computes it when none follows the
current retentions (an owner's script asked, and gets the truth).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from babel.dates import format_skeleton
from flask import jsonify
from flask_babel import format_date, get_locale

from app.admin import bp, charts
from app.core import clock, db
from app.inquiries import forecast, forecast_store
from app.inquiries.forecast import INBOX, SPAM, Bucket, Line


@dataclass(frozen=True)
class Row:
    """One row of a forecast's table: a day or a month, inquiries and spam, files and bytes."""

    label: str
    inquiries: int
    spam: int
    files: int
    bytes: int


@dataclass(frozen=True)
class View:
    """A forecast as a page shows it: two charts and their tables, and when it was computed."""

    computed_at: object
    days_chart: charts.Chart
    months_chart: charts.Chart
    days: list[Row]
    months: list[Row]
    inbox: Line
    spam: Line


def view(snapshot: forecast_store.Snapshot | None, form_ids: list[int] | None = None) -> View | None:
    """The page's view of ``snapshot`` (of the forms ``form_ids``, or all); None when there is none yet."""
    if snapshot is None:
        return None
    inbox = snapshot.forecast.summed(INBOX, form_ids)
    spam = snapshot.forecast.summed(SPAM, form_ids)
    days = _rows(inbox.days, spam.days, _day_label)
    months = _rows(inbox.months, spam.months, _month_label)
    return View(snapshot.computed_at, _chart(days), _chart(months), days, months, inbox, spam)


def _rows(inbox: list[Bucket], spam: list[Bucket], label) -> list[Row]:
    return [
        Row(label(mine.start), mine.inquiries, theirs.inquiries, mine.files + theirs.files, mine.bytes + theirs.bytes)
        for mine, theirs in zip(inbox, spam, strict=True)
    ]


def _chart(rows: list[Row]) -> charts.Chart:
    return charts.stacked([row.label for row in rows], [[row.inquiries for row in rows], [row.spam for row in rows]])


def _day_label(day: date) -> str:
    return format_date(day, "medium")


def _month_label(day: date) -> str:
    return format_skeleton("yMMM", day, locale=get_locale() or "en")


@bp.get("/retention/forecast.json")
def retention_forecast():
    """Every form's forecast, inbox and spam, by day and month, as JSON.

    When none stored follows the current retentions, it is computed for this
    answer (an owner's script gets the truth) and not stored: a GET changes
    nothing; the refresh after the response stores one.
    """
    session = db.get_session()
    snapshot = forecast_store.current(session)
    if snapshot is None:
        now = clock.now()
        snapshot = forecast_store.Snapshot(forecast.compute(session, now), now)
    return jsonify({"computed_at": snapshot.computed_at.isoformat(), **forecast.as_json(snapshot.forecast)})
