"""Notifications with many senders: leases, batches over one connection, quiet moments, settings read once a second.

Every test runs on SQLite and PostgreSQL against the real receivers of conftest.py.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from email.message import EmailMessage
from email.policy import default as default_policy
from email.utils import format_datetime

from sqlalchemy import event, select

from app.core import db
from app.models import Delivery, DeliveryStatus
from app.notify.channels import email
from app.outbox import deliver, store
from tests.factories import add_inquiries, aged_inquiries
from tests.helpers import VALID, settle, solution, submit_inquiry
from tests.notify.conftest import SECRET
from tests.notify.steps import DELIVERIES, request_after, statuses

# --- Leases, many senders ---------------------------------------------------------


def test_two_processes_racing_send_each_delivery_exactly_once(
    app, app_config, make_app, db_session, clock, query, mail, receiver
):
    other = make_app(app_config)
    ids = add_inquiries(db_session, aged_inquiries(clock, [0.01] * 15))
    with app.app_context(), db.transaction() as session:
        store.enqueue(session, ids, ["email", "webhook"])
    start = threading.Barrier(4)

    def sender(application):
        with application.app_context():
            start.wait()
            deliver.deliver_due()

    threads = [threading.Thread(target=sender, args=(each,)) for each in (app, other, app, other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert [row.status for row in query(DELIVERIES)] == ["done"] * 30
    assert {row.attempts for row in query(DELIVERIES)} == {1}
    assert sorted(int(m["Subject"].split("#")[1]) for m in mail.messages) == ids
    assert len({hook.headers["webhook-id"] for hook in receiver.received}) == len(receiver.received) == 15


def _enqueue_aged(app, db_session, clock, count: int) -> list[int]:
    """``count`` inquiries with an e-mail and a webhook delivery each, not yet sent."""
    ids = add_inquiries(db_session, aged_inquiries(clock, [0.01] * count))
    with app.app_context(), db.transaction() as session:
        store.enqueue(session, ids, ["email", "webhook"])
    return ids


def test_an_emails_header_classes_are_made_once_and_its_bytes_stay_the_standard_librarys():
    def message(policy) -> EmailMessage:
        made = EmailMessage(policy=policy)
        made["From"], made["To"] = "sundown@example.org", "admin@example.org, ops@example.org"
        made["Subject"] = "新しいお問い合わせ #7"
        made["Date"] = format_datetime(datetime(2026, 12, 2, 13, 5, tzinfo=UTC))
        made["Message-ID"] = "<msg_0123@localhost>"
        made.set_content("New inquiry #7\n\nhttp://localhost/admin/inquiries/7\n")
        return made

    first, second = message(email.POLICY), message(email.POLICY)
    assert all(type(first[name]) is type(second[name]) for name in ("From", "To", "Subject", "Date", "Message-ID"))
    assert first.as_bytes() == message(default_policy).as_bytes()


def test_a_batch_goes_over_one_smtp_and_one_webhook_connection(app, db_session, clock, query, mail, receiver):
    ids = _enqueue_aged(app, db_session, clock, 6)
    with app.app_context():
        summary = deliver.deliver_due()
    assert summary.counts == {"done": 12, "pending": 0, "failed": 0}
    assert sorted(int(m["Subject"].split("#")[1]) for m in mail.messages) == ids
    assert mail.connections == 1 and receiver.connections == 1
    assert all(hook.verified for hook in receiver.received) and len(receiver.received) == 6


def test_the_transactions_and_statements_of_a_pass_do_not_grow_with_its_batch(
    app, db_session, clock, query, mail, receiver
):
    """One claim, one read, one record per batch; the outcomes are one executemany (an update per delivery
    held SQLite's write lock about 0.5 ms each)."""
    commits: list[int] = []
    statements: list[str] = []
    event.listen(db.engine_of(app), "commit", lambda _connection: commits.append(1))
    event.listen(db.engine_of(app), "before_cursor_execute", lambda *call: statements.append(call[2]))
    counts = []
    for count in (2, 8):
        _enqueue_aged(app, db_session, clock, count)
        commits.clear()
        statements.clear()
        with app.app_context():
            assert deliver.deliver_due().counts["done"] == 2 * count
        counts.append((len(commits), len(statements)))
    assert counts[0] == counts[1], counts
    assert query(select(Delivery.status)) == [DeliveryStatus.DONE] * 20


def test_each_delivery_of_a_batch_records_when_its_own_send_ended(
    app, db_session, clock, query, mail, receiver, monkeypatch
):
    send = email.Relay.send

    def slow_send(relay, message):  # each e-mail takes a minute of the app's clock
        outcome = send(relay, message)
        clock.advance(minutes=1)
        return outcome

    monkeypatch.setattr(email.Relay, "send", slow_send)
    _enqueue_aged(app, db_session, clock, 2)
    started = clock()
    with app.app_context():
        deliver.deliver_due()
    delivered = {(row.inquiry_id, row.channel): row.delivered_at for row in query(DELIVERIES)}
    minutes = sorted(round((moment - started).total_seconds() / 60) for moment in delivered.values())
    assert minutes == [1, 1, 2, 2]  # e-mail 1 ends at 1, its webhook right after; then 2 and 2


def test_a_webhook_connection_the_receiver_closed_is_opened_again_for_the_same_delivery(
    app, db_session, clock, query, mail, receiver
):
    receiver.close_quietly = True  # as a receiver's idle timeout does, between two deliveries
    _enqueue_aged(app, db_session, clock, 3)
    with app.app_context():
        assert deliver.deliver_due().counts == {"done": 6, "pending": 0, "failed": 0}
    assert receiver.connections == 3
    assert len({hook.headers["webhook-id"] for hook in receiver.received}) == len(receiver.received) == 3


def test_a_refused_recipient_does_not_cost_the_batch_its_smtp_connection(app, db_session, clock, query, mail, receiver):
    _enqueue_aged(app, db_session, clock, 3)
    mail.mailbox.refuse_next = 1
    with app.app_context():
        assert deliver.deliver_due().counts == {"done": 5, "pending": 1, "failed": 0}
    assert len(mail.messages) == 2 and mail.connections == 1


def test_a_sender_that_died_holding_a_lease_is_replaced_once_the_lease_runs_out(app, client, clock, query, receiver):
    with client.post("/api/inquiries", json={**VALID, "altcha": solution(client)}):
        pass  # the first inquiry: delivered after its response, as usual
    settle(app)
    # A second, whose response is not yet closed; its leases taken by hand: a process that died mid-send.
    response = client.post("/api/inquiries", json={**VALID, "altcha": solution(client)})
    pending = [row.id for row in query(DELIVERIES) if row.status == DeliveryStatus.PENDING]
    with app.app_context(), db.transaction() as session:
        assert all(store.claim(session, each, clock()) for each in pending)
    response.close()
    settle(app)
    assert sum(row.status == DeliveryStatus.PENDING for row in query(DELIVERIES)) == 2  # leased: skipped
    clock.advance(seconds=91)
    request_after(client)
    assert [row.status for row in query(DELIVERIES)] == ["done"] * 4
    hook_ids = [hook.headers["webhook-id"] for hook in receiver.received]
    assert len(hook_ids) == len(set(hook_ids)) == 2


def test_each_attempt_is_signed_afresh_with_the_same_webhook_id(client, clock, query, receiver):
    receiver.status = 500
    submit_inquiry(client)
    clock.advance(minutes=10)
    receiver.status = 200
    request_after(client)
    first, second = receiver.received
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert int(second.headers["webhook-timestamp"]) - int(first.headers["webhook-timestamp"]) >= 600
    assert first.headers["webhook-signature"] != second.headers["webhook-signature"]
    assert first.signature_ok and second.signature_ok
    assert [row.status for row in query(DELIVERIES) if row.channel == "webhook"] == ["done"]


def test_a_pass_claims_and_sends_in_a_quiet_moment_not_while_another_request_is_served(
    app, client, query, mail, receiver
):
    entered, release = threading.Event(), threading.Event()

    @app.get("/_held")
    def held():
        entered.set()
        assert release.wait(30)
        return "held"

    other = threading.Thread(target=lambda: app.test_client().get("/_held"))
    other.start()
    try:
        assert entered.wait(30)
        with client.post("/api/inquiries", json={**VALID, "altcha": solution(client)}) as response:
            assert response.status_code == 201
        other.join(0.5)  # the pass has had time to send, were it not waiting
        assert mail.messages == [] and receiver.received == []
        # Not even claimed: a burst's deliveries gather into one batch, claimed once it is over.
        assert [row.lease_until for row in query(DELIVERIES)] == [None, None]
    finally:
        release.set()
    other.join(30)
    settle(app)
    assert statuses(query) == [("email", "done", 1), ("webhook", "done", 1)]


# --- No work when nothing is due --------------------------------------------------


def test_a_pass_with_nothing_due_neither_waits_for_quiet_nor_claims(client, app, clock, query):
    submit_inquiry(client)  # delivered: nothing pending
    clock.advance(minutes=1)
    waits: list[int] = []
    writes: list[str] = []
    event.listen(
        db.engine_of(app),
        "before_cursor_execute",
        lambda _c, _cur, statement, *_a: writes.append(statement) if "UPDATE outbox" in statement else None,
    )
    with app.app_context():
        summary = deliver.deliver_due(before_send=lambda: waits.append(1))
    assert (summary.attempts, waits, writes) == (0, [], [])
    assert [row.status for row in query(DELIVERIES)] == ["done", "done"]


def test_a_request_with_nothing_due_does_no_outbox_work(client, app, clock):
    submit_inquiry(client)
    statements: list[str] = []
    event.listen(
        db.engine_of(app),
        "before_cursor_execute",
        lambda _c, _cur, statement, *_a: statements.append(statement) if "deliveries" in statement else None,
    )
    for _ in range(3):
        clock.advance(seconds=30)
        request_after(client)
    assert statements == []
    clock.advance(minutes=5)  # the periodic look for other processes' rows
    request_after(client)
    assert statements


def test_submissions_read_the_notification_settings_once_a_second_in_a_process(app, client, clock, query):
    """Every submission enqueues under the settings in force; read in each one's write transaction they
    cost about a tenth of its time on PostgreSQL, so a process reads them once a second."""
    here = threading.current_thread()
    reads: list[str] = []
    event.listen(
        db.engine_of(app),
        "before_cursor_execute",
        lambda _c, _cur, statement, *_a: (
            reads.append(statement)
            if threading.current_thread() is here and "FROM notification_settings" in statement
            else None
        ),
    )
    for _ in range(3):
        assert submit_inquiry(client) == 201
    assert len(reads) == 1
    clock.advance(seconds=2)
    assert submit_inquiry(client) == 201
    assert len(reads) == 2
    assert [row.channel for row in query(DELIVERIES)] == ["email", "webhook"] * 4


def test_a_change_saved_in_another_process_applies_to_new_inquiries_a_second_later(
    app_config, make_app, clock, query, receiver
):
    """A change saved in this process applies to the next inquiry; one saved by another process or replica
    within ``FRESH_FOR``."""
    from app.notify import settings as notify_settings

    page_config = {
        key: value for key, value in app_config.items() if key not in ("NOTIFY_EMAILS", "WEBHOOK_URL", "WEBHOOK_SECRET")
    }
    here, other = make_app(page_config), make_app(page_config)
    client = here.test_client()
    assert submit_inquiry(client) == 201
    assert query(DELIVERIES) == []

    def save_webhook(application, url: str | None) -> None:
        with application.app_context(), db.transaction(write=True) as session:
            notify_settings.save(session, notify_settings.WEBHOOK_KEY, url)
            notify_settings.save(session, notify_settings.SECRET_KEY, SECRET if url else None)

    save_webhook(other, receiver.url)
    clock.advance(seconds=2)
    assert submit_inquiry(client) == 201
    assert [row.channel for row in query(DELIVERIES)] == ["webhook"]
    save_webhook(here, None)
    assert submit_inquiry(client) == 201
    assert len(query(DELIVERIES)) == 1
