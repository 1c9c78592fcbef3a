"""Journey: an admin replies in the inbox, the person answers by e-mail, and the answer appears in the thread.

The whole way is real: the reply leaves through an SMTP relay (aiosmtpd);
the person's answer, sent to the reply's ``Reply-To`` (the signed reply
address) over SMTP, is delivered into a Dovecot mailbox on loopback
(``devtools.imapserver.SmtpToImap``); the server fetches it over IMAPS, TLS
verified against the test CA, after an ordinary request, and the inquiry's
page shows it. In English, Japanese and Chinese, at 1280 and 390 px wide,
with no horizontal scroll and no axe-core violation.
"""

from __future__ import annotations

import email
import smtplib
import tempfile
import time
from email.message import EmailMessage
from email.policy import default as default_policy
from pathlib import Path

import pytest
from playwright.sync_api import expect

from devtools import imapserver
from devtools.pgcluster import free_port
from devtools.receivers import Certificate, MailServer
from tests.e2e.steps import assert_fits, enroll
from tests.e2e.test_e2e_replies import SIZES, WORDS, arrange, assert_accessible

MAIL_PORT, IMAPS_PORT = free_port(), free_port()
CERT_DIR = Path(tempfile.gettempdir()) / f"sundown-e2e-conversations-{MAIL_PORT}"  # made by ``dovecot``
SERVER_ENV = {
    "SUNDOWN_SMTP_URL": f"smtp://127.0.0.1:{MAIL_PORT}",
    "SUNDOWN_MAIL_FROM": "sundown@example.org",
    "SUNDOWN_INBOUND_ADDRESS": "replies@example.org",
    "SUNDOWN_IMAP_URL": f"imaps://{imapserver.USER}:{imapserver.PASSWORD}@127.0.0.1:{IMAPS_PORT}/INBOX",
    "SUNDOWN_IMAP_CA_FILE": str(CERT_DIR / "mail-cert.pem"),
    "SUNDOWN_IMAP_INTERVAL": "10",
}
PEOPLE = {"en": "Olga Answer", "ja": "Kenji Henshin", "zh-Hans": "Li Huifu"}
ANSWERS = {"en": "Monday at nine suits me.", "ja": "月曜日の9時で大丈夫です。", "zh-Hans": "星期一九点可以。"}


@pytest.fixture(scope="module", autouse=True)
def mail():
    """The SMTP relay the server sends replies through (started before the server)."""
    server = MailServer(None, port=MAIL_PORT).start()
    yield server
    server.stop()


@pytest.fixture(scope="module", autouse=True)
def dovecot():
    """The mailbox the server fetches (started before the server, on the port its settings name)."""
    if not imapserver.available():
        pytest.skip("Dovecot is not installed (apt-get install dovecot-imapd)")
    CERT_DIR.mkdir(exist_ok=True)
    server = imapserver.ImapServer(Certificate.make(CERT_DIR))
    server.tls_port = IMAPS_PORT
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def person_s_mail_server(dovecot):
    """Where the person's answer is sent: an SMTP server delivering into the mailbox."""
    relay = imapserver.SmtpToImap(dovecot).start()
    yield relay
    relay.stop()


def answer(relay, reply: EmailMessage, sender: str, text: str) -> None:
    """The person answers ``reply`` from their mail client: to its Reply-To, in its thread."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = reply["Reply-To"]
    subject = reply["Subject"]
    message["Subject"] = subject if subject.lower().startswith("re:") else f"Re: {subject}"
    message["In-Reply-To"] = reply["Message-ID"]
    message["References"] = f"{reply.get('References', '')} {reply['Message-ID']}".strip()
    message.set_content(f"{text}\n\n> We open at nine.\n")
    with smtplib.SMTP(relay.controller.hostname, relay.port, timeout=10) as smtp:
        smtp.send_message(message)


def next_delivered_to(mail, address: str, seen: int, timeout: float = 30) -> EmailMessage:
    """The first e-mail to ``address`` after the ``seen`` ones (the relay serves both databases' servers)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        arrived = [raw for recipients, raw in mail.envelopes if recipients == [address]]
        if len(arrived) > seen:
            return email.message_from_bytes(arrived[seen], policy=default_policy)
        time.sleep(0.1)
    pytest.fail(f"no new e-mail reached {address}")


def reload_until_shown(page, text: str, timeout: float = 60) -> None:
    """Each reload is an ordinary request, after which a due fetch runs: reload until the answer is shown."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page.reload()
        if page.get_by_text(text).count():
            return
        time.sleep(1)
    pytest.fail(f"the answer {text!r} did not reach the thread")


@pytest.mark.parametrize("locale", ["en", "ja", "zh-Hans"])
def test_the_person_s_answer_comes_back_through_smtp_and_imap_into_the_thread(
    server, page, authenticator, shot, mail, dovecot, person_s_mail_server, locale
):
    words, person, text = WORDS[locale], PEOPLE[locale], ANSWERS[locale]
    enroll(page, server.quick_invite_link(f"Rita {locale}"))
    if locale != "en":
        page.goto(f"{server.base_url}/admin/account")
        page.locator("#locale").select_option(locale)
        page.locator("#locale").locator("xpath=ancestor::form").locator("button[type=submit]").click()
    row = arrange(server, person)
    address = f"{person.split()[0].lower()}@example.com"
    seen = sum(recipients == [address] for recipients, _raw in mail.envelopes)
    page.goto(f"{server.base_url}/admin/inquiries/{row}")
    body = page.locator("#reply-body")
    body.press("Control+Home")
    body.type("We open at nine.\n")
    page.get_by_role("button", name=words["send"]).click()
    reply = next_delivered_to(mail, address, seen)
    assert reply["Reply-To"].startswith("replies+") and reply["Reply-To"].endswith("@example.org")
    answer(person_s_mail_server, reply, f"{person} <{address}>", text)
    reload_until_shown(page, text)
    expect(page.get_by_role("heading", name=words["heading"], exact=True)).to_be_visible()
    assert dovecot.count() == 0  # fetched, then deleted from the mailbox
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        assert_fits(page)
        assert_accessible(page)
        shot(page, f"{locale}-answered-{size}")
