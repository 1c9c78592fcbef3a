"""Journey: an admin sets up notifications on the page, tests them, and a new inquiry is delivered.

A real SMTP server (aiosmtpd, plain ``smtp://`` on loopback, as a local
relay) and a webhook receiver checking signatures with ``standardwebhooks``
run in the test process. The recipients, the webhook URL and its secret are
all set in the browser; only the SMTP server comes from the environment.
axe-core finds no violation on the Notifications page.
"""

from __future__ import annotations

import time

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from devtools.pgcluster import free_port
from devtools.receivers import ApiReceiver, MailServer, WebhookReceiver
from tests.e2e.steps import enroll, submit_inquiry

MAIL_PORT = free_port()
SERVER_ENV = {"SUNDOWN_SMTP_URL": f"smtp://127.0.0.1:{MAIL_PORT}", "SUNDOWN_WEBHOOK_ALLOW_PRIVATE": "1"}


@pytest.fixture(scope="module", autouse=True)
def mail():
    """The SMTP relay the server was configured with (started before the server)."""
    server = MailServer(None, port=MAIL_PORT).start()
    yield server
    server.stop()


@pytest.fixture
def receiver():
    hook = WebhookReceiver(secret="whsec_" + "A" * 44).start()  # the real secret is set once the page makes it
    yield hook
    hook.stop()


def test_an_admin_configures_tests_and_receives_notifications(server, page, authenticator, shot, mail, receiver):
    mail.mailbox.messages.clear()  # the relay outlives each database's server
    enroll(page, server.quick_invite_link("Nora Notify"))
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Notifications").click()
    expect(page.get_by_role("heading", name="Notifications", exact=True)).to_be_visible()
    page.get_by_label("E-mail recipients").fill("nora@example.org")
    page.get_by_label("Webhook URL").fill(receiver.url)
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("Notification settings saved.")).to_be_visible()

    page.get_by_role("button", name="Make a secret").click()
    secret = page.locator("#new-secret").inner_text()
    assert secret.startswith("whsec_")
    receiver.secret = secret
    shot(page, "secret-shown-once")
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_snapshot()

    page.get_by_role("button", name="Send a test notification").click()
    expect(page.get_by_text("E-mail test delivered.")).to_be_visible()
    expect(page.get_by_text("Webhook test delivered.")).to_be_visible()
    assert [message["Subject"] for message in mail.messages] == ["Test notification from Sundown"]
    assert [hook.payload["type"] for hook in receiver.received] == ["test"]
    shot(page, "test-delivered")

    submit_inquiry(page, "Vera Visitor", "vera@example.com", "Please call me back.")
    page.goto("/admin/notifications")
    wait_for_delivered(page, 4)
    shot(page, "inquiry-delivered")
    [_test, inquiry_mail] = mail.messages
    assert inquiry_mail["Subject"].startswith("New inquiry #")
    assert "Vera" not in inquiry_mail.get_payload()  # no personal data by default
    assert all(hook.verified for hook in receiver.received)
    assert receiver.received[-1].payload["type"] == "inquiry.received"
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_snapshot()


def wait_for_delivered(page, count: int, attempts: int = 20) -> None:
    """Reload the Notifications page until ``count`` deliveries show as delivered."""
    delivered = page.locator("td.delivery-status", has_text="delivered")
    for _ in range(attempts):
        if delivered.count() >= count:
            return
        time.sleep(0.5)
        page.reload()
    expect(delivered).to_have_count(count)


@pytest.fixture
def ntfy():
    """A stand-in for an ntfy server on loopback that answers 404 (a topic gone) until told otherwise."""
    server = ApiReceiver(status=404).start()
    yield server
    server.stop()


def test_an_owner_adds_a_chat_url_sees_it_fail_in_the_log_and_sends_it_again(
    server, page, authenticator, shot, ntfy, page_problems
):
    page_problems.expect_status(422, "/admin/notifications/chat")
    enroll(page, server.quick_invite_link("Chad Chat"))
    page.goto("/admin/notifications")
    url = f"ntfy://127.0.0.1:{ntfy.server.server_address[1]}/sundown?token=tk_E2eSecretToken"
    page.get_by_label("Chat URLs", exact=True).fill(f"{url}\nmailto://someone@example.org")
    page.get_by_role("button", name="Save chat settings").click()
    expect(page.get_by_text("mailto:// is not a service Sundown speaks")).to_be_visible()
    page.get_by_label("Chat URLs", exact=True).fill(url)
    page.get_by_label("ntfy", exact=True).select_option("0")
    page.get_by_role("button", name="Save chat settings").click()
    expect(page.get_by_text("Chat settings saved.")).to_be_visible()
    assert "E2eSecretToken" not in page.content()

    page.get_by_role("button", name="Send a test on ntfy").click()
    expect(page.get_by_text("ntfy test failed: ntfy HTTP 404")).to_be_visible()
    expect(page.get_by_role("button", name="Send again (notification").first).to_be_visible()
    shot(page, "chat-failed-in-log")
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_snapshot()

    ntfy.status = 200
    page.get_by_role("button", name="Send again (notification").first.click()
    expect(page.get_by_text("ntfy notification queued again.")).to_be_visible()
    wait_for_delivered(page, 1)
    assert [call.payload["title"] for call in ntfy.calls][-1] == "Test notification from Sundown"
