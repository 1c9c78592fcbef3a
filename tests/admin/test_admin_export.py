"""The streamed CSV export: content, page queries, injection safety, filters, concurrency."""

from __future__ import annotations

import csv
import io
import math
from contextlib import contextmanager
from datetime import timedelta

import pytest
from sqlalchemy import delete, event

from app.admin.export import HEADER
from app.core import db
from app.core.csvstream import neutralise
from app.models import Form, Inquiry
from tests.factories import add_inquiries, inquiry, numbered_inquiries

BOM = "\ufeff"


def parse(body: bytes) -> list[list[str]]:
    text = body.decode("utf-8")
    assert text.startswith(BOM)
    return list(csv.reader(io.StringIO(text[len(BOM) :], newline="")))


@contextmanager
def counted_submission_selects(app, table: str = "submissions"):
    """Count the SELECTs on ``table`` the app's engine sends while the block runs."""
    engine = db.engine_of(app)
    statements: list[str] = []

    def count(_conn, _cursor, statement, *_args):
        text = statement.lstrip().upper()
        if text.startswith("SELECT") and f"FROM {table.upper()}" in text:
            statements.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", count)


def test_export_requires_login(client):
    assert client.get("/admin/export.csv").status_code == 302


def test_export_headers_filename_and_bom(admin_client):
    response = admin_client.get("/admin/export.csv")
    assert response.status_code == 200
    assert response.mimetype == "text/csv"
    assert response.headers["Content-Disposition"] == 'attachment; filename="sundown-inquiries-2026-06-01.csv"'
    assert response.headers["Cache-Control"] == "no-store"
    assert response.data.startswith(BOM.encode("utf-8") + b"id,received_utc,name,email,message")
    assert parse(response.data) == [list(HEADER)]


@pytest.mark.parametrize("count", [0, 1, 199, 200, 201])
def test_export_has_every_row_in_ceil_n_over_200_plus_one_queries(admin_client, db_session, clock, app, count):
    add_inquiries(db_session, numbered_inquiries(clock, count))
    with counted_submission_selects(app) as statements:
        body = admin_client.get("/admin/export.csv").data
    rows = parse(body)
    assert rows[0] == list(HEADER)
    assert [row[2] for row in rows[1:]] == [f"Name {i}" for i in range(count)]
    assert len(statements) == math.ceil(count / 200) + 1
    # Keyset pages: every query orders by the key and asks for a page (SQLite adds OFFSET 0).
    assert all("ORDER BY" in statement and "LIMIT" in statement for statement in statements)


def test_export_of_10000_rows(admin_client, db_session, clock, app):
    add_inquiries(db_session, numbered_inquiries(clock, 10_000))
    with counted_submission_selects(app) as statements:
        rows = parse(admin_client.get("/admin/export.csv").data)
    assert len(rows) == 10_001
    assert len(statements) == 51
    ids = [int(row[0]) for row in rows[1:]]
    assert ids == sorted(set(ids))
    assert rows[-1][2:5] == ["Name 9999", "p9999@example.com", "Message 9999\nline two"]


def test_export_pages_across_identical_timestamps(admin_client, db_session, clock):
    add_inquiries(db_session, numbered_inquiries(clock, 450, created_at=clock() - timedelta(hours=3)))
    ids = [int(row[0]) for row in parse(admin_client.get("/admin/export.csv").data)[1:]]
    assert len(ids) == 450 and ids == sorted(set(ids))


def test_export_row_content(admin_client, db_session, clock):
    add_inquiries(db_session, numbered_inquiries(clock, 1, legal_hold=True, hold_reason="Case 7", hold_by="Ada"))
    (row,) = parse(admin_client.get("/admin/export.csv").data)[1:]
    received = (clock() - timedelta(days=1)).strftime("%Y-%m-%d %H:%M:%S")
    assert row[1:] == [
        received,
        "Name 0",
        "p0@example.com",
        "Message 0\nline two",
        "contact",
        "yes",
        "Case 7",
        "Ada",
        "0",
        "",
        "",
    ]


def test_the_export_of_every_form_names_each_inquirys_form(admin_client, db_session, clock):
    contact = db_session.get(Form, 1)
    quote = Form(slug="quote", title={"en": "Quote"}, fields=contact.fields, email_field=contact.email_field)
    db_session.add(quote)
    db_session.commit()
    add_inquiries(
        db_session,
        [inquiry(clock, days_old=2, name="By contact"), inquiry(clock, days_old=1, name="By quote", form_id=quote.id)],
    )
    rows = [dict(zip(HEADER, row, strict=True)) for row in parse(admin_client.get("/admin/export.csv").data)[1:]]
    assert [(row["name"], row["form"]) for row in rows] == [("By contact", "contact"), ("By quote", "quote")]


