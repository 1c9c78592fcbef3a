"""Notifications under real gunicorn: a hanging receiver delays no request; exactly-once across servers.

Real parts: gunicorn workers, aiosmtpd with STARTTLS and AUTH, an HTTP
receiver that checks signatures, PostgreSQL and SQLite.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import altcha
import pytest
from sqlalchemy import func, select

from app.core.db import make_engine
from app.models import Delivery
from bench.client import port_of
from devtools.receivers import Certificate, MailServer, WebhookReceiver
from devtools.server import running_server
from tests.conftest import new_database_url
from tests.helpers import VALID

pytestmark = pytest.mark.slow

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
WAIT = 120


def server_env(database_url: str, mail: MailServer | None, receiver: WebhookReceiver, ca: Path | None) -> dict:
    env = {
        "SUNDOWN_SECRET_KEY": "test-secret-key-long-enough-for-production",
        "SUNDOWN_ORIGIN": "http://localhost",
        "SUNDOWN_RP_ID": "localhost",
        "SUNDOWN_DATABASE_URL": database_url,
        "SUNDOWN_SUBMIT_RATE_LIMITS": "100000/1000000",
        "SUNDOWN_SUBMIT_GLOBAL_RATE_LIMITS": "100000/1000000",
        "SUNDOWN_NOTIFY_HOURLY_CAP": "100000",
        "SUNDOWN_POW_MAX_NUMBER": "20",
        "SUNDOWN_WEBHOOK_URL": receiver.url,
        "SUNDOWN_WEBHOOK_SECRET": SECRET,
        "SUNDOWN_WEBHOOK_ALLOW_PRIVATE": "1",
    }
    if mail is not None:
        env.update(
            SUNDOWN_SMTP_URL=mail.url,
            SUNDOWN_SMTP_CA_FILE=str(ca),
            SUNDOWN_NOTIFY_EMAILS='["admin@example.org"]',
            SUNDOWN_MAIL_FROM="sundown@example.org",
        )
    return env


def solved_inquiry(connection: http.client.HTTPConnection) -> bytes:
    """A JSON inquiry with a fresh, solved proof-of-work, as a browser sends it."""
    connection.request("GET", "/api/challenge")
    challenge = altcha.Challenge.from_dict(json.loads(connection.getresponse().read()))
    payload = altcha.Payload(challenge, altcha.solve_challenge(challenge)).to_base64()
    return json.dumps({**VALID, "altcha": payload}).encode()


def timed(connection: http.client.HTTPConnection, method: str, path: str, body: bytes | None = None):
    """One request on a keep-alive connection: (status, seconds until the whole response arrived)."""
    started = time.perf_counter()
    connection.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
    response = connection.getresponse()
    response.read()
    return response.status, time.perf_counter() - started


def wait_for(condition, what: str):
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if result := condition():
            return result
        time.sleep(0.1)
    pytest.fail(f"gave up waiting for {what}")


def outbox_statuses(engine) -> dict[str, int]:
    with engine.connect() as connection:
        return dict(connection.execute(select(Delivery.status, func.count()).group_by(Delivery.status)).all())


def test_a_receiver_that_hangs_30_s_delays_no_request(database_url, tmp_path):
    receiver = WebhookReceiver(SECRET, hang_seconds=30).start()
    engine = make_engine(database_url)
    try:
        env = server_env(database_url, None, receiver, None)
        with running_server(env, tmp_path / "server.log", workers=1, threads=2) as (base_url, _):
            connection = http.client.HTTPConnection("127.0.0.1", port_of(base_url), timeout=20)
            body = solved_inquiry(connection)
            status, submit_seconds = timed(connection, "POST", "/api/inquiries", body)
            assert status == 201
            # The follow-up on the same keep-alive connection: the close callback has handed off at once.
            follow_ups = [timed(connection, "GET", "/privacy") for _ in range(5)]
            assert all(status == 200 for status, _ in follow_ups)
            slowest = max(seconds for _, seconds in follow_ups)
            assert submit_seconds < 2 and slowest < 1, (submit_seconds, follow_ups)
            # The send itself gave up after its 5 s timeout and will be retried.
            wait_for(lambda: _attempted(engine), "the timed-out attempt to be recorded")
            connection.close()
        with engine.connect() as connection:
            [(status, attempts, error)] = connection.execute(
                select(Delivery.status, Delivery.attempts, Delivery.last_error)
            ).all()
        assert (status, attempts, error) == ("pending", 1, "webhook timed out")
    finally:
        engine.dispose()
        receiver.stop()


def _attempted(engine) -> bool:
    with engine.connect() as connection:
        return bool(connection.scalar(select(func.max(Delivery.attempts))))


SUBMISSIONS = 200


@pytest.fixture
def postgres_url(request, tmp_path):
    return new_database_url("postgresql", request, tmp_path)


def test_two_servers_of_four_workers_send_each_notification_exactly_once(postgres_url, tmp_path):
    certificate = Certificate.make(tmp_path)
    mail = MailServer(certificate).start()
    receiver = WebhookReceiver(SECRET).start()
    engine = make_engine(postgres_url)
    env = server_env(postgres_url, mail, receiver, certificate.cert)
    try:
        with ExitStack() as servers:
            urls = [
                servers.enter_context(running_server(env, tmp_path / f"server{n}.log", workers=4, threads=4))[0]
                for n in range(2)
            ]
            statuses = _submit_everywhere(urls, SUBMISSIONS)
            assert statuses == {201: SUBMISSIONS}
            wait_for(lambda: outbox_statuses(engine) == {"done": 2 * SUBMISSIONS}, "every delivery to be done")
        time.sleep(0.5)
        subjects = [message["Subject"] for message in mail.messages]
        assert len(subjects) == len(set(subjects)) == SUBMISSIONS
        hook_ids = [hook.headers["webhook-id"] for hook in receiver.received]
        assert len(hook_ids) == len(set(hook_ids)) == SUBMISSIONS
        assert all(hook.verified for hook in receiver.received)
        with engine.connect() as connection:
            assert connection.scalar(select(func.max(Delivery.attempts))) == 1
    finally:
        engine.dispose()
        receiver.stop()
        mail.stop()


def _submit_everywhere(urls: list[str], count: int) -> dict[int, int]:
    """``count`` solved submissions spread over the servers, 16 at a time; the statuses counted."""
    lock, counted = threading.Lock(), {}

    def one(index: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port_of(urls[index % len(urls)]), timeout=30)
        try:
            status, _ = timed(connection, "POST", "/api/inquiries", solved_inquiry(connection))
        finally:
            connection.close()
        with lock:
            counted[status] = counted.get(status, 0) + 1

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(count)))
    return counted
