"""Forms as data (app/forms, app/admin/forms.py): the editor, serving each form, storing its answers."""

from __future__ import annotations

import pytest
from sqlalchemy import event, select

from app.core import db
from app.forms import fields as form_fields
from app.forms import store as form_store
from app.inquiries import spam
from app.models import DEFAULT_FORM_ID, AuditEntry, Form, Inquiry
from tests.helpers import VALID, csrf_token, editor_post, rendered_ago, solution

QUOTE_FIELDS = [
    {"type": "text", "key": "name", "label-en": "Your name", "required": "1"},
    {"type": "email", "key": "work_email", "label-en": "Work e-mail", "required": "1"},
    {"type": "number", "key": "budget", "label-en": "Budget (EUR)", "min": "100", "max": "100000"},
    {
        "type": "select",
        "key": "size",
        "label-en": "Team size",
        "choices-en": "s | 1-10\nm | 11-50\nl | 51+",
        "choices-ja": "1〜10\n11〜50\n51〜",
    },
    {"type": "checkboxes", "key": "topics", "label-en": "Topics", "choices-en": "design\nbuild\nrun"},
    {"type": "date", "key": "start", "label-en": "Start date"},
    {"type": "tel", "key": "phone", "label-en": "Phone"},
    {"type": "url", "key": "site", "label-en": "Your site"},
    {"type": "textarea", "key": "details", "label-en": "Details", "max": "2000"},
    {
        "type": "consent",
        "key": "privacy",
        "label-en": "I agree that my data is kept for 30 days.",
        "label-ja": "30日間の保存に同意します。",
    },
    {"type": "hidden", "key": "campaign", "default": "spring"},
]


def create_quote(admin_client, **settings):
    return admin_client.post(
        "/admin/forms/new", data=editor_post(admin_client, "/admin/forms/new", QUOTE_FIELDS, **settings)
    )


def quote_answers(**answers) -> dict:
    return {
        "name": "Grace Hopper",
        "work_email": "Grace@Example.COM",
        "budget": "2500.0",
        "size": "m",
        "topics": ["design", "run"],
        "start": "2027-01-15",
        "phone": "+49 30 1234567",
        "site": "https://example.org",
        "details": "We need a form.",
        "privacy": "yes",
        **answers,
    }


def test_the_site_form_is_contact_with_its_three_fields_and_serves_the_front_page(client, query):
    [contact] = query(select(Form))
    assert (contact.id, contact.slug, contact.title, contact.email_field) == (
        DEFAULT_FORM_ID,
        "contact",
        {"en": "Contact"},
        "email",
    )
    assert [field["key"] for field in contact.fields] == ["name", "email", "message"]
    page = client.get("/").get_data(as_text=True)
    assert "<h1>Contact</h1>" in page and 'id="message"' in page and 'autocomplete="email"' in page
    assert client.get("/f/contact").status_code == 200


def test_an_admin_creates_a_form_without_javascript_and_the_public_page_serves_it(admin_client, client, query):
    response = create_quote(admin_client, **{"title-ja": "見積もり依頼"})
    assert response.status_code == 303
    [quote] = query(select(Form).where(Form.slug == "quote"))
    assert [field["key"] for field in quote.fields] == [field["key"] for field in QUOTE_FIELDS]
    assert quote.email_field == "work_email"
    assert quote.fields[3]["choices"][2] == {"value": "l", "label": {"en": "51+", "ja": "51〜"}}
    assert quote.fields[9]["required"] is True  # a consent is always required
    assert query(select(AuditEntry.action)) == ["form_created"]
    page = client.get("/f/quote").get_data(as_text=True)
    assert "Quote request" in page and 'type="number"' in page and 'name="topics"' in page
    assert 'type="hidden" name="campaign" value="spring"' in page
    japanese = client.get("/f/quote", headers={"Accept-Language": "ja"}).get_data(as_text=True)
    assert "見積もり依頼" in japanese and "30日間の保存に同意します。" in japanese
    assert "Budget (EUR)" in japanese  # no Japanese label: the default language's


def test_preview_shows_the_form_and_saves_nothing(admin_client, query):
    data = editor_post(admin_client, "/admin/forms/new", QUOTE_FIELDS, action="preview")
    response = admin_client.post("/admin/forms/new", data=data)
    page = response.get_data(as_text=True)
    assert response.status_code == 200 and 'id="preview-budget"' in page and "Team size" in page
    assert query(select(Form.slug)) == ["contact"]


