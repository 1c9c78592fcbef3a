"""Spam is never silent: the recipients of a form's notifications hear, once a day or in their digest, how
many of its inquiries went to spam and when they will be deleted; never what they said
(app.notify.spamnote). Every test runs on SQLite and PostgreSQL against the real SMTP server of conftest.py."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from app.core import i18n
from app.models import Delivery, Inquiry, Preference
from tests.helpers import VALID, csrf_token, editor_post, submit_inquiry
from tests.notify.steps import DELIVERIES, request_after

SPAMMY = "Cheap offers: https://a.example https://b.example https://c.example"
SENDER = "bulk@offers.example"


def send_spam(client, path: str = "/api/inquiries") -> None:
    with client.post(path, json={**VALID, "email": SENDER, "message": SPAMMY}) as response:
        assert response.status_code == 201
    request_after(client)


def assert_no_spam_content(payload: str) -> None:
    for said in ("a.example", "Cheap offers", SENDER, VALID["name"]):
        assert said not in payload


def notes(query) -> list[Delivery]:
    return [row for row in query(DELIVERIES) if row.kind == "spam"]


def test_a_days_spam_is_told_once_at_its_end_with_the_deletion_date(app, client, clock, query, mail):
    for _ in range(3):
        send_spam(client)
    [note] = notes(query)
    assert note.status == "pending" and note.next_attempt_at.timestamp() % 86400 == 0
    assert mail.messages == []
    clock.moment = note.next_attempt_at
    request_after(client)
    [message] = mail.messages
    payload = message.get_payload()
    assert message["Subject"] == "3 inquiries went to spam" and message["Reply-To"] is None
    created = query(select(Inquiry.created_at))[0]
    with app.test_request_context():
        deleted = i18n.local_date(created + timedelta(days=30))
    assert f"Contact: 3 inquiries went to spam; they will be deleted on {deleted}." in payload
    assert "http://localhost/admin/spam?form=contact" in payload
    assert_no_spam_content(payload)
    assert [row.status for row in notes(query)] == ["done"]
    send_spam(client)  # the next day's first: a note of its own
    assert [row.status for row in notes(query)] == ["done", "pending"]


def test_a_forms_own_spam_retention_dates_its_deletion(admin_client, app, client, clock, query, mail):
    fields = [{"type": "textarea", "key": "message", "label-en": "Message", "required": "1"}]
    data = editor_post(
        admin_client, "/admin/forms/new", fields, slug="short", spam_retention_days="14", **{"title-en": "Short form"}
    )
    assert admin_client.post("/admin/forms/new", data=data).status_code == 303
    with client.post("/api/forms/short/inquiries", json={"message": SPAMMY}) as response:
        assert response.status_code == 201, response.get_data(as_text=True)
    request_after(client)
    [note] = notes(query)
    clock.moment = note.next_attempt_at
    request_after(client)
    [message] = mail.messages
    created = query(select(Inquiry.created_at))[0]
    with app.test_request_context():
        deleted = i18n.local_date(created + timedelta(days=14))
    assert f"Short form: 1 inquiry went to spam; it will be deleted on {deleted}." in message.get_payload()
    assert "/admin/spam?form=short" in message.get_payload()


def test_with_a_digest_the_spam_goes_in_it_after_the_inquiries(client, db_session, clock, query, mail):
    db_session.add(Preference(key="notify_digest_minutes", value="60"))
    db_session.commit()
    submit_inquiry(client)
    send_spam(client)
    send_spam(client)
    [note] = notes(query)
    assert note.next_attempt_at.timestamp() % 3600 == 0  # the digest's window, not the day's
    clock.moment = note.next_attempt_at
    request_after(client)
    [message] = mail.messages
    payload = message.get_payload()
    assert message["Subject"] == "1 new inquiry"
    assert "Contact: 2 inquiries went to spam; they will be deleted on" in payload
    assert payload.index("New inquiry #") < payload.index("went to spam")
    assert_no_spam_content(payload.split("went to spam", 1)[1])


def test_spam_moved_out_before_the_note_goes_sends_nothing(admin_client, client, clock, query, mail):
    send_spam(client)
    [spam_id] = query(select(Inquiry.id))
    data = {"ids": str(spam_id), "csrf_token": csrf_token(admin_client, "/admin/spam")}
    assert admin_client.post("/admin/spam/not-spam", data=data).status_code == 303
    [note] = notes(query)
    clock.moment = note.next_attempt_at
    request_after(client)
    assert [message["Subject"] for message in mail.messages] == [f"New inquiry #{spam_id}"]  # its own, not a note
    assert [row.status for row in notes(query)] == ["done"]


def test_without_email_recipients_no_note_is_kept(app_config, make_app, query):
    app = make_app({key: value for key, value in app_config.items() if key != "NOTIFY_EMAILS"})
    send_spam(app.test_client())
    assert notes(query) == []
