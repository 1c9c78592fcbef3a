"""The streamed CSV export of every visible inquiry in the inbox (``?status=spam``: the spam folder).

The rows are read in keyset pages of exactly ``PAGE_SIZE``, each page in its
own short transaction that ends before the page is sent: no transaction,
cursor or connection is held while the client reads, so a cleanup or a delete
during a long export neither blocks it nor waits for it, and memory stays flat.
Reading stops at the first empty page, so ``n`` rows cost ``ceil(n/200) + 1``
queries of the inquiries. The team's internal notes are the last column
(``notes``): when the site has any, each page's are read by its ids in the
same transaction, one more query a page; a site without notes pays nothing.

Serving large exports: run gunicorn with ``--worker-class gthread`` (and
``--threads`` of 2 or more). Its worker heartbeats from its main loop while a
thread streams, so ``--timeout`` never cuts a long download (a million rows
take seconds to tens of seconds) and other requests keep being served. A
``sync`` worker would need ``--timeout`` above the longest export and would be
blocked for its whole length.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from flask import Flask, current_app, request
from flask_babel import gettext as _
from flask_login import current_user
from sqlalchemy import ColumnElement, Integer, Select, String, and_, bindparam, func, select, tuple_, type_coerce
from werkzeug.exceptions import BadRequest

from app.admin import bp
from app.admin.display import local_zone
from app.admin.inquiries import in_scope
from app.auth.permissions import Permission
from app.core import clock, csvstream, db
from app.forms import fields as form_fields
from app.forms import store as form_store
from app.inquiries import access, retention, triage
from app.models import AccessKind, Form, Inquiry, InquiryStatus, Note, Reply, ReplyKind

HEADER = (
    "id",
    "received_utc",
    "name",
    "email",
    "message",
    "form",
    "legal_hold",
    "hold_reason",
    "hold_by",
    "replies",
    "last_reply_utc",
    "notes",
)
REPLY_COLUMNS = ("replies", "last_reply_utc")  # the admins' replies sent from the inbox (``app.replies``)
# ``created_at`` is read as the driver returns it (SQLite: naive UTC text,
# PostgreSQL: an aware datetime) instead of through the column type: parsing
# and reformatting every timestamp would cost more than the query itself.
RAW_CREATED_AT = type_coerce(Inquiry.created_at, String).label("created_at")
COLUMNS = (
    Inquiry.id,
    RAW_CREATED_AT,
    Inquiry.name,
    Inquiry.email,
    Inquiry.message,
    Inquiry.legal_hold,
    Inquiry.hold_reason,
    Inquiry.hold_by,
    # Each inquiry's replies: two correlated reads of ``ix_replies_inquiry_id``, nothing when there are none.
    select(func.count(Reply.id))
    .where(Reply.inquiry_id == Inquiry.id, Reply.kind == ReplyKind.REPLY)
    .scalar_subquery()
    .label("replies"),
    select(func.max(Reply.created_at))
    .where(Reply.inquiry_id == Inquiry.id, Reply.kind == ReplyKind.REPLY)
    .scalar_subquery()
    .label("last_reply"),
)


@dataclass(frozen=True)
class Layout:
    """What an export's rows hold: its header, the columns read, and how a page becomes records (with the
    notes' cell of each inquiry that has notes, by id)."""

    header: tuple[str, ...]
    columns: tuple
    write: Callable[[Any, list, dict[int, str]], None]


