"""Notifications: the outbox written with the inquiry, real SMTP and webhooks, retries, leases, faults.

Every test runs on SQLite and PostgreSQL, against a real SMTP server
(aiosmtpd with STARTTLS and AUTH, its certificate made here) and a real HTTP
receiver that checks signatures with ``standardwebhooks``.
"""

from __future__ import annotations

import base64
import re
import threading
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.policy import default as default_policy
from email.utils import format_datetime

import pytest
from sqlalchemy import event, select, update

from app import cleanup, db
from app.models import Delivery, DeliveryStatus, Inquiry, InquiryStatus, Setting
from app.notify import deliver, email, outbox
from devtools.receivers import Certificate, MailServer, WebhookReceiver
from tests.conftest import FakeClock
from tests.factories import add_file, add_inquiries, aged_inquiries, inquiry
from tests.helpers import VALID, csrf_token, editor_post, settle, solution, submit_inquiry

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
ADMIN_ADDRESS = "admin@example.org"
DELIVERIES = select(Delivery).order_by(Delivery.id)


@pytest.fixture
def clock() -> FakeClock:
    """Wall time (whole seconds) to start with, so receivers accept the signed timestamps."""
    return FakeClock(datetime.now(UTC).replace(microsecond=0))


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> Certificate:
    return Certificate.make(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def mail(certificate):
    server = MailServer(certificate).start()
    yield server
    server.stop()


@pytest.fixture
def receiver():
    hook = WebhookReceiver(SECRET).start()
    yield hook
    hook.stop()


@pytest.fixture
def app_config(app_config, mail, receiver, certificate) -> dict:
    return {**app_config, "SMTP_URL": mail.url, "SMTP_CA_FILE": str(certificate.cert),
            "MAIL_FROM": "sundown@example.org", "NOTIFY_EMAILS": [ADMIN_ADDRESS], "WEBHOOK_URL": receiver.url,
            "WEBHOOK_SECRET": SECRET, "WEBHOOK_ALLOW_PRIVATE": 1, "TIME_ZONE": "Europe/Berlin",
            "DELIVERY_RETRY_BASE": 60, "CLEANUP_TOKEN": "t" * 24}


def request_after(client) -> None:
    """An ordinary request, closed as a server closes it; waits for the work after it."""
    with client.get("/privacy"):
        pass
    settle(client.application)


def statuses(query) -> list[tuple[str, str, int]]:
    return [(row.channel, row.status, row.attempts) for row in query(DELIVERIES)]


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
    assert payload["data"] == {"id": inquiry_id, "received_at": payload["data"]["received_at"],
                               "url": f"http://localhost/admin/inquiries/{inquiry_id}", "form": "contact",
                               "file_count": 0}
    datetime.fromisoformat(payload["timestamp"]), datetime.fromisoformat(payload["data"]["received_at"])


def test_with_content_included_the_email_has_it_and_replies_go_to_the_inquirer(admin_client, query, mail, receiver):
    admin_client.post("/admin/notifications", data={
        "csrf_token": csrf_token(admin_client, "/admin/notifications"), "include_content": "1",
        "digest_minutes": "0"})
    submit_inquiry(admin_client)
    [message] = mail.messages
    assert message["Reply-To"] == VALID["email"]
    assert VALID["name"] in message.get_payload() and "I have a question." in message.get_payload()
    data = receiver.received[0].payload["data"]
    assert (data["name"], data["email"], data["message"]) == (VALID["name"], VALID["email"], VALID["message"])
    assert data["answers"] == VALID
    assert (data["file_count"], data["files"]) == (0, [])


# --- Files: named and counted, never sent ---------------------------------------

SHOT = (b"pixels-of-the-shot " * 700)[:12 * 1024]  # "12 KB"
LOG = (b"lines-of-the-log\n" * 100_000)[:1536 * 1024]  # "1.5 MB"


def with_files(db_session, clock, files: list[tuple[bytes, str, str]]) -> int:
    """An inquiry with ``files`` (data, name, type), stored as intake stores them; its id."""
    [inquiry_id] = add_inquiries(db_session, [inquiry(clock, days_old=0.01)])
    for data, name, content_type in files:
        add_file(db_session, inquiry_id, data, name, content_type)
    return inquiry_id


TWO_FILES = [(SHOT, "shot.png", "image/png"), (LOG, "log.txt", "text/plain")]


def include_content_setting(db_session, digest_minutes: int = 0) -> None:
    db_session.add_all([Setting(key="notify_include_content", value="1"),
                        Setting(key="notify_digest_minutes", value=str(digest_minutes))])
    db_session.commit()


def deliver_now(app, inquiry_ids: list[int], channels: list[str]) -> None:
    with app.app_context():
        with db.transaction() as session:
            outbox.enqueue(session, inquiry_ids, channels)
        deliver.deliver_due()
        with db.transaction() as session:
            assert set(session.scalars(select(Delivery.status))) == {DeliveryStatus.DONE}


def assert_no_file_bytes(mail, receiver) -> None:
    """Neither the files' bytes nor their base64 are in any e-mail sent or any webhook body."""
    sent = [content for _to, content in mail.envelopes] + [hook.body for hook in receiver.received]
    assert sent
    for data in (SHOT, LOG):
        marker, encoded = data[:16], base64.b64encode(data[:48])
        assert not any(marker in each or encoded in each for each in sent)
    assert not any(message.is_multipart() for message in mail.messages)


def test_without_content_a_notification_counts_the_files_and_names_none(app, db_session, clock, mail, receiver):
    inquiry_id = with_files(db_session, clock, TWO_FILES)
    deliver_now(app, [inquiry_id], ["email", "webhook"])
    body = mail.messages[0].get_payload()
    assert body.splitlines()[1:4] == ["Form: contact", "2 files attached", ""]
    assert "shot.png" not in body and "log.txt" not in body and "KB" not in body
    [hook] = receiver.received
    assert hook.payload["data"] == {"id": inquiry_id, "received_at": hook.payload["data"]["received_at"],
                                    "url": f"http://localhost/admin/inquiries/{inquiry_id}", "form": "contact",
                                    "file_count": 2}
    assert b"shot.png" not in hook.body
    assert_no_file_bytes(mail, receiver)


def test_with_content_a_notification_names_each_file_and_its_size_and_links_to_none(app, db_session, clock, mail,
                                                                                    receiver):
    include_content_setting(db_session)
    inquiry_id = with_files(db_session, clock, TWO_FILES)
    deliver_now(app, [inquiry_id], ["email", "webhook"])
    lines = mail.messages[0].get_payload().splitlines()
    assert lines[1:4] == ["Form: contact", "Files: shot.png (12 KB), log.txt (1.5 MB)", ""]
    [hook] = receiver.received
    data = hook.payload["data"]
    assert data["file_count"] == 2
    assert data["files"] == [{"name": "shot.png", "type": "image/png", "size": 12 * 1024},
                             {"name": "log.txt", "type": "text/plain", "size": 1536 * 1024}]
    links = set(re.findall(rb"https?://[^\"]+", hook.body))
    assert links == {f"http://localhost/admin/inquiries/{inquiry_id}".encode()}  # an admin's page, nothing public
    assert_no_file_bytes(mail, receiver)


@pytest.mark.parametrize("content", [False, True], ids=["without-content", "with-content"])
def test_a_digest_tells_each_inquirys_files_read_in_one_query_per_transaction(app, db_session, clock, mail,
                                                                              receiver, content):
    if content:
        include_content_setting(db_session, digest_minutes=10)
    else:
        db_session.add(Setting(key="notify_digest_minutes", value="10"))
        db_session.commit()
    two = with_files(db_session, clock, TWO_FILES)
    one = with_files(db_session, clock, [(SHOT, "shot.png", "image/png")])
    none = with_files(db_session, clock, [])
    reads: list[str] = []
    event.listen(db.engine_of(app), "before_cursor_execute",
                 lambda _c, _cur, statement, *_a: reads.append(statement) if "FROM attachments" in statement else None)
    deliver_now(app, [two, one, none], ["email"])
    assert len(reads) == 2  # the batch's read, then its digest's companions: however many inquiries
    [message] = mail.messages
    assert message["Subject"] == "3 new inquiries"
    paragraphs = {int(re.match(r"New inquiry #(\d+)", each).group(1)): each.splitlines()
                  for each in message.get_payload().replace("\r\n", "\n").strip().split("\n\n")}
    if content:
        assert paragraphs[two][1] == "Files: shot.png (12 KB), log.txt (1.5 MB)"
        assert paragraphs[one][1] == "Files: shot.png (12 KB)"
    else:
        assert (paragraphs[two][1], paragraphs[one][1]) == ("2 files attached", "1 file attached")
    assert paragraphs[none][1] == f"http://localhost/admin/inquiries/{none}"  # no files: no line for them
    assert_no_file_bytes(mail, receiver)


def test_the_outbox_rows_commit_with_the_inquiry_and_survive_a_process_that_never_sent(app, client, query, mail):
    # The response is never closed: as if the process died right after the commit.
    response = client.post("/api/inquiries", json={**VALID, "altcha": "x"})
    assert response.status_code == 201
    assert query.count(Delivery) == 0  # no solution: filed as spam, no notification
    response = client.post("/api/inquiries", json={**VALID, "altcha": solution(client)})
    assert statuses(query) == [("email", "pending", 0), ("webhook", "pending", 0)]
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
    with admin_client.post("/admin/spam/not-spam", data={
            "ids": [spam], "csrf_token": csrf_token(admin_client, "/admin/spam")}) as response:
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
        (each, channel, "pending") for each in ids for channel in ("email", "webhook")]
    assert len({row.idempotency_key for row in rows}) == 260
    assert {row.next_attempt_at for row in rows} == {row.created_at for row in rows} == {clock()}


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


