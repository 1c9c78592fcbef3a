"""Journey 1: a visitor without JavaScript sends an inquiry through the HTML form."""

from __future__ import annotations

from playwright.sync_api import expect
from sqlalchemy import select

from app.models import Inquiry


def test_visitor_without_javascript_fixes_errors_and_reaches_thanks(new_context, server, shot, page_problems):
    page_problems.expect_status(422, "/")  # the form with errors comes back as 422
    page = new_context(java_script_enabled=False).new_page()
    page.goto("/")
    expect(page.get_by_role("heading", name="Contact")).to_be_visible()
    shot(page, "empty-form")

    page.get_by_label("Your name").fill("Grace Hopper")
    page.get_by_label("Email address").fill("grace-at-example")
    with page.expect_response(lambda r: r.request.method == "POST") as posted:
        page.get_by_role("button", name="Send inquiry").click()
    assert posted.value.status == 422
    shot(page, "field-errors")

    expect(page.get_by_role("alert")).to_contain_text("Please correct the errors below.")
    expect(page.get_by_label("Email address")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Message")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Your name")).not_to_have_attribute("aria-invalid", "true")
    expect(page.locator("#email-error")).to_contain_text("Enter a valid email address")
    expect(page.locator("#message-error")).to_have_text("This field is required.")
    expect(page.get_by_label("Your name")).to_have_value("Grace Hopper")
    expect(page.get_by_label("Email address")).to_have_value("grace-at-example")
    assert stored_messages(server) == []

    page.get_by_label("Email address").fill("grace@example.com")
    page.get_by_label("Message").fill("Does the inbox work\nwithout JavaScript?")
    page.get_by_role("button", name="Send inquiry").click()
    page.wait_for_url("**/thanks")
    expect(page.get_by_role("heading", name="Thank you")).to_be_visible()
    shot(page, "thanks")

    assert stored_messages(server) == [
        ("Grace Hopper", "grace@example.com", "Does the inbox work\nwithout JavaScript?")
    ]
    # No JavaScript, no proof-of-work: kept in the spam folder, behind the same thank-you page.
    with server.engine.connect() as conn:
        assert list(conn.execute(select(Inquiry.status)).scalars()) == ["spam"]


def stored_messages(server) -> list[tuple[str, str, str]]:
    """The inquiries in the server's database, oldest first."""
    with server.engine.connect() as conn:
        rows = conn.execute(select(Inquiry.name, Inquiry.email, Inquiry.message).order_by(Inquiry.id))
        return [tuple(row) for row in rows]
