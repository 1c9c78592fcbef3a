"""Notifications' fixtures: a real SMTP server (aiosmtpd with STARTTLS and AUTH, its certificate made here)
and a real HTTP receiver that checks signatures with ``standardwebhooks``, the app configured to use both;
``api``, a receiver speaking the chat services' APIs, for the tests that configure chat."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from devtools.receivers import ApiReceiver, Certificate, MailServer, WebhookReceiver
from tests.conftest import FakeClock

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
ADMIN_ADDRESS = "admin@example.org"


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
    return {
        **app_config,
        "SMTP_URL": mail.url,
        "SMTP_CA_FILE": str(certificate.cert),
        "MAIL_FROM": "sundown@example.org",
        "NOTIFY_EMAILS": [ADMIN_ADDRESS],
        "WEBHOOK_URL": receiver.url,
        "WEBHOOK_SECRET": SECRET,
        "WEBHOOK_ALLOW_PRIVATE": 1,
        "TIME_ZONE": "Europe/Berlin",
        "DELIVERY_RETRY_BASE": 60,
        "CLEANUP_TOKEN": "t" * 24,
    }


@pytest.fixture
def api():
    """A receiver speaking each chat service's API (``devtools.receivers.ApiReceiver``)."""
    server = ApiReceiver().start()
    yield server
    server.stop()