def test_a_refused_recipient_fails_after_the_schedule_and_shows_on_the_pages(admin_client, login, clock, query,
                                                                            mail):
    mail.mailbox.refused.add(ADMIN_ADDRESS)
    submit_inquiry(admin_client)
    waits = []
    while (row := query(DELIVERIES)[0]).status == DeliveryStatus.PENDING:
        waits.append(row.next_attempt_at - clock())
        clock.moment = row.next_attempt_at
        request_after(admin_client)
    assert row.status == DeliveryStatus.FAILED and row.attempts >= outbox.MIN_ATTEMPTS
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
        outbox.enqueue(session, [old], ["email"])
        outbox.enqueue(session, [young], ["email", "webhook"])
        outbox.enqueue_test(session, ["webhook"])
    rows = query(DELIVERIES)
    finished = {rows[1].id: 40, rows[2].id: 10, rows[3].id: 40}  # days ago; rows[0] (old inquiry's) stays pending
    with app.app_context():
        with db.transaction() as session:
            for delivery_id, days in finished.items():
                session.execute(update(Delivery).where(Delivery.id == delivery_id).values(
                    status=DeliveryStatus.DONE, finished_at=clock() - timedelta(days=days)))
        row = cleanup.run("test", force=True)
    assert '"deliveries": 2' in row.deleted  # the 40-day-old ones
    assert [r.id for r in query(DELIVERIES)] == [rows[2].id]  # the old inquiry's went with it


