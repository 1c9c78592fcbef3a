"""Notifications under faults: SMTP down, refused recipients, deleted inquiries, the cleanup of the outbox.

Every test runs on SQLite and PostgreSQL against the real receivers of conftest.py.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update

from app import cleanup
from app.core import db
from app.models import Delivery, DeliveryStatus, Inquiry
from app.outbox import store
from tests.factories import add_inquiries, aged_inquiries
from tests.helpers import submit_inquiry
from tests.notify.conftest import ADMIN_ADDRESS
from tests.notify.steps import DELIVERIES, request_after, statuses

# --- Faults -----------------------------------------------------------------------


def test_smtp_down_at_first_retries_with_backoff_and_delivers_once(client, app, clock, query, mail):
    mail.stop()
    for _ in range(3):
        assert submit_inquiry(client) == 201
    emails = [row for row in query(DELIVERIES) if row.channel == "email"]
    assert [(row.status, row.attempts) for row in emails] == [("pending", 1)] * 3
    first_retry = [row.next_attempt_at - clock() for row in emails]
    assert all(timedelta(seconds=60) <= wait <= timedelta(seconds=75) for wait in first_retry)

    clock.advance(seconds=30)
    request_after(client)  # nothing due: nothing attempted
    assert {row.attempts for row in query(DELIVERIES) if row.channel == "email"} == {1}
    clock.advance(seconds=50)
    request_after(client)  # due, still down: the second retry waits about twice as long
    emails = [row for row in query(DELIVERIES) if row.channel == "email"]
    assert {row.attempts for row in emails} == {2}
    assert all(timedelta(seconds=120) <= row.next_attempt_at - clock() <= timedelta(seconds=150) for row in emails)

    mail.start()
    clock.advance(seconds=160)
    request_after(client)
    assert [row.status for row in query(DELIVERIES)] == ["done"] * 6
    subjects = sorted(message["Subject"] for message in mail.messages)
    assert subjects == sorted(f"New inquiry #{i}" for i in query(select(Inquiry.id)))  # each once, none lost


def test_a_refused_recipient_fails_after_the_schedule_and_shows_on_the_pages(admin_client, login, clock, query, mail):
    mail.mailbox.refused.add(ADMIN_ADDRESS)
    submit_inquiry(admin_client)
    waits = []
    while (row := query(DELIVERIES)[0]).status == DeliveryStatus.PENDING:
        waits.append(row.next_attempt_at - clock())
        clock.moment = row.next_attempt_at
        request_after(admin_client)
    assert row.status == DeliveryStatus.FAILED and row.attempts >= store.MIN_ATTEMPTS
    assert row.finished_at - row.created_at == timedelta(hours=24)
    assert waits[:4] == sorted(waits[:4]) and waits[1] > waits[0] * 1.5  # doubling, with jitter
    assert row.last_error == "SMTP refused all 1 recipients"
    assert mail.messages == []
    login("Bea")  # a day later: the first login has expired
    page = admin_client.get("/admin/notifications").get_data(as_text=True)
    assert "Notifications are failing to deliver." in page
    assert "SMTP refused all 1 recipients" in page and "failed" in page
    assert "Notifications are failing to deliver." in admin_client.get("/admin/").get_data(as_text=True)
    cleanup_page = admin_client.get("/admin/cleanup").get_data(as_text=True)
    assert 'class="badge error">1<' in cleanup_page


def test_an_inquiry_deleted_before_delivery_is_never_sent(client, app, db_session, clock, query, mail, receiver):
    mail.stop()
    receiver.status = 503
    submit_inquiry(client)
    assert statuses(query) == [("email", "pending", 1), ("webhook", "pending", 1)]
    with app.app_context(), db.transaction(write=True) as session:
        session.execute(Inquiry.__table__.delete())
    assert query.count(Delivery) == 0  # ON DELETE CASCADE
    mail.start()
    receiver.status = 204
    clock.advance(hours=1)
    request_after(client)
    assert mail.messages == [] and len(receiver.received) == 1  # only the first, failed attempt


def test_the_cleanup_deletes_outbox_rows_with_their_inquiries_and_old_finished_ones(app, db_session, clock, query):
    old, young = add_inquiries(db_session, aged_inquiries(clock, [200, 1]))
    with app.app_context(), db.transaction() as session:
        store.enqueue(session, [old], ["email"])
        store.enqueue(session, [young], ["email", "webhook"])
        store.add(session, [(None, "webhook", "test")])
    rows = query(DELIVERIES)
    finished = {rows[1].id: 40, rows[2].id: 10, rows[3].id: 40}  # days ago; rows[0] (old inquiry's) stays pending
    with app.app_context():
        with db.transaction() as session:
            for delivery_id, days in finished.items():
                session.execute(
                    update(Delivery)
                    .where(Delivery.id == delivery_id)
                    .values(status=DeliveryStatus.DONE, finished_at=clock() - timedelta(days=days))
                )
        row = cleanup.run("test", force=True)
    assert '"deliveries": 2' in row.deleted  # the 40-day-old ones
    assert [r.id for r in query(DELIVERIES)] == [rows[2].id]  # the old inquiry's went with it