@pytest.mark.parametrize(
    "field, input_name, message",
    [
        ({"type": "select", "key": "size", "label-en": "Size"}, "field-0-choices-en", "at least one choice"),
        ({"type": "consent", "key": "ok"}, "field-0-label-en", "exact wording"),
        ({"type": "text", "key": "Bad Key", "label-en": "X"}, "field-0-key", "lowercase letter"),
        ({"type": "text", "key": "website", "label-en": "X"}, "field-0-key", "not website"),
        ({"type": "number", "key": "n", "label-en": "N", "min": "5", "max": "1"}, "field-0-max", "not be below"),
        ({"type": "text", "key": "t", "label-en": "T", "max": "999"}, "field-0-max", "At most 200"),
        ({"type": "text", "key": "t", "label-en": "T" * 501}, "field-0-label-en", "(this has 501)"),
        ({"type": "number", "key": "n", "label-en": "N", "min": "٣"}, "field-0-min", "Enter a number"),
        ({"type": "number", "key": "n", "label-en": "N", "max": "１０"}, "field-0-max", "Enter a number"),
    ],
)
def test_bad_definitions_get_a_clear_message_next_to_their_input(admin_client, query, field, input_name, message):
    response = admin_client.post("/admin/forms/new", data=editor_post(admin_client, "/admin/forms/new", [field]))
    page = response.get_data(as_text=True)
    assert response.status_code == 422 and message in page and f'id="{input_name}-error"' in page
    assert f'href="#{input_name}"' in page  # the summary links to the input
    assert query(select(Form.slug)) == ["contact"]


@pytest.mark.parametrize("count", ["²", "١", "³³", "1" * 5000])
def test_a_field_count_that_is_not_a_few_ascii_digits_is_no_count_and_never_a_500(admin_client, query, count):
    data = editor_post(
        admin_client,
        "/admin/forms/new",
        QUOTE_FIELDS[:2],
        field_count=count,
        **{"field-0-position": "٢", "field-1-position": "nan"},
    )
    response = admin_client.post("/admin/forms/new", data=data)
    assert response.status_code == 303  # no count: the first row is read, as for a new form
    [fields] = query(select(Form.fields).where(Form.slug == "quote"))
    assert [each["key"] for each in fields] == ["name"]


def test_a_text_over_its_length_is_refused_and_kept_as_typed_not_cut_short(admin_client, query):
    long_text = "Thank you. " * 200  # 2200 characters: the acknowledgement's limit is 2000
    data = editor_post(admin_client, "/admin/forms/new", [QUOTE_FIELDS[0]], **{"ack_text-en": long_text})
    response = admin_client.post("/admin/forms/new", data=data)
    page = response.get_data(as_text=True)
    assert response.status_code == 422 and "At most 2000 characters (this has 2199)." in page
    assert long_text.strip() in page  # the whole text is still in the editor
    assert query(select(Form.slug)) == ["contact"]


def test_a_duplicate_slug_and_two_fields_with_one_key_are_refused(admin_client, query):
    response = admin_client.post(
        "/admin/forms/new", data=editor_post(admin_client, "/admin/forms/new", [QUOTE_FIELDS[0]], slug="contact")
    )
    assert response.status_code == 422 and "Another form already has this address." in response.get_data(True)
    twice = [QUOTE_FIELDS[0], {**QUOTE_FIELDS[0], "label-en": "Again"}]
    response = admin_client.post("/admin/forms/new", data=editor_post(admin_client, "/admin/forms/new", twice))
    assert response.status_code == 422 and "Another field already has this key." in response.get_data(True)
    assert query(select(Form.slug)) == ["contact"]


def test_a_submission_stores_each_answer_with_its_label_and_the_email_for_people(admin_client, client, query):
    create_quote(admin_client)
    data = {
        **quote_answers(),
        "csrf_token": csrf_token(client, "/f/quote"),
        spam.RENDERED_FIELD: rendered_ago(client.application),
        spam.FIELD: solution(client),
    }
    response = client.post("/f/quote", data=data)
    assert response.status_code == 303
    [row] = query(select(Inquiry))
    assert (row.name, row.email, row.status) == ("Grace Hopper", "Grace@example.com", "inbox")
    answers = {entry["key"]: entry for entry in row.answers}
    assert answers["name"] == {"key": "name", "type": "text", "label": "Your name", "in": "name"}
    assert answers["work_email"]["in"] == "email"
    assert answers["budget"]["value"] == "2500" and answers["topics"]["value"] == ["design", "run"]
    assert answers["privacy"] == {
        "key": "privacy",
        "type": "consent",
        "value": True,
        "label": "I agree that my data is kept for 30 days.",
        "wording": "I agree that my data is kept for 30 days.",
    }
    assert answers["campaign"]["value"] == "spring"
    assert "Budget (EUR): 2500" in row.message and "Team size: 11-50" in row.message  # what search reads


