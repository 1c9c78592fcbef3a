"""Journey: an admin replies from an inquiry's page in a real Chromium, in English, Japanese and Chinese.

A real SMTP relay (aiosmtpd, plain ``smtp://`` on loopback) receives the
replies. The page, the composer and the reply's state fit 1280×800 and
390×844 with no horizontal scroll, and axe-core finds no violation. A
reply shown queued turns sent in place, without a reload, once the outbox
has sent it (``static/replies.js``).
"""

from __future__ import annotations

import email
import re
import time
from email.policy import default as default_policy

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from app.core.db import get_session
from app.models import ReplyKind
from app.replies import sending
from devtools.pgcluster import free_port
from devtools.receivers import MailServer
from tests.e2e.steps import assert_fits, enroll
from tests.factories import add_inquiries, inquiry, wall_clock

MAIL_PORT = free_port()
SERVER_ENV = {
    "SUNDOWN_SMTP_URL": f"smtp://127.0.0.1:{MAIL_PORT}",
    "SUNDOWN_MAIL_FROM": "sundown@example.org",
    "SUNDOWN_REPLY_TO": "team@example.org",
}
SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
WORDS = {
    "en": {"send": "Send reply", "queued": "Reply queued", "sent": "Sent", "heading": "Conversation"},
    "ja": {"send": "返信を送る", "queued": "返信を送信待ちにしました", "sent": "送信済み", "heading": "やり取り"},
    "zh-Hans": {"send": "发送回复", "queued": "回复已排队", "sent": "已发送", "heading": "对话"},
}


@pytest.fixture(scope="module", autouse=True)
def mail():
    """The SMTP relay the server was configured with (started before the server)."""
    server = MailServer(None, port=MAIL_PORT).start()
    yield server
    server.stop()


def assert_accessible(page) -> None:
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_snapshot()


def arrange(server, name: str) -> int:
    with server.app().app_context():
        [row] = add_inquiries(
            get_session(),
            [
                inquiry(
                    wall_clock,
                    days_old=0.01,
                    name=name,
                    email=f"{name.split()[0].lower()}@example.com",
                    message="Could you tell me\nwhen the shop opens?",
                )
            ],
        )
    return row


def delivered_to(mail, address: str, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for recipients, raw in mail.envelopes:
            if recipients == [address]:
                return email.message_from_bytes(raw, policy=default_policy)
        time.sleep(0.1)
    pytest.fail(f"no e-mail reached {address}")


def reload_until_sent(page, timeout: float = 30) -> None:
    """The relay has the e-mail; the attempt is recorded a moment later: reload until the page says so."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page.reload()
        if page.locator('.reply-state[data-state="sent"]').count():
            return
        time.sleep(0.2)


def test_an_admin_replies_from_the_inquiry_page_in_every_language(server, page, authenticator, shot, mail):
    enroll(page, server.quick_invite_link("Rita Reply"))
    for locale, person in (("en", "Olga Open"), ("ja", "Kenji Kaiten"), ("zh-Hans", "Li Lianxi")):
        words = WORDS[locale]
        if locale != "en":
            page.goto(f"{server.base_url}/admin/account")
            page.locator("#locale").select_option(locale)
            page.locator("#locale").locator("xpath=ancestor::form").locator("button[type=submit]").click()
        row = arrange(server, person)
        page.goto(f"{server.base_url}/admin/inquiries/{row}")
        expect(page.get_by_role("heading", name=words["heading"], exact=True)).to_be_visible()
        body = page.locator("#reply-body")
        assert "> when the shop opens?" in body.input_value()
        for size, viewport in SIZES.items():
            page.set_viewport_size(viewport)
            assert_fits(page)
            assert_accessible(page)
            shot(page, f"{locale}-composer-{size}")
        body.press("Control+Home")
        body.type("We open at nine.\n")
        page.get_by_role("button", name=words["send"]).click()
        expect(page.get_by_text(re.compile(words["queued"]))).to_be_visible()
        message = delivered_to(mail, f"{person.split()[0].lower()}@example.com")
        assert message["Reply-To"] == "team@example.org" and message["In-Reply-To"].startswith(f"<inquiry-{row}.")
        assert message.get_content().startswith("We open at nine.")
        reload_until_sent(page)
        expect(page.locator(".reply-state").first).to_have_text(words["sent"])
        for size, viewport in SIZES.items():
            page.set_viewport_size(viewport)
            assert_fits(page)
            assert_accessible(page)
            shot(page, f"{locale}-replied-{size}")


def test_a_queued_reply_turns_sent_in_place_without_a_reload(server, page, authenticator, shot, mail):
    enroll(page, server.quick_invite_link("Paula Poll"))
    row = arrange(server, "Petra Patient")
    before = len(mail.envelopes)  # the relay serves this module's servers on both databases
    with server.app().test_request_context():  # queued as the composer queues it
        session = get_session()
        sending.queue(session, row, ReplyKind.REPLY, "Re: Opening hours", "We open at nine.", "en")
        session.commit()
    response = page.goto(f"{server.base_url}/admin/inquiries/{row}")
    assert 'data-state="queued">Queued</span>' in response.text()  # as the page was drawn
    page.evaluate("() => { window.notReloaded = true; }")
    server.flask("deliver")  # the outbox sends it, unless this server's own pass already has
    badge = page.locator(".reply-state").first
    expect(badge).to_have_text("Sent", timeout=40_000)  # the script asks less and less often, at most every 15 s
    expect(badge).to_have_attribute("data-state", "sent")
    expect(badge).to_have_class(re.compile(r"\bok\b"))
    expect(page.locator("#reply-states-live")).to_have_text("Sent: Re: Opening hours")
    assert page.evaluate("() => window.notReloaded === true")
    assert [to for to, _raw in mail.envelopes[before:]] == [["petra@example.com"]]  # sent once
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        assert_fits(page)
        assert_accessible(page)
        shot(page, f"polled-sent-{size}")