# --- Leases, many senders ---------------------------------------------------------


def test_two_processes_racing_send_each_delivery_exactly_once(app, app_config, make_app, db_session, clock,
                                                               query, mail, receiver):
    other = make_app(app_config)
    ids = add_inquiries(db_session, aged_inquiries(clock, [0.01] * 15))
    with app.app_context(), db.transaction() as session:
        outbox.enqueue(session, ids, ["email", "webhook"])
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
        outbox.enqueue(session, ids, ["email", "webhook"])
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


def test_the_transactions_and_statements_of_a_pass_do_not_grow_with_its_batch(app, db_session, clock, query, mail,
                                                                              receiver):
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


def test_each_delivery_of_a_batch_records_when_its_own_send_ended(app, db_session, clock, query, mail, receiver,
                                                                   monkeypatch):
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
        app, db_session, clock, query, mail, receiver):
    receiver.close_quietly = True  # as a receiver's idle timeout does, between two deliveries
    _enqueue_aged(app, db_session, clock, 3)
    with app.app_context():
        assert deliver.deliver_due().counts == {"done": 6, "pending": 0, "failed": 0}
    assert receiver.connections == 3
    assert len({hook.headers["webhook-id"] for hook in receiver.received}) == len(receiver.received) == 3


def test_a_refused_recipient_does_not_cost_the_batch_its_smtp_connection(app, db_session, clock, query, mail,
                                                                          receiver):
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
        assert all(outbox.claim(session, each, clock()) for each in pending)
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
        app, client, query, mail, receiver):
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
    event.listen(db.engine_of(app), "before_cursor_execute",
                 lambda _c, _cur, statement, *_a: writes.append(statement) if "UPDATE outbox" in statement else None)
    with app.app_context():
        summary = deliver.deliver_due(before_send=lambda: waits.append(1))
    assert (summary.attempts, waits, writes) == (0, [], [])
    assert [row.status for row in query(DELIVERIES)] == ["done", "done"]