def test_the_json_api_of_a_form_checks_each_type_and_names_every_bad_field(admin_client, client, query):
    create_quote(admin_client)
    bad = quote_answers(
        budget="lots",
        size="xl",
        topics=["sleep"],
        start="15/01/2027",
        phone="call me",
        site="ftp://x",
        privacy=False,
        work_email="nope",
    )
    response = client.post("/api/forms/quote/inquiries", json=bad)
    assert response.status_code == 422
    assert set(response.get_json()["errors"]) == {
        "budget",
        "size",
        "topics",
        "start",
        "phone",
        "site",
        "privacy",
        "work_email",
    }
    good = client.post("/api/forms/quote/inquiries", json={**quote_answers(privacy=True), "altcha": solution(client)})
    assert good.status_code == 201
    [form_id] = query(select(Form.id).where(Form.slug == "quote"))
    assert query.rows(select(Inquiry.form_id, Inquiry.status)) == [(form_id, "inbox")]


def test_an_unknown_or_disabled_form_is_404_and_the_typed_text_is_kept(admin_client, client, query):
    response = client.post("/f/nowhere", data={"details": "My long question", "csrf_token": "x"})
    page = response.get_data(as_text=True)
    assert response.status_code == 404 and "My long question" in page
    create_quote(admin_client, enabled="0")
    assert client.get("/f/quote").status_code == 404
    assert client.post("/api/forms/quote/inquiries", json=quote_answers()).status_code == 404
    assert query.count(Inquiry) == 0


def test_made_up_form_addresses_cost_no_memory_and_the_forms_remembered_are_bounded(
    app, client, db_session, monkeypatch
):
    remembered = lambda: set(app.extensions.get(form_store.EXTENSION, {}))  # noqa: E731
    looked_up = []
    event.listen(
        db.engine_of(app), "before_cursor_execute", lambda _conn, _cursor, statement, *_: looked_up.append(statement)
    )
    for address in ("x" * 61, "Quote", "-quote", "quote-", "a_b", "%C3%BC", "a" * 5000):
        assert client.get(f"/f/{address}").status_code == 404
        assert client.get(f"/api/forms/{address}/embed").status_code == 404
    assert not [statement for statement in looked_up if "FROM forms" in statement]  # refused before any lookup
    for number in range(200):
        assert client.get(f"/f/made-up-{number}").status_code == 404
    assert remembered() == set()  # a miss is never remembered

    monkeypatch.setattr(form_store, "MOST_REMEMBERED", 3)
    for number in range(5):
        db_session.add(
            Form(
                slug=f"form-{number}",
                title={"en": f"Form {number}"},
                enabled=True,
                fields=form_fields.dump(form_fields.CONTACT_FIELDS),
                email_field="email",
            )
        )
    db_session.commit()
    for number in (*range(5), *range(5)):
        assert client.get(f"/f/form-{number}").status_code == 200
        assert len(remembered()) <= 3


def test_a_removed_field_still_shows_on_the_inquiries_that_answered_it(admin_client, client, query):
    create_quote(admin_client)
    client.post("/api/forms/quote/inquiries", json={**quote_answers(privacy=True), "altcha": solution(client)})
    [form_id] = query(select(Form.id).where(Form.slug == "quote"))
    fields = [{**field, "remove": "1"} if field["key"] == "budget" else field for field in QUOTE_FIELDS]
    fields[1] = {**fields[1], "label-en": "Company e-mail"}
    assert (
        admin_client.post(
            f"/admin/forms/{form_id}", data=editor_post(admin_client, f"/admin/forms/{form_id}", fields)
        ).status_code
        == 303
    )
    assert "budget" not in [field["key"] for field in query(select(Form))[1].fields]
    [inquiry_id] = query(select(Inquiry.id))
    page = admin_client.get(f"/admin/inquiries/{inquiry_id}").get_data(as_text=True)
    assert "Budget (EUR)" in page and "2500" in page and "Work e-mail" in page


