"""Notifications: the outbox written with the inquiry, messages without personal data, where webhooks may go,
the operators' endpoint.

Every test runs on SQLite and PostgreSQL against the real receivers of conftest.py.
"""

from __future__ import annotations

import re
from datetime import datetime

from sqlalchemy import select

from app.core import db
from app.models import Delivery, Inquiry, InquiryStatus
from tests.factories import add_inquiries, aged_inquiries, inquiry
from tests.helpers import VALID, csrf_token, settle, solution, submit_inquiry
from tests.notify.conftest import ADMIN_ADDRESS
from tests.notify.steps import DELIVERIES, request_after, statuses

# --- The outbox and the messages ------------------------------------------------


def test_an_inquiry_is_delivered_by_email_and_signed_webhook_without_personal_data(client, query, mail, receiver):
    assert submit_inquiry(client) == 201
    [inquiry_id] = query(select(Inquiry.id))
    assert statuses(query) == [("email", "done", 1), ("webhook", "done", 1)]
    email_row, webhook_row = query(DELIVERIES)

    [message] = mail.messages
    body = message.get_payload()
    assert message["To"] == ADMIN_ADDRESS and message["From"] == "sundown@example.org"
    assert message["Subject"] == f"New inquiry #{inquiry_id}"
    assert message["Message-ID"] == f"<{email_row.idempotency_key}@localhost>"
    assert re.search(rf"New inquiry #{inquiry_id} received \d{{4}}-\d\d-\d\d \d\d:\d\d \(Europe/Berlin\)", body)
    assert f"http://localhost/admin/inquiries/{inquiry_id}" in body
    for personal in (VALID["name"], VALID["email"], "question"):
        assert personal not in body
    assert message["Reply-To"] is None

    [hook] = receiver.received
    assert hook.verified and hook.signature_ok
    assert hook.headers["webhook-id"] == webhook_row.idempotency_key
    payload = hook.payload
    assert (payload["version"], payload["type"]) == (3, "inquiry.received")
    assert payload["data"] == {
        "id": inquiry_id,
        "received_at": payload["data"]["received_at"],
        "url": f"http://localhost/admin/inquiries/{inquiry_id}",
        "form": "contact",
        "file_count": 0,
    }
    datetime.fromisoformat(payload["timestamp"]), datetime.fromisoformat(payload["data"]["received_at"])


def test_with_content_included_the_email_has_it_and_replies_go_to_the_inquirer(admin_client, query, mail, receiver):
    admin_client.post(
        "/admin/notifications",
        data={
            "csrf_token": csrf_token(admin_client, "/admin/notifications"),
            "include_content": "1",
            "digest_minutes": "0",
        },
    )
    submit_inquiry(admin_client)
    [message] = mail.messages
    assert message["Reply-To"] == VALID["email"]
    assert VALID["name"] in message.get_payload() and "I have a question." in message.get_payload()
    data = receiver.received[0].payload["data"]
    assert (data["name"], data["email"], data["message"]) == (VALID["name"], VALID["email"], VALID["message"])
    assert data["answers"] == VALID
    assert (data["file_count"], data["files"]) == (0, [])


def test_the_outbox_rows_commit_with_the_inquiry_and_survive_a_process_that_never_sent(app, client, query, mail):
    # The response is never closed: as if the process died right after the commit.
    links = "Cheap offers: https://a.example https://b.example https://c.example"
    response = client.post("/api/inquiries", json={**VALID, "message": links, "altcha": "x"})
    assert response.status_code == 201
    # No solution and links: filed as spam, no notification; only the day's note of spam, due at its end.
    assert [(row.kind, row.status) for row in query(DELIVERIES)] == [("spam", "pending")]
    response = client.post("/api/inquiries", json={**VALID, "altcha": solution(client)})
    assert statuses(query)[1:] == [("email", "pending", 0), ("webhook", "pending", 0)]
    assert mail.messages == []
    runner = app.test_cli_runner()
    result = runner.invoke(args=["deliver"])
    assert "2 attempted: 2 delivered" in result.output
    assert len(mail.messages) == 1
    response.close()


def test_spam_is_not_notified_until_an_admin_marks_it_not_spam(admin_client, db_session, clock, query, mail):
    [spam] = add_inquiries(db_session, [inquiry(clock, status=InquiryStatus.SPAM)])
    request_after(admin_client)
    assert query.count(Delivery) == 0
    with admin_client.post(
        "/admin/spam/not-spam", data={"ids": [spam], "csrf_token": csrf_token(admin_client, "/admin/spam")}
    ) as response:
        assert response.status_code == 303
    settle(admin_client.application)
    assert [row.inquiry_id for row in query(DELIVERIES)] == [spam, spam]
    assert statuses(query) == [("email", "done", 1), ("webhook", "done", 1)]
    assert f"New inquiry #{spam}" == mail.messages[0]["Subject"]


def test_enqueueing_many_inquiries_at_once_writes_every_row(app, db_session, clock, query):
    """An admin's "Not spam" of hundreds: the rows go in several statements of ``ROWS_PER_INSERT`` rows."""
    from app import notify

    ids = add_inquiries(db_session, aged_inquiries(clock, [0.01] * 130))
    with app.app_context(), db.transaction(write=True) as session:
        assert notify.enqueue_inquiries(session, ids) == 260
    rows = query(DELIVERIES)
    assert [(row.inquiry_id, row.channel, row.status) for row in rows] == [
        (each, channel, "pending") for each in ids for channel in ("email", "webhook")
    ]
    assert len({row.idempotency_key for row in rows}) == 260
    assert {row.next_attempt_at for row in rows} == {row.created_at for row in rows} == {clock()}


# --- Where webhooks may go -------------------------------------------------------


def test_private_addresses_are_refused_unless_allowed(app_config, make_app, query, receiver):
    refusing = make_app({**app_config, "WEBHOOK_ALLOW_PRIVATE": 0})
    submit_inquiry(refusing.test_client())
    [hook] = [row for row in query(DELIVERIES) if row.channel == "webhook"]
    assert hook.status == "pending" and "private address" in hook.last_error
    assert receiver.received == []


# --- Operators: the command and the endpoint ------------------------------------


def test_the_internal_endpoint_sends_what_is_due_with_the_cleanup_token(client, app, clock, query, mail):
    mail.stop()
    submit_inquiry(client)
    mail.start()
    assert client.post("/internal/deliver").status_code == 401
    assert client.post("/internal/deliver", headers={"Authorization": "Bearer wrong"}).status_code == 403
    auth = {"Authorization": f"Bearer {'t' * 24}"}
    assert client.post("/internal/deliver", headers=auth).get_json()["attempts"] == 0  # not due yet
    clock.advance(minutes=2)
    answer = client.post("/internal/deliver", headers=auth).get_json()
    assert (answer["attempts"], answer["done"]) == (1, 1)
    assert len(mail.messages) == 1