@bp.get("/export.csv")
def export():
    """``GET /admin/export.csv[?since=YYYY-MM-DD][&until=YYYY-MM-DD][&status=spam][&form=slug]``: the CSV,
    streamed; with ``form``, that form's inquiries with one column per field."""
    session = db.get_session()
    condition = _export_condition(session) & in_scope(Permission.EXPORT)
    layout, name = all_forms_layout(form_store.names(session)), "inquiries"
    slug = request.args.get("form", "").strip()
    if slug:
        form = form_store.by_slug(session, slug)
        if form is None:
            raise BadRequest(_("Unknown form: choose one of the list, or every form."))
        condition, layout, name = condition & (Inquiry.form_id == form.id), form_layout(form), slug
    filename = f"sundown-{name}-{clock.now().astimezone(local_zone()):%Y-%m-%d}.csv"
    access.record(current_user, AccessKind.EXPORT, [None], count=0)  # streamed: how many is not known here
    notes = session.scalar(select(Note.id).limit(1)) is not None
    stream = stream_csv(current_app._get_current_object(), condition, layout, notes)
    return csvstream.download(stream, filename, "text/csv")


def stream_csv(
    app: Flask, condition: ColumnElement[bool], layout: Layout | None = None, notes: bool = True
) -> Iterator[bytes]:
    """The BOM and header, then one chunk per page of rows matching ``condition`` (with their notes, unless
    ``notes`` is false: the site had none when the export began).

    Runs after the request has ended, so each page pushes its own app context.
    """
    layout = layout or all_forms_layout({})
    first, following = page_statements(condition, layout.columns)
    chunks = csvstream.Chunks(layout.header)
    yield chunks.take()
    statement, params = first, dict[str, Any]()
    while True:
        with app.app_context():
            rows, page_notes = read_page(statement, params, notes)
        if not rows:
            return
        layout.write(chunks.writer, rows, page_notes)
        yield chunks.take()
        last = rows[-1]
        statement, params = following, {"after_at": _as_datetime(last[1]), "after_id": last[0]}


def page_statements(condition: ColumnElement[bool], columns: tuple = COLUMNS) -> tuple[Select, Select]:
    """The first page's query and the next pages' (after a ``(created_at, id)`` key).

    Built once per export; each page only binds the key of the previous page's last row.
    """
    first = select(*columns).where(condition).order_by(Inquiry.created_at, Inquiry.id).limit(csvstream.PAGE_SIZE)
    key = tuple_(Inquiry.created_at, Inquiry.id)
    after = tuple_(bindparam("after_at", type_=Inquiry.created_at.type), bindparam("after_id", type_=Integer))
    return first, first.where(key > after)


def read_page(statement: Select, params: dict, notes: bool = False) -> tuple[list, dict[int, str]]:
    """One page of rows and (when ``notes``) the notes' cell of each that has notes, by id, read in its own
    short transaction that ends before the page is sent."""
    with db.transaction() as session:
        rows = list(session.connection().execute(statement, params).all())  # .all() is typed as a Sequence
        if not notes or not rows:
            return rows, {}
        found = triage.notes_of(session, [row[0] for row in rows])
    return rows, {inquiry_id: csvstream.neutralise(triage.notes_text(each)) for inquiry_id, each in found.items()}


def write_rows(writer, rows: list, notes: dict[int, str], slugs: dict[int, str]) -> None:
    """Write ``rows`` as CSV records (the form by its slug in ``slugs``), neutralising every free-text cell.

    The hot loop of the export: name, email and message are never NULL and are
    checked inline; the nullable hold fields only when set.
    """
    triggers = csvstream.FORMULA_TRIGGER_SET
    writer.writerows(
        [
            (
                row_id,
                _utc_text(created_at),
                name if name[:1] not in triggers else "'" + name,
                email if email[:1] not in triggers else "'" + email,
                message if message[:1] not in triggers else "'" + message,
                slugs.get(form_id, ""),
                "yes" if held else "no",
                reason and csvstream.neutralise(reason),
                held_by and csvstream.neutralise(held_by),
                replies,
                _utc_text(last_reply) if last_reply else "",
                notes.get(row_id, ""),
            )
            for row_id, created_at, name, email, message, held, reason, held_by, replies, last_reply, form_id in rows
        ]
    )


