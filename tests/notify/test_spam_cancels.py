"""Moved to spam, an inquiry's notifications not sent yet are cancelled on every channel; moved back, they
are enqueued again (app.notify.cancel_inquiries). Every database test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.models import Delivery, Inquiry, Preference
from app.outbox import deliver
from tests.helpers import csrf_token, settle, submit_inquiry

# A chat service nobody answers (a closed port on loopback): its notification waits for a retry.
UNREACHABLE_NTFY = "ntfy://127.0.0.1:9/sundown-alerts"
ROWS = select(Delivery.channel, Delivery.status, Delivery.kind).order_by(Delivery.id)


@pytest.fixture
def app_config(app_config) -> dict:
    return {**app_config, "NOTIFY_URLS": UNREACHABLE_NTFY}


@pytest.fixture
def waiting(app, client, db_session, query) -> int:
    """An inquiry in the inbox whose e-mail waits for an hour's digest and whose chat message for a retry;
    its webhook went at once."""
    db_session.add(Preference(key="notify_digest_minutes", value="60"))
    db_session.commit()
    assert submit_inquiry(client) == 201
    assert sorted(query.rows(ROWS)) == [
        ("email", "pending", "inquiry"),
        ("ntfy", "pending", "inquiry"),
        ("webhook", "done", "inquiry"),
    ]
    return query(select(Inquiry.id))[0]


def move(admin_client, path: str, inquiry_id: int) -> None:
    data = {"ids": str(inquiry_id), "csrf_token": csrf_token(admin_client, "/admin/")}
    assert admin_client.post(path, data=data).status_code == 303


def test_marking_spam_cancels_the_notifications_not_sent_yet(app, admin_client, waiting, query, clock, mail):
    move(admin_client, "/admin/spam/mark", waiting)
    assert query.rows(ROWS) == [("webhook", "done", "inquiry")]  # what was sent stays on record
    clock.advance(hours=2)  # past the digest's window and the chat's retry
    with app.app_context():
        deliver.deliver_due()
    settle(app)
    assert mail.messages == [] and query.rows(ROWS) == [("webhook", "done", "inquiry")]


def test_not_spam_enqueues_them_again(app, admin_client, waiting, query):
    move(admin_client, "/admin/spam/mark", waiting)
    move(admin_client, "/admin/spam/not-spam", waiting)
    rows = query.rows(ROWS)
    assert rows[0] == ("webhook", "done", "inquiry")  # the first notification, sent before the move
    assert sorted(channel for channel, _status, _kind in rows[1:]) == ["email", "ntfy", "webhook"]


def test_a_delivery_of_another_inquiry_is_left_alone(app, admin_client, client, waiting, query):
    assert submit_inquiry(client) == 201
    move(admin_client, "/admin/spam/mark", waiting)
    other = query(select(Inquiry.id).where(Inquiry.id != waiting))[0]
    left = query.rows(select(Delivery.channel, Delivery.status).where(Delivery.inquiry_id == other))
    assert sorted(left) == [("email", "pending"), ("ntfy", "pending"), ("webhook", "done")]
