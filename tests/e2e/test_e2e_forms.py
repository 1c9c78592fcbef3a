"""Journey: an admin builds a form in the editor and a visitor answers it, in a real Chromium.

The editor and the new form pass axe-core and fit a phone; the form is
answered with JavaScript on (the spam check solved, the inquiry in the
inbox with its answers) and off (no script at all: a person's inquiry still
reaches the inbox, the missing check being one signal among several).
"""

from __future__ import annotations

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect
from sqlalchemy import select

from app.models import Form, Inquiry
from tests.e2e.steps import FILL_SECONDS, add_field, assert_fits, enroll, wait_like_a_person

PHONE = {"width": 390, "height": 844}


def assert_accessible(page) -> None:
    results = Axe().run(page)
    found = [(each["id"], [node["html"] for node in each["nodes"]]) for each in results.response["violations"]]
    assert results.violations_count == 0, (page.url, found)


def build_form(page) -> None:
    """New form: a title, an address, three fields added one by one through the blank card."""
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Forms").click()
    page.get_by_role("link", name="New form").click()
    page.get_by_label("Title (English)").fill("Press inquiry")
    page.get_by_role("textbox", name="Address", exact=True).fill("press")
    for kind, key, label, choices in (
        ("Short text", "name", "Your name", ""),
        ("Single choice (buttons)", "outlet", "Outlet", "print | Print\nweb | Web"),
        ("Consent", "consent", "You may quote me.", ""),
    ):
        add_field(page, kind, key, label, choices)
        expect(page.get_by_role("region", name="Preview").get_by_text(label)).to_be_visible()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("The form press was saved.")).to_be_visible()


def test_an_admin_builds_a_form_and_a_visitor_answers_it_with_and_without_javascript(
    server, page, authenticator, new_context, shot, page_problems
):
    enroll(page, server.quick_invite_link("Flo Forms"))
    build_form(page)
    assert_accessible(page)
    page.set_viewport_size(PHONE)
    assert_fits(page)
    shot(page, "form-editor-phone")

    visitor = new_context().new_page()
    visitor.goto("/f/press")
    expect(visitor.get_by_role("heading", name="Press inquiry")).to_be_visible()
    assert_accessible(visitor)
    visitor.get_by_label("Your name").fill("Rita Reporter")
    visitor.get_by_role("radio", name="Web").check()
    page_problems.expect_status(422, "/f/press")
    visitor.get_by_role("button", name="Send inquiry").click()  # consent not given
    expect(visitor.get_by_role("alert")).to_contain_text("Tick this box to send the form.")
    assert_accessible(visitor)
    visitor.get_by_label("You may quote me.").check()
    wait_like_a_person(visitor)
    visitor.get_by_role("button", name="Send inquiry").click()
    visitor.wait_for_url("**/thanks")

    scriptless = new_context(java_script_enabled=False).new_page()
    scriptless.goto("/f/press")
    scriptless.get_by_label("Your name").fill("Sam Scriptless")
    scriptless.get_by_label("You may quote me.").check()
    scriptless.wait_for_timeout(FILL_SECONDS * 1000)
    scriptless.get_by_role("button", name="Send inquiry").click()
    scriptless.wait_for_url("**/thanks")

    with server.engine.connect() as connection:
        form_id = connection.scalar(select(Form.id).where(Form.slug == "press"))
        rows = connection.execute(select(Inquiry.name, Inquiry.status, Inquiry.form_id).order_by(Inquiry.id)).all()
    assert [tuple(row) for row in rows[-2:]] == [
        ("Rita Reporter", "inbox", form_id),
        ("Sam Scriptless", "inbox", form_id),
    ]
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto("/admin/?form=press")
    page.get_by_role("link", name="Rita Reporter").click()
    expect(page.locator("#answers")).to_contain_text("Web")
    expect(page.locator("#answers")).to_contain_text("You may quote me.")
    assert_accessible(page)


def test_the_site_form_keeps_its_page(server, new_context):
    visitor = new_context().new_page()
    visitor.goto("/")
    expect(visitor.get_by_role("heading", name="Contact")).to_be_visible()
    expect(visitor.get_by_label("Message")).to_be_visible()