INJECTIONS = {
    '=HYPERLINK("http://evil.example","click")': '\'=HYPERLINK("http://evil.example","click")',
    "+1": "'+1",
    "-2": "'-2",
    "@SUM(A1:A2)": "'@SUM(A1:A2)",
    "\tleading tab": "'\tleading tab",
    "\rcarriage": "'\rcarriage",
    "a,=b": "a,=b",
    "plain": "plain",
}


def test_formula_injection_is_neutralised_in_every_free_text_cell(admin_client, db_session, clock):
    payloads = list(INJECTIONS)
    add_inquiries(
        db_session,
        [
            inquiry(
                clock,
                name=p,
                email=p,
                message=p,
                hold_reason=p,
                hold_by=p,
                legal_hold=True,
                created_at=clock() - timedelta(hours=len(payloads) - i),
            )
            for i, p in enumerate(payloads)
        ],
    )
    exported = parse(admin_client.get("/admin/export.csv").data)[1:]
    for payload, row in zip(payloads, exported, strict=True):
        expected = INJECTIONS[payload]
        assert [row[2], row[3], row[4], row[7], row[8]] == [expected] * 5
    assert len(exported[payloads.index("a,=b")]) == len(HEADER)


def test_neutralise_leaves_safe_text_alone():
    assert neutralise("Ada") == "Ada"
    assert neutralise("") == "" and neutralise(None) == ""
    assert neutralise("\nnew line") == "'\nnew line"
    assert neutralise("a=b") == "a=b"


def test_expired_rows_are_absent_and_held_expired_rows_present(admin_client, db_session, clock):
    add_inquiries(
        db_session,
        [
            inquiry(clock, name="fresh"),
            inquiry(clock, days_old=181, name="expired"),
            inquiry(clock, days_old=181, name="held", legal_hold=True),
        ],
    )
    names = [row[2] for row in parse(admin_client.get("/admin/export.csv").data)[1:]]
    assert names == ["held", "fresh"]


def test_since_and_until_filter_by_day_inclusive(admin_client, db_session, clock):
    add_inquiries(
        db_session,
        [
            inquiry(clock, name=f"May {day}", created_at=clock().replace(month=5, day=day, hour=23, minute=59))
            for day in (1, 2, 3, 4)
        ],
    )

    def names(dates):
        return [row[2] for row in parse(admin_client.get(f"/admin/export.csv?{dates}").data)[1:]]

    assert names("since=2026-05-02&until=2026-05-03") == ["May 2", "May 3"]
    assert names("since=2026-05-04") == ["May 4"]
    assert names("until=2026-05-01") == ["May 1"]
    assert names("since=&until=") == ["May 1", "May 2", "May 3", "May 4"]


@pytest.mark.parametrize(
    "dates",
    [
        "since=yesterday",
        "until=2026-13-01",
        "since=2026-5-1",
        "since=20260501",
        "since=2026-05-03&until=2026-05-01",
        "until=9999-12-31",
    ],
)
def test_bad_dates_are_refused_with_a_message(admin_client, dates):
    response = admin_client.get(f"/admin/export.csv?{dates}")
    assert response.status_code == 400
    assert "date like 2026-01-31" in response.get_data(as_text=True) or "after" in response.get_data(as_text=True)


def test_delete_during_a_running_export_does_not_break_it(admin_client, db_session, clock, app):
    add_inquiries(db_session, numbered_inquiries(clock, 650))
    ids = [int(row[0]) for row in parse(admin_client.get("/admin/export.csv").data)[1:]]
    engine = db.engine_of(app)

    response = admin_client.get("/admin/export.csv", buffered=False)
    chunks = iter(response.response)
    received = [next(chunks), next(chunks), next(chunks)]  # header, rows 0-199, rows 200-399
    # Between pages the export holds no connection, so nothing it holds can block a writer.
    # (The request itself ran in this test's app context and shares ``db_session``: close it first.)
    db_session.close()
    assert engine.pool.checkedout() == 0
    sent, later = ids[150:250], ids[450:500]
    db_session.execute(delete(Inquiry).where(Inquiry.id.in_(sent + later)))
    db_session.commit()
    received += list(chunks)
    response.close()

    exported = [int(row[0]) for row in parse(b"".join(received))[1:]]
    assert exported == [i for i in ids if i not in later]
