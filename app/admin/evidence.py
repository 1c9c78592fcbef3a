"""The retention report (``app.cleanup.evidence``): a form, a period, as a page, a CSV file or JSON, for owners."""

from __future__ import annotations

import csv
import io
from datetime import date, timedelta

from flask import Response, jsonify, render_template, request
from flask_babel import gettext as _

from app.admin import bp
from app.cleanup import evidence
from app.core import clock, csvstream, db
from app.forms import store as form_store
from app.models import Form

DEFAULT_DAYS = 30  # the period shown first: the last thirty days
MOST_DAYS = 3660  # the longest period one report covers


@bp.get("/retention/report")
def retention_report():
    """The form and period to choose, and the report of the chosen ones."""
    session = db.get_session()
    forms = form_store.all_forms(session)
    form, period, error = _chosen(forms)
    report = evidence.build(session, form, period) if form and period and not error else None
    page = render_template(
        "admin/evidence.html",
        forms=forms,
        chosen=form,
        first=request.args.get("from", period.first.isoformat() if period else ""),
        last=request.args.get("to", period.last.isoformat() if period else ""),
        report=report,
        error=error,
        now=clock.now(),
        held_days=evidence.held_days,
    )
    return page, 422 if error else 200


@bp.get("/retention/report.json")
def retention_report_json():
    """The report as JSON; 422 with a message for a missing form or a bad period."""
    report, error = _report()
    if report is None:
        return jsonify(error=error), 422
    return jsonify(evidence.as_dict(report, clock.now()))


@bp.get("/retention/report.csv")
def retention_report_csv():
    """The report as a CSV file of ``field,value`` rows; 422 with a message for a missing form or a bad period."""
    report, error = _report()
    if report is None:
        return Response(error, status=422, mimetype="text/plain")
    buffer = io.StringIO()
    buffer.write(csvstream.BOM)
    writer = csv.writer(buffer)
    writer.writerow(("field", "value"))
    writer.writerows((name, csvstream.neutralise(value)) for name, value in evidence.csv_rows(report, clock.now()))
    name = f"retention-{report.form.slug}-{report.period.first}-{report.period.last}.csv"
    return csvstream.download(iter([buffer.getvalue().encode("utf-8")]), name, "text/csv")


def _report() -> tuple[evidence.Report | None, str]:
    session = db.get_session()
    form, period, error = _chosen(form_store.all_forms(session))
    if form is None or period is None or error:
        return None, error or _("Choose a form.")
    return evidence.build(session, form, period), ""


def _chosen(forms: list[Form]) -> tuple[Form | None, evidence.Period | None, str]:
    """The form (``form``, its id) and the period (``from``, ``to``: YYYY-MM-DD) asked for, and an error."""
    today = clock.now().date()
    raw_form = request.args.get("form", "")
    form = next((each for each in forms if str(each.id) == raw_form.strip()), None)
    if raw_form and form is None:
        return None, None, _("There is no such form.")
    first = _date(request.args.get("from"), today - timedelta(days=DEFAULT_DAYS - 1))
    last = _date(request.args.get("to"), today)
    if first is None or last is None:
        return form, None, _("Enter the dates as YYYY-MM-DD.")
    if first > last or (last - first).days >= MOST_DAYS:
        return form, None, _("The period must start before it ends and cover at most %(num)s days.", num=MOST_DAYS)
    return form, evidence.Period(first, last), ""


def _date(raw: str | None, default: date) -> date | None:
    if raw is None or not raw.strip():
        return default
    try:
        return date.fromisoformat(raw.strip()) if len(raw.strip()) == 10 else None
    except ValueError:
        return None
