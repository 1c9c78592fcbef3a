"""Journey: an admin answers a person's requests on the People page, in a real Chromium.

Looks an address up (in another case than stored), downloads the JSON and
CSV exports, and erases after a confirmation that lists the legal hold kept.
The page fits 1280×800 and 390×844 with no horizontal scroll, and axe-core
finds no violation on the page or the confirmation.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect
from sqlalchemy import select

from app.core.db import get_session
from app.models import Erasure, Inquiry
from tests.e2e.steps import assert_fits, enroll
from tests.factories import add_inquiries, inquiry, wall_clock

SIZES = {"desktop": (1280, 800), "phone": (390, 844)}
LONG_ADDRESS = "person.with.a.rather.long.address.for.phones@people-example.org"


def assert_accessible(page) -> None:
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_snapshot()


def arrange(server) -> list[int]:
    with server.app().app_context():
        return add_inquiries(
            get_session(),
            [
                inquiry(
                    wall_clock,
                    0.5,
                    name="Pat Person",
                    email=LONG_ADDRESS,
                    message="Please send me everything you hold about me.\nThanks, Pat",
                    user_agent="Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                    "Chrome/156.0 Safari/537.36",
                ),
                inquiry(wall_clock, 1, name="Pat Person", email=LONG_ADDRESS, status="spam", message="=HYPERLINK(1)"),
                inquiry(
                    wall_clock,
                    2,
                    name="Pat Person",
                    email=LONG_ADDRESS,
                    legal_hold=True,
                    hold_reason="Open claim 2026-17",
                    hold_by="Lee",
                    held_at=wall_clock(),
                ),
                inquiry(wall_clock, 1, name="Someone Else", email="else@example.com"),
            ],
        )


def inquiries_of(server, address: str) -> list[int]:
    with server.engine.connect() as conn:
        return sorted(conn.execute(select(Inquiry.id).where(Inquiry.email == address)).scalars())


def test_people_page_export_and_erase(server, page, authenticator, shot):
    pat_inbox, pat_spam, pat_held, _other = arrange(server)
    enroll(page, server.quick_invite_link("Pam Privacy"))
    page.get_by_role("navigation", name="Main").get_by_role("link", name="People").click()
    expect(page.get_by_role("heading", name="People", exact=True)).to_be_visible()
    page.get_by_label("Email address").fill(LONG_ADDRESS.upper())
    page.get_by_role("button", name="Look up").click()
    expect(page.get_by_text("3 inquiries are held for this address.")).to_be_visible()
    expect(page.get_by_role("article")).to_have_count(3)
    for name, (width, height) in SIZES.items():
        page.set_viewport_size({"width": width, "height": height})
        assert_fits(page)
        assert_accessible(page)
        shot(page, f"people-{name}-{width}x{height}")
    page.set_viewport_size({"width": 1280, "height": 800})

    with page.expect_download() as downloaded:
        page.get_by_role("link", name="Export JSON").click()
    document = json.loads(Path(downloaded.value.path()).read_text(encoding="utf-8"))
    assert document["email"] == LONG_ADDRESS
    assert [item["id"] for item in document["inquiries"]] == [pat_held, pat_spam, pat_inbox]
    with page.expect_download() as downloaded:
        page.get_by_role("link", name="Export CSV").click()
    rows = list(csv.DictReader(io.StringIO(Path(downloaded.value.path()).read_text(encoding="utf-8-sig"))))
    assert {row["message"] for row in rows} >= {"'=HYPERLINK(1)"}

    page.get_by_role("button", name="Erase…").click()
    expect(page.get_by_role("heading", name=f"Erase 2 inquiries of {LONG_ADDRESS}?")).to_be_visible()
    expect(page.get_by_text("Open claim 2026-17")).to_be_visible()
    assert_accessible(page)
    page.set_viewport_size({"width": 390, "height": 844})
    assert_fits(page)
    assert_accessible(page)
    shot(page, "confirm-erase-phone")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.get_by_role("button", name="Erase 2 inquiries").click()
    expect(page.get_by_text("Erased 2 inquiries. 1 inquiry on legal hold kept.")).to_be_visible()
    expect(page.get_by_role("article")).to_have_count(1)
    assert_accessible(page)
    shot(page, "after-erasure")
    assert inquiries_of(server, LONG_ADDRESS) == [pat_held]
    with server.engine.connect() as conn:
        assert conn.execute(select(Erasure.count, Erasure.actor)).all() == [(2, "Pam Privacy")]
