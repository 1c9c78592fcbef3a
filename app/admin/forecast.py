"""The forecast on the admin pages: the Retention page's and each form's, and the owners' JSON.

The numbers come from the stored forecast (``app.inquiries.forecast_store``):
a page never computes it. The JSON computes it when none follows the
current retentions (an owner's script asked, and gets the truth). The
inquiries of forms that anonymise instead of deleting are a series and a
column of their own ("Anonymised"), never counted as deleted.
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
from app.inquiries.retention import Expiry


@dataclass(frozen=True)
class Row:
    """One row of a forecast's table: a day or a month, inquiries deleted, anonymised and spam, files and bytes."""

    label: str
    inquiries: int
    spam: int
    files: int
    bytes: int
    anonymised: int = 0


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
    anonymised: Line
    anonymises: bool  # whether a form shown anonymises its inquiries: the page then shows their series


def view(snapshot: forecast_store.Snapshot | None, form_ids: list[int] | None = None) -> View | None:
    """The page's view of ``snapshot`` (of the forms ``form_ids``, or all); None when there is none yet."""
    if snapshot is None:
        return None
    fc = snapshot.forecast
    inbox = fc.summed(INBOX, form_ids, Expiry.DELETE)
    spam = fc.summed(SPAM, form_ids)
    anonymised = fc.summed(INBOX, form_ids, Expiry.ANONYMISE)
    wanted = None if form_ids is None else set(form_ids)
    anonymises = any(
        line.action == Expiry.ANONYMISE and (wanted is None or line.form_id in wanted) for line in fc.lines
    )
    days = _rows((inbox.days, spam.days, anonymised.days), _day_label)
    months = _rows((inbox.months, spam.months, anonymised.months), _month_label)
    charted = (_chart(days, anonymises), _chart(months, anonymises))
    return View(snapshot.computed_at, *charted, days, months, inbox, spam, anonymised, anonymises)


def _rows(lines: tuple[list[Bucket], list[Bucket], list[Bucket]], label) -> list[Row]:
    return [
        Row(
            label(mine.start),
            mine.inquiries,
            theirs.inquiries,
            mine.files + theirs.files + kept.files,
            mine.bytes + theirs.bytes + kept.bytes,
            kept.inquiries,
        )
        for mine, theirs, kept in zip(*lines, strict=True)
    ]


def _chart(rows: list[Row], anonymises: bool) -> charts.Chart:
    series: list[list[float]] = [[row.inquiries for row in rows], [row.spam for row in rows]]
    if anonymises:
        series.append([row.anonymised for row in rows])
    return charts.stacked([row.label for row in rows], series)


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