def test_a_form_with_inquiries_is_not_deleted_and_the_site_form_is_never_disabled(admin_client, client, query):
    create_quote(admin_client)
    [form_id] = query(select(Form.id).where(Form.slug == "quote"))
    client.post("/api/forms/quote/inquiries", json=quote_answers(privacy=True))
    delete = {"csrf_token": csrf_token(admin_client, f"/admin/forms/{form_id}")}
    assert admin_client.post(f"/admin/forms/{form_id}/delete", data=delete).status_code == 303
    assert query(select(Form.slug)) == ["contact", "quote"]
    contact = editor_post(admin_client, "/admin/forms/1", [QUOTE_FIELDS[0]], slug="contact")
    del contact["enabled"]
    response = admin_client.post("/admin/forms/1", data=contact)
    assert response.status_code == 422 and "always on" in response.get_data(as_text=True)


def test_a_form_nobody_answered_is_deleted(admin_client, query):
    create_quote(admin_client)
    [form_id] = query(select(Form.id).where(Form.slug == "quote"))
    delete = {"csrf_token": csrf_token(admin_client, f"/admin/forms/{form_id}")}
    assert admin_client.post(f"/admin/forms/{form_id}/delete", data=delete).status_code == 303
    assert query(select(Form.slug)) == ["contact"]
    assert "form_deleted" in query(select(AuditEntry.action))


def test_the_forms_page_lists_every_form_with_its_address(admin_client):
    create_quote(admin_client, retention_days="60")
    page = admin_client.get("/admin/forms").get_data(as_text=True)
    assert "<code>/</code>" in page and "<code>/f/quote</code>" in page and "60 days" in page


def test_the_contact_form_still_takes_the_three_fields_as_before(client, query):
    assert client.post("/api/inquiries", json={**VALID, "altcha": solution(client)}).status_code == 201
    [row] = query(select(Inquiry))
    assert (row.name, row.email, row.message, row.form_id) == (
        VALID["name"],
        VALID["email"],
        VALID["message"],
        DEFAULT_FORM_ID,
    )
    assert all("in" in entry for entry in row.answers)  # nothing stored twice


def submit_quote(client, **answers):
    response = client.post(
        "/api/forms/quote/inquiries", json={**quote_answers(privacy=True, **answers), "altcha": solution(client)}
    )
    assert response.status_code == 201


def test_the_inbox_filters_by_form_and_names_each_rows_form(admin_client, client):
    create_quote(admin_client)
    submit_quote(client, name="Quote Person")
    assert client.post("/api/inquiries", json={**VALID, "altcha": solution(client)}).status_code == 201
    every = admin_client.get("/admin/").get_data(as_text=True)
    assert "Quote Person" in every and VALID["name"] in every and 'class="badge form-badge">quote<' in every
    quotes = admin_client.get("/admin/?form=quote").get_data(as_text=True)
    assert "Quote Person" in quotes and VALID["name"] not in quotes
    assert 'href="/admin/?show=unread&amp;form=quote"' in quotes
    assert admin_client.get("/admin/?form=nope").status_code == 400


def test_the_csv_export_of_one_form_has_a_column_per_field(admin_client, client):
    create_quote(admin_client)
    submit_quote(client, details="=SUM(A1)")
    assert client.post("/api/inquiries", json={**VALID, "altcha": solution(client)}).status_code == 201
    response = admin_client.get("/admin/export.csv?form=quote")
    lines = response.get_data(as_text=True).lstrip("\ufeff").splitlines()
    assert "sundown-quote-" in response.headers["Content-Disposition"]
    assert lines[0] == (
        "id,received_utc,name,work_email,budget,size,topics,start,phone,site,details,privacy,"
        "campaign,other_answers,legal_hold,hold_reason,hold_by,replies,last_reply_utc,notes"
    )
    assert len(lines) == 2
    assert ',Grace Hopper,Grace@example.com,2500,11-50,"design, run",2027-01-15,' in lines[1]
    assert ",'=SUM(A1),yes,spring,,no,," in lines[1]  # formulas neutralised
    contact = admin_client.get("/admin/export.csv?form=contact").get_data(as_text=True).lstrip("\ufeff")
    assert contact.splitlines()[0].startswith("id,received_utc,name,email,message,other_answers")
    assert VALID["name"] in contact and "Grace" not in contact
