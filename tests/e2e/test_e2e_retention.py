"""Journey 5: a shorter retention, previewed and confirmed, is carried out after a request.

The module has its own server and database; its cleanup interval is one second
so that a cleanup falls due again soon after the one the enrollment triggers.
"""

from __future__ import annotations

import re
import time

from playwright.sync_api import expect
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.core.db import WRITE_OPTION
from app.models import Inquiry
from tests.e2e.steps import enroll, row_with, submit_inquiry
from tests.factories import add_inquiries, inquiry, wall_clock

SERVER_ENV = {"SUNDOWN_CLEANUP_INTERVAL": "1"}
INQUIRIES_DELETED = re.compile(r"\binquiries: (\d+)")


def test_shorter_retention_is_previewed_confirmed_and_carried_out_after_a_request(server, page, authenticator, shot):
    enroll(page, server.quick_invite_link("Rita Retention"))
    store_inquiries(server, days_old=100, names=["Old Otto 1", "Old Otto 2", "Old Otto 3"])
    store_inquiries(server, days_old=100, names=["Old Olga on hold"], legal_hold=True)
    store_inquiries(server, days_old=10, names=["Recent Rosa"])
    page.reload()
    expect(row_with(page, "Old Otto 3")).to_have_count(1)  # 100 days < 180 days: still kept

    nav = page.get_by_role("navigation", name="Main")
    nav.get_by_role("link", name="Retention").click()
    page.get_by_label("Keep inquiries for (days)").fill("30")
    page.get_by_role("button", name="Save", exact=True).click()  # not "Save spam retention"
    expect(page.get_by_role("heading", name="Shorten retention to 30 days?")).to_be_visible()
    preview = page.locator("p", has_text="will permanently delete")
    expect(preview.get_by_role("strong")).to_have_text("3")
    shot(page, "preview")
    page.get_by_role("button", name="Save 30 days").click()
    expect(page.get_by_text("Retention set to 30 days (was 180).")).to_be_visible()
    shot(page, "saved")

    nav.get_by_role("link", name="Inbox").click()
    expect(row_with(page, "Old Otto")).to_have_count(0)  # hidden at once, before any cleanup
    expect(row_with(page, "Old Olga on hold")).to_have_count(1)

    submit_inquiry(page, "Trudy Trigger", "trudy@example.com", "Any request may start a cleanup.")
    deleted = wait_for_cleanup_that_deleted_inquiries(page)
    shot(page, "cleanup-page")

    assert deleted == [3]
    expect(page.get_by_text("180 → 30 days")).to_be_visible()  # the audit log
    assert stored_names(server) == ["Old Olga on hold", "Recent Rosa", "Trudy Trigger"]


def wait_for_cleanup_that_deleted_inquiries(page, attempts: int = 20) -> list[int]:
    """Poll the cleanup page until a run has deleted inquiries; every run's count of them.

    The cleanup runs after a response has been sent; if the one-second
    interval had not passed yet at the trigger, visiting the inbox triggers again.
    """
    for _ in range(attempts):
        page.goto("/admin/cleanup")
        counts = [int(n) for n in INQUIRIES_DELETED.findall(recent_cleanups_text(page))]
        if any(counts):
            return [n for n in counts if n]
        time.sleep(0.25)
        page.goto("/admin/")
    raise AssertionError("no cleanup deleted any inquiry:\n" + recent_cleanups_text(page))


def recent_cleanups_text(page) -> str:
    """The text of the "Recent cleanups" table (empty when there is none)."""
    table = page.locator("h2:has-text('Recent cleanups') + .table-wrap table")
    return table.inner_text() if table.count() else ""


def store_inquiries(server, days_old: int, names: list[str], legal_hold: bool = False) -> None:
    """Insert inquiries received ``days_old`` days ago straight into the database."""
    rows = [
        inquiry(
            wall_clock,
            days_old,
            name=name,
            email="old@example.com",
            message="From long ago.",
            legal_hold=legal_hold,
            hold_reason="Open claim" if legal_hold else None,
        )
        for name in names
    ]
    # As the app's own writers do: SQLite's write lock taken up front, polled finely, so the server's
    # short write transactions (a cleanup run's batches and merge steps) cannot starve this insert.
    with (
        server.engine.connect().execution_options(**{WRITE_OPTION: True}) as connection,
        Session(connection) as session,
    ):
        add_inquiries(session, rows)


def stored_names(server) -> list[str]:
    """The names of every stored inquiry, sorted."""
    with server.engine.connect() as conn:
        return sorted(conn.scalars(select(Inquiry.name)))
