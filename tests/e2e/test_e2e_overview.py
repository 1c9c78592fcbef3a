"""Journey: the first owner's getting-started checklist on the Overview, in a real Chromium.

The first admin, enrolled under the name ``admin``, follows the checklist's
first link, chooses a name and finds the step ticked; sends a test inquiry
through the public form and finds that one ticked too; hides the checklist and
brings it back. The Overview fits 1280×800 and 390×844 with the checklist
shown and hidden, and axe-core finds no violation in either.
"""

from __future__ import annotations

import re

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.e2e.steps import assert_fits, assert_no_broken_words, enroll, submit_inquiry

SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


def check_both_widths(page, shot, name: str) -> None:
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        assert_fits(page)
        assert_no_broken_words(page)
        results = Axe().run(page)
        assert results.violations_count == 0, results.generate_snapshot()
        shot(page, f"{name}-{size}")
    page.set_viewport_size(SIZES["desktop"])


def step(page, key: str):
    return page.locator(f"#start-{key}")


def test_the_first_owner_follows_the_checklist_hides_it_and_brings_it_back(server, page, authenticator, shot):
    enroll(page, server.quick_invite_link("admin"))
    page.goto("/admin/overview")
    checklist = page.get_by_role("region", name="Getting started")
    expect(checklist).to_be_visible()
    expect(step(page, "name")).to_have_attribute("data-done", "no")
    expect(step(page, "name").locator(".badge")).to_have_text("To do")
    check_both_widths(page, shot, "overview-checklist")

    step(page, "name").get_by_role("link").click()
    expect(page).to_have_url(re.compile(r"/admin/account#admin-name$"))
    page.get_by_label("Name your team sees").fill("Olivia Owner")
    page.get_by_role("button", name="Save name").click()
    page.goto("/admin/overview")
    expect(step(page, "name")).to_have_attribute("data-done", "yes")
    expect(step(page, "name").locator(".badge")).to_have_text("Done")

    expect(step(page, "inquiry")).to_have_attribute("data-done", "no")
    submit_inquiry(page, "Olivia Owner", "olivia@example.com", "Does the form reach me?")
    page.goto("/admin/overview")
    expect(step(page, "inquiry")).to_have_attribute("data-done", "yes")

    page.get_by_role("button", name="Hide this checklist").click()
    expect(page).to_have_url(re.compile(r"/admin/overview$"))
    expect(checklist).to_have_count(0)
    restore = page.get_by_role("button", name="Show the getting-started checklist")
    expect(restore).to_be_visible()
    check_both_widths(page, shot, "overview-hidden")
    page.reload()
    expect(checklist).to_have_count(0)  # put away for good, not for one page

    restore.click()
    expect(checklist).to_be_visible()
    expect(step(page, "name")).to_have_attribute("data-done", "yes")
