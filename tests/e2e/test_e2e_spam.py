"""Journey 8: the spam defence in a real Chromium, under the real CSP.

With JavaScript the form solves its proof-of-work in a Web Worker while the
visitor types and the inquiry lands in the inbox; without JavaScript it lands
in spam, behind the same thank-you page. A 429 keeps the visitor's text.
axe-core finds no violation on the form, the 429 form and the Spam page.

The module's server allows 2 submissions a minute per address, so the 429
test needs only a few tries; the tests before it send one each.
"""

from __future__ import annotations

import time

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect
from sqlalchemy import select

from app.core.db import get_session
from app.models import Inquiry
from tests.e2e.steps import FILL_SECONDS, enroll, row_with, wait_like_a_person
from tests.factories import add_inquiries, inquiry, wall_clock

SERVER_ENV = {"SUNDOWN_SUBMIT_RATE_LIMITS": "2/60,1000/86400"}


def assert_accessible(page) -> None:
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_snapshot()


def fill(page, name: str, message: str) -> None:
    page.get_by_label("Your name").fill(name)
    page.get_by_label("Email address").fill("visitor@example.com")
    page.get_by_label("Message").fill(message)


def status_of(server, name: str) -> list[str]:
    with server.engine.connect() as conn:
        return list(conn.execute(select(Inquiry.status).where(Inquiry.name == name)).scalars())


def test_with_javascript_the_form_solves_silently_and_lands_in_the_inbox(server, page, shot):
    page.goto("/")
    fill(page, "Jo Script", "Sent from a browser with JavaScript.")
    wait_like_a_person(page)
    expect(page.locator("#spam-check")).to_have_text("")  # nothing shown or announced
    payload = page.locator("input[name='altcha']").input_value()
    assert payload  # the ALTCHA payload, ready before "Send"
    assert_accessible(page)
    shot(page, "solved-form")
    page.get_by_role("button", name="Send inquiry").click()
    page.wait_for_url("**/thanks")
    expect(page.get_by_role("heading", name="Thank you")).to_be_visible()
    assert status_of(server, "Jo Script") == ["inbox"]


def test_without_javascript_a_person_reaches_the_inbox_behind_the_same_thank_you(server, new_context, shot):
    page = new_context(java_script_enabled=False).new_page()
    page.goto("/")
    fill(page, "Nora Noscript", "Sent with JavaScript off.")
    time.sleep(FILL_SECONDS)  # past the time trap: only the missing solution counts, and alone it is no spam
    page.get_by_role("button", name="Send inquiry").click()
    page.wait_for_url("**/thanks")
    expect(page.get_by_role("heading", name="Thank you")).to_be_visible()
    shot(page, "thanks")
    assert status_of(server, "Nora Noscript") == ["inbox"]


def test_the_429_form_keeps_the_text_and_focuses_the_error(server, page, page_problems, shot):
    page_problems.expect_status(429, "/")
    for attempt in range(5):  # the minute's window may have begun anew since the tests before
        page.goto("/")
        fill(page, "Rita Ratelimit", f"Attempt {attempt}: typed with care, and not to be lost.")
        with page.expect_response(lambda r: r.request.method == "POST") as posted:
            page.get_by_role("button", name="Send inquiry").click()
        if posted.value.status == 429:
            break
        page.wait_for_url("**/thanks")
    assert posted.value.status == 429
    notice = page.locator("#form-notice")
    expect(notice).to_be_focused()
    expect(notice).to_contain_text("Too many requests. Please try again in")
    expect(notice).to_contain_text("Your text is kept below.")
    expect(page.get_by_label("Message")).to_have_value(f"Attempt {attempt}: typed with care, and not to be lost.")
    expect(page.get_by_label("Your name")).to_have_value("Rita Ratelimit")
    assert_accessible(page)
    shot(page, "rate-limited")


def test_the_spam_page_is_accessible_and_not_spam_moves_an_inquiry(server, page, authenticator, shot):
    with server.app().app_context():
        add_inquiries(
            get_session(),
            [
                inquiry(
                    wall_clock,
                    days_old=0.01,
                    name="Sid Spamlike",
                    status="spam",
                    message="Looks like spam, but a person wrote it.",
                )
            ],
        )
    enroll(page, server.quick_invite_link("Sam Spamfolder"))
    folders = page.get_by_role("navigation", name="Folders")
    folders.get_by_role("link", name="Spam").click()
    expect(page.get_by_role("heading", name="Spam", exact=True)).to_be_visible()
    expect(row_with(page, "Sid Spamlike")).to_have_count(1)
    assert_accessible(page)
    shot(page, "spam-page")

    row_with(page, "Sid Spamlike").get_by_role("link").click()
    not_spam = page.get_by_role("button", name="Not spam: move to the inbox")
    # The inquiry's page loaded first: axe run while the click's navigation was under way found no document.
    expect(not_spam).to_be_visible()
    assert_accessible(page)
    not_spam.click()
    expect(page.get_by_text("Moved 1 inquiry to the inbox.")).to_be_visible()
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Inbox").click()
    expect(row_with(page, "Sid Spamlike")).to_have_count(1)
    assert status_of(server, "Sid Spamlike") == ["inbox"]
