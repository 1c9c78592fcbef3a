"""Every admin page fits 1280×800 and 390×844 with no sideways scroll, and axe-core finds no violation.

The cleanup page is visited after a run, so its tables hold rows (the widest state); the Retention page and
a form's page once the forecast is stored, so they show its charts and tables.
"""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe

from tests.e2e.steps import assert_fits, assert_no_broken_words, enroll

SIZES = {"desktop": (1280, 800), "phone": (390, 844)}
PAGES = [
    "/admin/",
    "/admin/spam",
    "/admin/account",
    "/admin/admins",
    "/admin/cleanup",
    "/admin/forms",
    "/admin/forms/new",
    "/admin/forms/1",
    "/admin/notifications",
    "/admin/notifications?channel=email",
    "/admin/people",
    "/admin/retention",
    "/admin/retention/report?form=1",
    "/admin/overview",
    "/admin/tags",
    "/admin/held",
]


@pytest.fixture
def admin_page(server, page, authenticator):
    enroll(page, server.quick_invite_link("Wide Wanda"))
    page.goto(f"{server.base_url}/admin/cleanup")
    page.get_by_role("button", name="Run cleanup now").click()
    # Contact anonymises: the forecast's pages then draw that series and column too.
    page.goto(f"{server.base_url}/admin/forms/1")
    page.locator("summary", has_text="Retention").click()  # the form's settings are folded by topic
    page.get_by_label("Anonymise the inquiries").check()
    page.get_by_role("button", name="Save", exact=True).click()
    page.wait_for_url("**/admin/forms/1")
    for _ in range(100):  # the first Retention page asks for the forecast after its response
        page.goto(f"{server.base_url}/admin/retention")
        if page.locator("svg.chart").count():
            break
        page.wait_for_timeout(200)
    return page


def test_every_admin_page_fits_both_widths_and_passes_axe(server, admin_page, shot):
    problems = []
    for path in PAGES:
        for name, (width, height) in SIZES.items():
            admin_page.set_viewport_size({"width": width, "height": height})
            admin_page.goto(f"{server.base_url}{path}")
            try:
                assert_fits(admin_page)
                assert_no_broken_words(admin_page)
            except AssertionError as error:
                problems.append(f"{path} at {width} px: {error}")
            results = Axe().run(admin_page)
            if results.violations_count:
                problems.append(f"{path} at {width} px: {results.generate_snapshot()}")
            shot(admin_page, f"admin-{path.strip('/').replace('/', '-') or 'inbox'}-{name}")
    assert not problems, "\n".join(problems)