def all_forms_layout(slugs: dict[int, str]) -> Layout:
    """Every form's export: the three columns, the form (its slug, read once: forms are few, and one with
    inquiries is never deleted), the hold, the replies and the notes."""

    def write(writer, rows: list, notes: dict[int, str]) -> None:
        write_rows(writer, rows, notes, slugs)

    return Layout(HEADER, (*COLUMNS, Inquiry.form_id), write)


def form_layout(form: Form) -> Layout:
    """One form's export: a column per field of the form as it is now, by key, then ``other_answers``
    (fields since removed, as ``label: value`` lines), the hold, the replies and the notes."""
    keys = [each.key for each in form_fields.load(form.fields)]
    header = (
        "id",
        "received_utc",
        *keys,
        "other_answers",
        "legal_hold",
        "hold_reason",
        "hold_by",
        *REPLY_COLUMNS,
        "notes",
    )

    def write(writer, rows: list, notes: dict[int, str]) -> None:
        writer.writerows([(*_form_record(keys, row), notes.get(row[0], "")) for row in rows])

    return Layout(header, (*COLUMNS, Inquiry.answers), write)


def _form_record(keys: list[str], row) -> tuple:
    row_id, created_at, name, email, message, held, reason, held_by, replies, last_reply, answers = row
    columns = {"name": name, "email": email, "message": message}
    values: dict[str, str] = {}
    others = []
    for entry in answers if isinstance(answers, list) else json.loads(answers or "[]"):
        value = entry["value"] if "value" in entry else columns.get(entry.get("in"), "")
        text = entry.get("shown") or (
            ", ".join(value)
            if isinstance(value, list)
            else ("yes" if value is True else "no" if value is False else str(value))
        )
        if entry["key"] in keys:
            values[entry["key"]] = text
        elif text:
            others.append(f"{entry['label']}: {text}")
    if not answers:  # stored before forms: its answers are the three columns
        values.update({key: value for key, value in columns.items() if key in keys})
    neutral = csvstream.neutralise
    return (
        row_id,
        _utc_text(created_at),
        *(neutral(values.get(key, "")) for key in keys),
        neutral("\n".join(others)),
        "yes" if held else "no",
        reason and neutral(reason),
        held_by and neutral(held_by),
        replies,
        _utc_text(last_reply) if last_reply else "",
    )


def _utc_text(raw: str | datetime) -> str:
    """``YYYY-MM-DD HH:MM:SS`` in UTC from the driver's value (see ``RAW_CREATED_AT``)."""
    if isinstance(raw, str):
        return raw[:19]
    return raw.astimezone(UTC).isoformat(" ", "seconds")[:19]


def _as_datetime(raw: str | datetime) -> datetime:
    """The driver's ``created_at`` value as an aware UTC datetime, for the next page's key."""
    if isinstance(raw, str):
        return datetime.fromisoformat(raw).replace(tzinfo=UTC)
    return raw.astimezone(UTC)


def _export_condition(session) -> ColumnElement[bool]:
    """The shared read predicate at today's cutoff, narrowed by the ``since``/``until`` dates."""
    since, until = _date_arg("since"), _date_arg("until")
    if since and until and since > until:
        raise BadRequest(_("'since' must not be after 'until'."))
    parts = [retention.visible_now(session, _policy_arg())]
    if since:
        parts.append(Inquiry.created_at >= _start_of(since))
    if until:
        parts.append(Inquiry.created_at < _start_of(until + timedelta(days=1)))
    return and_(*parts)


def _policy_arg() -> retention.Policy:
    """The folder to export: the inbox unless ``status=spam``."""
    raw = request.args.get("status", "").strip() or InquiryStatus.INBOX
    for policy in retention.POLICIES:
        if raw == policy.status:
            return policy
    raise BadRequest(_("'status' must be inbox or spam."))


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
        raise BadRequest(_("'%(name)s' must be a date like 2026-01-31.", name=name)) from None


def _start_of(day: date) -> datetime:
    """Midnight of ``day`` in the display time zone, the day boundary admins mean."""
    return datetime.combine(day, time(), tzinfo=local_zone())
