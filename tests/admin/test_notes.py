"""Internal notes: in the CSV export (the owner's, a form's and a scoped admin's) and the person's export; gone
with their inquiry when it is erased or cleaned up, the others' kept.

Every test runs on SQLite and PostgreSQL.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from sqlalchemy import select

from app.admin.export import HEADER
from app.auth import roles
from app.models import Admin, AdminRole, Form, InquiryTag, InquiryTriage, Note, Tag
from tests.admin.test_admin_export import counted_submission_selects
from tests.factories import add_inquiries, inquiry, numbered_inquiries
from tests.helpers import csrf_token


def parse(body: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(body.decode("utf-8-sig"))))


@pytest.fixture
def noted(app, query, clock) -> dict[str, int]:
    """On contact: Carla's inquiry with two notes (one that reads like a formula), Cleo's with none; on quote:
    Quentin's with a note. Each inquiry is also tagged and closed. Ids by name, and the quote form's."""

    def arrange(session):
        contact = session.get(Form, 1)
        quote = Form(slug="quote", title={"en": "Quote"}, fields=contact.fields, email_field=contact.email_field)
        session.add(quote)
        session.flush()
        names = ("Carla", "Cleo", "Quentin")
        forms = (1, 1, quote.id)
        ids = dict(
            zip(
                names,
                add_inquiries(
                    session,
                    [
                        inquiry(clock, 2 - index, name=name, email=f"{name.lower()}@example.com", form_id=form)
                        for index, (name, form) in enumerate(zip(names, forms, strict=True))
                    ],
                ),
                strict=True,
            )
        )
        tag = Tag(name="urgent")
        session.add(tag)
        session.flush()
        notes = (("Carla", "Called back."), ("Carla", "=1+1 asked for plans"), ("Quentin", "Quote sent on paper."))
        for offset, (name, body) in enumerate(notes):
            session.add(
                Note(
                    inquiry_id=ids[name],
                    admin_name="Ada",
                    body=body,
                    created_at=clock() - timedelta(minutes=10 - offset),
                )
            )
        for each in ids.values():
            session.add(InquiryTag(inquiry_id=each, tag_id=tag.id))
            session.add(InquiryTriage(inquiry_id=each, state="closed", changed_at=clock()))
        session.commit()
        return {**ids, "quote": quote.id}

    return query.using(arrange)


def test_the_csv_export_has_each_inquirys_notes_in_its_last_column(admin_client, noted, clock):
    assert HEADER[-1] == "notes"
    rows = {row["name"]: row for row in parse(admin_client.get("/admin/export.csv").data)}
    at = [f"{clock() - timedelta(minutes=minutes):%Y-%m-%d %H:%M:%S}" for minutes in (10, 9, 8)]
    assert rows["Carla"]["notes"] == f"{at[0]} Ada\nCalled back.\n\n{at[1]} Ada\n=1+1 asked for plans"
    assert rows["Cleo"]["notes"] == ""
    assert rows["Quentin"]["notes"] == f"{at[2]} Ada\nQuote sent on paper."
    [quote] = parse(admin_client.get("/admin/export.csv?form=quote").data)
    assert list(quote)[-1] == "notes" and quote["notes"] == rows["Quentin"]["notes"]


def test_a_scoped_export_has_only_their_forms_inquiries_and_notes(app, admin_client, login, query, noted):
    client = app.test_client()
    rita = login("Rita", as_client=client)

    def give(session):
        roles.give(session, session.get(Admin, rita.id), AdminRole.RESPONDER, [noted["quote"]])
        session.commit()

    query.using(give)
    body = client.get("/admin/export.csv").data
    [row] = parse(body)
    assert row["name"] == "Quentin" and row["notes"].endswith("Ada\nQuote sent on paper.")
    assert b"Called back" not in body and b"plans" not in body
    assert parse(client.get("/admin/export.csv?form=contact").data) == []


def test_the_notes_cost_one_query_a_page_and_none_on_a_site_without_notes(admin_client, app, query, clock):
    ids = query.using(lambda session: add_inquiries(session, numbered_inquiries(clock, 450)))
    with counted_submission_selects(app, "inquiry_notes") as statements:
        rows = parse(admin_client.get("/admin/export.csv").data)
    assert len(rows) == 450 and {row["notes"] for row in rows} == {""}
    assert len(statements) == 1  # whether there are any notes; no page asks

    def note(session):
        session.add(Note(inquiry_id=ids[-1], admin_name="Ada", body="Last one", created_at=clock()))
        session.commit()

    query.using(note)
    with counted_submission_selects(app, "inquiry_notes") as statements:
        rows = parse(admin_client.get("/admin/export.csv").data)
    assert rows[-1]["notes"].endswith("Ada\nLast one") and len(statements) == 1 + 3  # pages of 200, 200, 50


def test_the_persons_export_has_the_notes_and_who_accessed_the_inquiry(admin_client, noted):
    admin_client.get(f"/admin/inquiries/{noted['Carla']}")
    exported = json.loads(admin_client.get("/admin/people/export.json?email=carla@example.com").get_data())
    [record] = exported["inquiries"]
    assert [note["text"] for note in record["notes"]] == ["Called back.", "=1+1 asked for plans"]
    assert [(each["admin"], each["what"]) for each in record["accessed"]][:1] == [("Ada", "opened")]
    [row] = parse(admin_client.get("/admin/people/export.csv?email=carla@example.com").data)
    assert "Called back." in row["notes"] and "Ada: opened" in row["accessed"]


def test_an_erasure_takes_the_notes_tags_and_triage_of_what_it_erases(admin_client, noted, query):
    token = csrf_token(admin_client, "/admin/people")
    erased = admin_client.post(
        "/admin/people/erase", data={"email": "carla@example.com", "confirm": "1", "csrf_token": token}
    )
    assert erased.status_code == 303
    assert sorted(query(select(Note.body))) == ["Quote sent on paper."]
    assert noted["Carla"] not in query(select(InquiryTag.inquiry_id))
    assert noted["Carla"] not in query(select(InquiryTriage.inquiry_id))
    assert noted["Cleo"] in query(select(InquiryTriage.inquiry_id))


def test_the_cleanup_takes_the_notes_of_the_inquiries_it_deletes(app, noted, query, clock):
    clock.advance(days=179.5)  # inquiries are kept 180 days: Carla's (2 days old) and Cleo's (1 day) expire
    result = app.test_cli_runner().invoke(args=["cleanup", "--force"])
    assert result.exit_code == 0, result.output
    assert query(select(Note.body)) == ["Quote sent on paper."]
    assert query(select(InquiryTag.inquiry_id)) == [noted["Quentin"]]
    assert query(select(InquiryTriage.inquiry_id)) == [noted["Quentin"]]
