"""The digest: one e-mail per interval, the hourly cap.

Every test runs on SQLite and PostgreSQL against the real receivers of conftest.py.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from app.models import Inquiry, Preference, RateLimit
from app.notify import digest
from tests.helpers import VALID, statements_of_one_submission, submit_inquiry
from tests.notify.steps import DELIVERIES, request_after

# --- The digest -----------------------------------------------------------------


def test_a_digest_sends_one_email_per_interval_listing_the_inquiries(client, db_session, clock, query, mail, receiver):
    db_session.add(Preference(key="notify_digest_minutes", value="10"))
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


def test_a_submission_counts_the_hourly_cap_last_with_its_limits_having_read_it_to_plan(app, client, query):
    """Every submission counts on the cap's one row, and PostgreSQL holds a row lock until the transaction ends:
    counted as its notifications were planned, every other submission waited on that row for the rest of
    this one's transaction. The plan reads the count; the count is added in the submission's last upsert,
    with the client's and the site's limits."""
    statements = statements_of_one_submission(app, client, parameters=True)
    cap = [i for i, each in enumerate(statements) if digest.CAP_BUCKET in each]
    counts = [i for i, each in enumerate(statements) if each.startswith("INSERT INTO rate_limits")]
    assert len(cap) == 2 and statements[cap[0]].startswith("SELECT"), statements  # the plan's read, the count
    assert counts == cap[1:] and all(f"{bucket}:" in statements[counts[0]] for bucket in ("submit", "submit-all"))
    assert query(select(RateLimit.count).where(RateLimit.key.like(f"{digest.CAP_BUCKET}:%"))) == [1]


def test_past_the_hourly_cap_emails_wait_for_the_end_of_the_hour_and_go_as_one(
    app_config, make_app, clock, query, mail, receiver
):
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
