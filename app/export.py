"""The streamed CSV export of every visible inquiry.

The rows are read in keyset pages of exactly ``PAGE_SIZE``, each page in its
own short transaction that ends before the page is sent: no transaction,
cursor or connection is held while the client reads, so a cleanup or a delete
during a long export neither blocks it nor waits for it, and memory stays flat.
Reading stops at the first empty page, so ``n`` rows cost ``ceil(n/200) + 1``
queries.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from flask import Flask, Response, current_app, request
from sqlalchemy import ColumnElement, Select, and_, select, tuple_
from werkzeug.exceptions import BadRequest

from app import clock, db, pruning
from app.models import Submission

PAGE_SIZE = 200
BOM = "\ufeff"
HEADER = ("id", "received_utc", "name", "email", "message", "legal_hold", "hold_reason", "hold_by")
# OWASP CSV injection: a cell starting with one of these may run as a formula.
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\n")
COLUMNS = (
    Submission.id,
    Submission.created_at,
    Submission.name,
    Submission.email,
    Submission.message,
    Submission.legal_hold,
    Submission.hold_reason,
    Submission.hold_by,
)


def download():
    """``GET /admin/export.csv[?since=YYYY-MM-DD][&until=YYYY-MM-DD]``: the CSV, streamed."""
    condition = _export_condition(db.get_session())
    filename = f"sundown-inquiries-{clock.now().astimezone(local_zone()):%Y-%m-%d}.csv"
    response = Response(
        stream_csv(current_app._get_current_object(), condition),
        mimetype="text/csv",
        headers={
            "Content-Disposition": f'attachment; filename="{filename}"',
            "Cache-Control": "no-store",
            "X-Accel-Buffering": "no",
        },
    )
    response.charset = "utf-8"
    return response


def stream_csv(app: Flask, condition: ColumnElement[bool]) -> Iterator[bytes]:
    """The BOM and header, then one chunk per page of rows matching ``condition``.

    Runs after the request has ended, so each page pushes its own app context.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(HEADER)
    yield (BOM + _drain(buffer)).encode("utf-8")
    after = None
    while True:
        with app.app_context():
            rows = read_page(condition, after)
        if not rows:
            return
        writer.writerows(_cells(row) for row in rows)
        yield _drain(buffer).encode("utf-8")
        after = (rows[-1][1], rows[-1][0])


def read_page(condition: ColumnElement[bool], after: tuple[datetime, int] | None) -> list[tuple]:
    """The next ``PAGE_SIZE`` rows after the ``(created_at, id)`` key ``after``, in one transaction."""
    stmt: Select = select(*COLUMNS).where(condition)
    if after is not None:
        stmt = stmt.where(tuple_(Submission.created_at, Submission.id) > after)
    stmt = stmt.order_by(Submission.created_at, Submission.id).limit(PAGE_SIZE)
    with db.transaction() as session:
        return session.connection().execute(stmt).all()


def neutralise(value: str | None) -> str:
    """A free-text cell made safe for spreadsheets: a leading formula trigger gets a ``'``."""
    if not value:
        return ""
    return "'" + value if value.startswith(FORMULA_TRIGGERS) else value


def _cells(row) -> tuple:
    row_id, created_at, name, email, message, held, reason, held_by = row
    return (
        row_id,
        created_at.strftime("%Y-%m-%d %H:%M:%S"),
        neutralise(name),
        neutralise(email),
        neutralise(message),
        "yes" if held else "no",
        neutralise(reason),
        neutralise(held_by),
    )


def _drain(buffer: io.StringIO) -> str:
    text = buffer.getvalue()
    buffer.seek(0)
    buffer.truncate()
    return text


def _export_condition(session) -> ColumnElement[bool]:
    """The shared read predicate at today's cutoff, narrowed by the ``since``/``until`` dates."""
    since, until = _date_arg("since"), _date_arg("until")
    if since and until and since > until:
        raise BadRequest("'since' must not be after 'until'.")
    parts = [pruning.visible(pruning.current_cutoff(session))]
    if since:
        parts.append(Submission.created_at >= _start_of(since))
    if until:
        parts.append(Submission.created_at < _start_of(until + timedelta(days=1)))
    return and_(*parts)


def _date_arg(name: str) -> date | None:
    raw = request.args.get(name, "").strip()
    if not raw:
        return None
    try:
        day = date.fromisoformat(raw)
        if len(raw) != 10 or not 1900 <= day.year <= 9000:
            raise ValueError
        return day
    except ValueError:
        raise BadRequest(f"'{name}' must be a date like 2026-01-31.") from None


def _start_of(day: date) -> datetime:
    """Midnight of ``day`` in the display time zone, the day boundary admins mean."""
    return datetime.combine(day, time(), tzinfo=local_zone())


def local_zone() -> ZoneInfo:
    """The configured display time zone (``TIME_ZONE``)."""
    return ZoneInfo(current_app.config["TIME_ZONE"])
