"""A person's answer by e-mail joining its inquiry's conversation is told to the site's recipients through the
outbox (kind ``message``), on every channel in force, with the person's words only when content is included."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.models import Delivery, Inquiry, NotificationSetting
from app.replies.message import thread_id
from tests.conversations.conftest import INBOUND, TOKEN
from tests.conversations.conftest import mail as e_mail
from tests.helpers import settle, submit_inquiry
from tests.notify.steps import request_after


@pytest.fixture
def app_config(app_config) -> dict:
    return {**app_config, "INBOUND_TOKEN": TOKEN, "INBOUND_ADDRESS": INBOUND}


def answer(app, client, inquiry_id: int, body: str) -> str:
    with app.app_context():
        reference = thread_id(inquiry_id)
    return post(client, e_mail(sender="Ada <ada@example.com>", body=body, In_Reply_To=reference, References=reference))


def post(client, raw: bytes) -> str:
    """``POST /internal/mail``, its response closed as a server closes it; the outcome, once the work after
    it is done."""
    with client.post("/internal/mail", data=raw, headers={"Authorization": f"Bearer {TOKEN}"}) as response:
        outcome = response.json["outcome"]
    settle(client.application)
    return outcome


def test_an_answer_notifies_every_channel_as_a_message(app, client, query, mail, receiver):
    submit_inquiry(client)
    request_after(client)
    [row] = query(select(Inquiry.id))
    assert answer(app, client, row, "Monday suits me.") == "thread"
    assert sorted((each.kind, each.status) for each in query(select(Delivery)) if each.kind == "message") == [
        ("message", "done"),
        ("message", "done"),
    ]
    notice = mail.messages[-1]
    assert notice["Subject"] == f"New message in inquiry #{row}"
    assert f"/admin/inquiries/{row}" in notice.get_payload() and "Monday suits me." not in notice.get_payload()
    payload = receiver.received[-1].payload
    assert payload["type"] == "inquiry.message" and payload["data"]["id"] == row
    assert "message" not in payload["data"]


def test_with_content_included_the_answer_s_words_are_told(app, client, query, db_session, mail, receiver):
    db_session.add(NotificationSetting(key="notify_include_content", value="1"))
    db_session.commit()
    submit_inquiry(client)
    request_after(client)
    [row] = query(select(Inquiry.id))
    assert answer(app, client, row, "Tuesday is better.") == "thread"
    assert "Tuesday is better." in mail.messages[-1].get_payload()
    assert receiver.received[-1].payload["data"]["message"] == "Tuesday is better."


def test_automatic_replies_notify_nobody(app, client, query, mail):
    submit_inquiry(client)
    request_after(client)
    [row] = query(select(Inquiry.id))
    with app.app_context():
        reference = thread_id(row)
    raw = e_mail(sender="ada@example.com", body="I am away.", In_Reply_To=reference, Auto_Submitted="auto-replied")
    assert post(client, raw) == "thread"
    request_after(client)
    assert query.count(Delivery) == 2 and not any(each.kind == "message" for each in query(select(Delivery)))