def test_a_request_with_nothing_due_does_no_outbox_work(client, app, clock):
    submit_inquiry(client)
    statements: list[str] = []
    event.listen(db.engine_of(app), "before_cursor_execute",
                 lambda _c, _cur, statement, *_a: statements.append(statement) if "deliveries" in statement else None)
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
    event.listen(db.engine_of(app), "before_cursor_execute",
                 lambda _c, _cur, statement, *_a: reads.append(statement)
                 if threading.current_thread() is here and "FROM settings" in statement else None)
    for _ in range(3):
        assert submit_inquiry(client) == 201
    assert len(reads) == 1
    clock.advance(seconds=2)
    assert submit_inquiry(client) == 201
    assert len(reads) == 2
    assert [row.channel for row in query(DELIVERIES)] == ["email", "webhook"] * 4


def test_a_change_saved_in_another_process_applies_to_new_inquiries_a_second_later(app_config, make_app, clock,
                                                                                   query, receiver):
    """A change saved in this process applies to the next inquiry; one saved by another process or replica
    within ``FRESH_FOR``."""
    from app.notify import settings as notify_settings

    page_config = {key: value for key, value in app_config.items()
                   if key not in ("NOTIFY_EMAILS", "WEBHOOK_URL", "WEBHOOK_SECRET")}
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


# --- The digest -----------------------------------------------------------------


def test_a_digest_sends_one_email_per_interval_listing_the_inquiries(client, db_session, clock, query, mail,
                                                                     receiver):
    db_session.add(Setting(key="notify_digest_minutes", value="10"))
    db_session.commit()
    for _ in range(3):
        submit_inquiry(client)
    assert len(receiver.received) == 3 and mail.messages == []  # webhooks at once; e-mail waits
    window_end = max(row.next_attempt_at for row in query(DELIVERIES) if row.channel == "email")
    assert window_end.timestamp() % 600 == 0 and window_end - clock() <= timedelta(minutes=10)
    clock.moment = window_end
    request_after(client)
    [message] = mail.messages
    ids = query(select(Inquiry.id))
    assert message["Subject"] == "3 new inquiries"
    assert all(f"/admin/inquiries/{each}" in message.get_payload() for each in ids)
    assert VALID["name"] not in message.get_payload()
    assert [row.status for row in query(DELIVERIES)] == ["done"] * 6
    submit_inquiry(client)
    assert len(mail.messages) == 1  # the next window's


