"""Journey 9: an admin works the inbox in a real Chromium (read, unread, reply, answered).

The inbox and detail pages fit 1280×800 and 390×844 with no horizontal
scroll (the page's scroll width is asserted), turn into stacked cards on a
phone, and axe-core finds no violation on either at either size.
Screenshots go to ``artifacts/e2e/<test>/``.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect
from sqlalchemy import select

from app.core.db import get_session
from app.models import Inquiry, InquiryView
from tests.e2e.steps import assert_fits, enroll, row_with
from tests.factories import add_inquiries, inquiry, wall_clock

FIREFOX = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0"
LONG = (
    "Hello, we would like to ask about the delivery of our order number 4711 and the invoice that came with it, "
    "which lists twelve units where we ordered ten; "
    "could you send a corrected invoice before Tuesday morning? "
) * 3
SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


def assert_accessible(page) -> None:
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_snapshot()


def arrange(server, prefix: str, count: int = 3) -> list[int]:
    rows = [
        inquiry(
            wall_clock,
            days_old=0.01 * (i + 1),
            name=f"{prefix} Person {i}",
            email=f"{prefix.lower()}.{i}@example.com",
            message=f"{prefix} {i}: {LONG}",
            user_agent=FIREFOX,
        )
        for i in range(count)
    ]
    with server.app().app_context():
        return add_inquiries(get_session(), rows)


def workflow_state(server, row: int) -> tuple:
    """(read for the one admin, answered) of inquiry ``row``."""
    with server.engine.connect() as conn:
        read = conn.execute(select(InquiryView.read_at).where(InquiryView.inquiry_id == row)).scalar()
        return read, conn.execute(select(Inquiry.answered_at).where(Inquiry.id == row)).scalar()


def font_weight(locator) -> int:
    return int(locator.evaluate("cell => getComputedStyle(cell).fontWeight"))


def test_read_unread_reply_and_answered(server, page, authenticator, shot):
    ids = arrange(server, "Wanda")
    enroll(page, server.quick_invite_link("Wanda Workflow"))
    row = row_with(page, "Wanda Person 0")
    # Retried until the stylesheet applies: the row can be in the page before it is.
    expect(row.locator("td.col-name")).to_have_css("font-weight", "700")  # unread: bold
    nav_inbox = page.get_by_role("navigation", name="Main").get_by_role("link", name=re.compile(r"^Inbox"))
    expect(nav_inbox).to_contain_text("unread")

    link = row.get_by_role("link", name=re.compile(r"^Wanda Person 0 ?, unread inquiry received \d{4}-\d\d-\d\d"))
    link.click()
    expect(page.get_by_role("heading", name="Inquiry from Wanda Person 0")).to_be_visible()
    expect(page.locator("#workflow-status")).to_contain_text("Read by you since")
    expect(page.locator("#browser")).to_contain_text("Firefox 133 on Windows")
    expect(page.locator("#deletion")).to_contain_text("Deleted by the first cleanup after")
    assert workflow_state(server, ids[0])[0] is not None

    reply = page.get_by_role("link", name=re.compile(r"^Reply"))
    href = reply.get_attribute("href")
    parts = urlsplit(href)
    assert parts.scheme == "mailto" and unquote(parts.path) == "wanda.0@example.com"
    fields = parse_qs(parts.query)
    assert fields["subject"][0].startswith("Re: Wanda 0: Hello, we would like")
    assert "> Wanda 0: Hello" in fields["body"][0]

    page.get_by_role("button", name="Mark answered").click()
    expect(page.get_by_text("Marked answered.")).to_be_visible()
    expect(page.locator("#workflow-status")).to_contain_text("Answered by Wanda Workflow")
    assert workflow_state(server, ids[0])[1] is not None

    page.get_by_role("link", name="← Back to the inbox").click()
    row = row_with(page, "Wanda Person 0")
    expect(row_with(page, "Wanda Person 1").locator("td.col-name")).to_have_css("font-weight", "700")  # styled
    assert font_weight(row.locator("td.col-name")) < 700  # read: no longer bold
    expect(row).to_contain_text("Answered")
    expect(row.get_by_role("link", name=re.compile(r"^Wanda Person 0 ?, inquiry received"))).to_have_count(1)

    row.get_by_role("link").click()
    page.get_by_role("button", name="Mark unread").click()
    expect(page.get_by_text("Marked unread.")).to_be_visible()
    expect(row_with(page, "Wanda Person 0").locator("td.col-name")).to_have_css("font-weight", "700")
    assert workflow_state(server, ids[0])[0] is None

    page.get_by_role("link", name="Unanswered").click()
    expect(row_with(page, "Wanda Person 0")).to_have_count(0)
    expect(row_with(page, "Wanda Person 1")).to_have_count(1)


def test_select_all_ticks_every_row_on_the_page(server, page, authenticator):
    arrange(server, "Selma", 2)
    enroll(page, server.quick_invite_link("Selma Selector"))
    expect(page.locator("[data-select-all-link]")).to_be_hidden()
    master = page.get_by_role("checkbox", name="Select every inquiry on this page")
    master.check()
    boxes = page.locator("input[name='ids']")
    assert all(boxes.nth(i).is_checked() for i in range(boxes.count()))
    master.uncheck()
    assert not any(boxes.nth(i).is_checked() for i in range(boxes.count()))


@pytest.mark.parametrize("size", SIZES)
def test_inbox_and_detail_fit_the_screen_and_pass_axe(server, new_context, size, shot):
    ids = arrange(server, f"Fit{size.title()}")
    context = new_context(viewport=SIZES[size])
    page = context.new_page()
    from tests.e2e.conftest import Authenticator

    Authenticator(page)
    enroll(page, server.quick_invite_link(f"Fiona {size}"))

    expect(page.get_by_text(re.compile(r"\d+ inquir(y|ies)\.$"))).to_be_visible()
    assert_fits(page)
    preview = row_with(page, f"Fit{size.title()} Person 0").locator(".preview")
    # The preview is cut to the space left, with an ellipsis, by CSS alone.
    assert preview.evaluate("el => el.scrollWidth > el.clientWidth")
    assert preview.evaluate("el => getComputedStyle(el).textOverflow") == "ellipsis"
    row_display = row_with(page, f"Fit{size.title()} Person 0").evaluate("tr => getComputedStyle(tr).display")
    assert row_display == ("grid" if size == "phone" else "table-row")  # a stacked card on a phone
    assert_accessible(page)
    shot(page, f"inbox-{SIZES[size]['width']}x{SIZES[size]['height']}")

    page.goto(f"/admin/inquiries/{ids[0]}")
    page.locator("details.raw-agent summary").click()
    expect(page.locator("details.raw-agent code")).to_have_text(FIREFOX)
    assert_fits(page)
    assert_accessible(page)
    shot(page, f"detail-{SIZES[size]['width']}x{SIZES[size]['height']}")
