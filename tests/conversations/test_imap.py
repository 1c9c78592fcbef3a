"""The IMAP mailbox (a real Dovecot on loopback, TLS verified), fetched after ordinary requests through one
claim, each stored message deleted from the mailbox; and a person's answer sent over SMTP (aiosmtpd) into it."""

from __future__ import annotations

import smtplib
import ssl
import threading

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import select

from app.conversations import imap
from app.conversations.references import reply_address
from app.core.parsing import parse_imap_url
from app.models import InboundMessage, Setting
from devtools import imapserver
from devtools.receivers import Certificate
from tests.conversations.conftest import mail
from tests.factories import inquiry
from tests.helpers import settle

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> Certificate:
    return Certificate.make(tmp_path_factory.mktemp("imap-tls"))


@pytest.fixture(scope="module")
def dovecot(certificate):
    if not imapserver.available():
        pytest.skip("Dovecot is not installed (apt-get install dovecot-imapd)")
    server = imapserver.ImapServer(certificate).start()
    yield server
    server.stop()


@pytest.fixture
def mailbox(dovecot):
    """The mailbox emptied before each test."""
    client = dovecot.connect()
    if dovecot.count():
        client.store("1:*", "+FLAGS", "(\\Deleted)")
        client.expunge()
    client.logout()
    return dovecot


def visit(client) -> None:
    """An ordinary request, its response closed (the hand-off happens then), and the work after it."""
    with client.get("/healthz") as response:
        assert response.status_code == 200
    settle(client.application)


@pytest.fixture
def app_config(app_config, mailbox, certificate) -> dict:
    return {**app_config, "IMAP_URL": mailbox.url, "IMAP_CA_FILE": str(certificate.cert), "IMAP_INTERVAL": 60}


def test_a_request_fetches_the_mailbox_after_its_response_and_empties_it(
    app, client, added, clock, query, mailbox, read_by_an_admin
):
    [row] = added([inquiry(clock)])
    read_by_an_admin(row)
    with app.app_context():
        address = reply_address(row)
    mailbox.append(mail(to=address, Message_ID="<first@example.com>"))
    mailbox.append(mail(sender="eve@example.net", Message_ID="<stranger@example.com>"))
    visit(client)
    assert sorted((m.state, m.inquiry_id) for m in query(select(InboundMessage))) == [("held", None), ("thread", row)]
    assert mailbox.count() == 0  # the mail server keeps no copy
    assert read_by_an_admin.count() == 0


def test_the_interval_holds_until_it_has_passed(app, client, clock, query, mailbox):
    visit(client)
    mailbox.append(mail(Message_ID="<later@example.com>"))
    visit(client)
    assert mailbox.count() == 1  # not due yet: not even asked
    clock.advance(seconds=61)
    visit(client)
    assert mailbox.count() == 0


def test_two_fetches_at_once_fetch_once(app, clock, mailbox, query):
    for number in range(5):
        mailbox.append(mail(Message_ID=f"<race{number}@example.com>"))
    results = []

    def fetch():
        with app.app_context():
            results.append(imap.fetch_if_due())

    threads = [threading.Thread(target=fetch) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(result is not None for result in results) == 1
    assert len(query(select(InboundMessage))) == 5
    assert int(query(select(Setting.value).where(Setting.key == imap.KEY))[0]) > 0  # released


def test_a_refused_message_is_noted_apart_and_deleted(app, mailbox, query):
    app.config["INBOUND_MAX_BYTES"] = 70_000
    mailbox.append(mail(subject="Huge", body="x" * 80_000, Message_ID="<huge@example.com>"))
    with app.app_context():
        assert imap.fetch_if_due() == {"refused": 1}
    [note] = query(select(InboundMessage))
    assert (note.state, note.reason, note.subject, note.body) == ("held", "too_large", "Huge", "")
    assert mailbox.count() == 0


@pytest.mark.parametrize("way", ["imaps", "starttls"])
def test_tls_is_verified_and_a_failed_fetch_is_counted(app, mailbox, query, way):
    app.config["IMAP_URL"] = mailbox.url if way == "imaps" else mailbox.starttls_url
    app.config["IMAP_CA_FILE"] = None  # the test certificate is trusted by no system CA
    before = REGISTRY.get_sample_value("sundown_imap_fetch_errors_total") or 0
    with app.app_context(), pytest.raises(ssl.SSLCertVerificationError):
        imap.fetch_if_due()
    assert REGISTRY.get_sample_value("sundown_imap_fetch_errors_total") == before + 1


def test_a_fetch_over_starttls_stores_and_empties_the_mailbox(app, added, clock, query, mailbox):
    """``imap+starttls://``: the plain port, upgraded to verified TLS before the login."""
    app.config["IMAP_URL"] = mailbox.starttls_url
    with app.app_context():
        client = imap.connect(parse_imap_url(mailbox.starttls_url))
    try:
        assert isinstance(client.sock, ssl.SSLSocket) and client.sock.getpeername()[1] == mailbox.port
        assert client.sock.getpeercert()  # verified: a certificate only a checked handshake returns
    finally:
        client.logout()
    [row] = added([inquiry(clock)])
    with app.app_context():
        address = reply_address(row)
    mailbox.append(mail(to=address, Message_ID="<over-starttls@example.com>"))
    with app.app_context():
        assert imap.fetch_if_due() == {"thread": 1}
    assert [(m.state, m.inquiry_id) for m in query(select(InboundMessage))] == [("thread", row)]
    assert mailbox.count() == 0


def test_a_person_s_answer_over_smtp_reaches_the_thread_through_imap(app, client, added, clock, query, mailbox):
    [row] = added([inquiry(clock)])
    with app.app_context():
        address = reply_address(row)
    relay = imapserver.SmtpToImap(mailbox).start()
    try:
        with smtplib.SMTP(relay.controller.hostname, relay.port, timeout=10) as smtp:
            smtp.sendmail("ada@example.com", [address], mail(to=address, body="See you Monday."))
    finally:
        relay.stop()
    visit(client)
    [stored] = query(select(InboundMessage))
    assert (stored.inquiry_id, stored.body) == (row, "See you Monday.")