def test_past_the_hourly_cap_emails_wait_for_the_end_of_the_hour_and_go_as_one(app_config, make_app, clock, query,
                                                                               mail, receiver):
    client = make_app({**app_config, "NOTIFY_HOURLY_CAP": 2}).test_client()
    for _ in range(5):
        submit_inquiry(client)
    assert len(mail.messages) == 2 and len(receiver.received) == 5  # webhooks are not capped
    held = [row for row in query(DELIVERIES) if row.channel == "email" and row.status == "pending"]
    assert len(held) == 3 and {row.kind for row in held} == {"capped"}
    assert {row.next_attempt_at for row in held} == {clock().replace(minute=0, second=0) + timedelta(hours=1)}
    assert query.count(Inquiry) == 5  # every inquiry is stored
    clock.moment = held[0].next_attempt_at
    request_after(client)
    assert len(mail.messages) == 3 and mail.messages[-1]["Subject"] == "3 new inquiries"
    assert [row.status for row in query(DELIVERIES)] == ["done"] * 10


# --- Per form: its own recipients and webhook --------------------------------------


JOB_FIELDS = [{"type": "text", "key": "name", "label-en": "Name", "required": "1"},
              {"type": "email", "key": "email", "label-en": "E-mail", "required": "1"},
              {"type": "radio", "key": "role", "label-en": "Role", "choices-en": "dev | Developer\nops | Operator"},
              {"type": "textarea", "key": "letter", "label-en": "Cover letter"}]


@pytest.fixture
def jobs_receiver():
    hook = WebhookReceiver(SECRET).start()
    yield hook
    hook.stop()


def make_jobs_form(admin_client, jobs_receiver, **settings) -> None:
    data = editor_post(admin_client, "/admin/forms/new", JOB_FIELDS, slug="jobs", **{
        "title-en": "Jobs", "notify_emails": "jobs@example.org", "webhook_url": jobs_receiver.url, **settings})
    assert admin_client.post("/admin/forms/new", data=data).status_code == 303


def include_content(admin_client, digest_minutes: str = "0") -> None:
    admin_client.post("/admin/notifications", data={
        "csrf_token": csrf_token(admin_client, "/admin/notifications"), "include_content": "1",
        "digest_minutes": digest_minutes})


def test_a_form_with_its_own_recipients_and_webhook_notifies_them_and_names_itself(admin_client, mail, receiver,
                                                                                  jobs_receiver):
    include_content(admin_client)
    make_jobs_form(admin_client, jobs_receiver)
    answers = {"name": "Ines", "email": "ines@example.com", "role": "ops", "letter": "Hello"}
    with admin_client.post("/api/forms/jobs/inquiries", json={**answers, "altcha": solution(admin_client)}) as sent:
        assert sent.status_code == 201
    settle(admin_client.application)
    [message] = mail.messages
    assert message["To"] == "jobs@example.org" and "Form: jobs" in message.get_payload()
    assert "Role: Operator" in message.get_payload() and "Cover letter: Hello" in message.get_payload()
    assert receiver.received == []
    [hook] = jobs_receiver.received
    assert hook.verified and hook.payload["version"] == 3
    assert hook.payload["data"]["form"] == "jobs" and hook.payload["data"]["answers"] == answers
    submit_inquiry(admin_client)  # the site's own form: the site's recipients and webhook
    assert mail.messages[-1]["To"] == ADMIN_ADDRESS and receiver.received[-1].payload["data"]["form"] == "contact"


def test_a_forms_own_recipients_get_each_inquiry_at_once_while_the_sites_wait_for_the_digest(admin_client, mail,
                                                                                           jobs_receiver, query):
    include_content(admin_client, digest_minutes="10")
    make_jobs_form(admin_client, jobs_receiver)
    submit_inquiry(admin_client)
    answers = {"name": "Ines", "email": "ines@example.com", "role": "dev", "letter": "Hi"}
    with admin_client.post("/api/forms/jobs/inquiries", json={**answers, "altcha": solution(admin_client)}):
        pass
    settle(admin_client.application)
    assert [message["To"] for message in mail.messages] == ["jobs@example.org"]
    pending = query(select(Delivery).where(Delivery.channel == "email", Delivery.status == "pending"))
    assert len(pending) == 1  # the Contact inquiry's e-mail waits for its digest window
