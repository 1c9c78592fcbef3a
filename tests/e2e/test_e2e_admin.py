"""Journeys 2, 3, 4, 6 and 7: admins with passkeys in a real Chromium.

All tests of this module share one server and database; each works with its
own admin and its own inquiries, named so they cannot collide.
"""

from __future__ import annotations

import csv
import io
import re

from playwright.sync_api import expect
from sqlalchemy import func, select

from app.models import Admin, AdminLogin, Passkey
from tests.e2e.conftest import Authenticator
from tests.e2e.steps import (
    ADMIN_HOME,
    LOGIN_PAGE,
    OWNER_HOME,
    copy_passkeys,
    enroll,
    expect_logged_out,
    log_in,
    log_out,
    open_inbox,
    row_with,
    submit_inquiry,
)

BROWSER_NAME = re.compile(r"Chrome \d+ on Linux")


def test_invited_operator_registers_a_passkey_and_sees_the_inquiry(server, page, authenticator, shot, page_problems):
    submit_inquiry(page, "Ada Lovelace", "ada@example.com", "When does the analytical engine ship?")
    link = server.invite_link("Olga Operator")  # the operator's CLI, in a subprocess

    page.goto(link)
    expect(page.get_by_role("heading", name="Create your passkey")).to_be_visible()
    expect(page.get_by_text("as Olga Operator")).to_be_visible()
    shot(page, "enrollment-page")
    page.get_by_role("button", name="Create passkey").click()

    expect(page).to_have_url(OWNER_HOME)  # an owner lands on the Overview
    open_inbox(page)
    expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
    expect(row_with(page, "Ada Lovelace")).to_contain_text("When does the analytical engine ship?")
    expect(page.get_by_role("button", name="Log out Olga Operator")).to_be_visible()
    shot(page, "inbox")
    assert len(authenticator.credentials()) == 1
    assert passkey_count(server, "Olga Operator") == 1

    # The link works once.
    token_path = link.removeprefix(server.base_url)
    page_problems.expect_status(410, token_path)
    response = page.goto(link)
    assert response.status == 410
    expect(page.get_by_text("expired or was already used")).to_be_visible()
    shot(page, "link-used-up")


def test_passkey_login_names_the_browser_and_revokes_another_login(server, page, authenticator, new_context, shot):
    enroll(page, server.quick_invite_link("Grace Admin"))
    log_out(page)
    shot(page, "logged-out")
    log_in(page)

    page.goto("/admin/account")
    logins = logins_table(page)
    expect(logins).to_have_count(1)
    expect(logins.filter(has_text="this browser")).to_contain_text(BROWSER_NAME)
    shot(page, "one-login")

    other = new_context().new_page()
    copy_passkeys(authenticator, Authenticator(other))  # the same passkey, synced
    log_in(other)
    shot(other, "other-browser-inbox")

    page.reload()
    expect(logins).to_have_count(2)
    page.get_by_role("button", name="Revoke").click()
    expect(page.get_by_text("The login was revoked.")).to_be_visible()
    expect(logins).to_have_count(1)
    expect(logins).to_contain_text("this browser")
    shot(page, "other-login-revoked")

    expect_logged_out(other)
    shot(other, "other-browser-logged-out")
    page.goto("/admin/")
    expect(page).to_have_url(ADMIN_HOME)  # this browser is still logged in
    assert login_count(server, "Grace Admin") == 1


def test_hold_delete_and_export_csv(server, page, authenticator, shot):
    submit_inquiry(page, "Hanna Held", "hanna@example.com", "Please keep this: a claim is open.")
    submit_inquiry(page, "Dora Deleted", "dora@example.com", "Please forget me.")
    submit_inquiry(page, "Kai Kept", "kai@example.com", '=HYPERLINK("x")')
    enroll(page, server.quick_invite_link("Hal Admin"))

    row_with(page, "Hanna Held").get_by_role("link").click()
    expect(page.get_by_role("heading", name="Inquiry from Hanna Held")).to_be_visible()
    page.get_by_label("Reason").fill("Open legal claim 2026-17")
    page.get_by_role("button", name="Place hold").click()
    expect(page.get_by_role("heading", name="Inquiry from Hanna Held")).to_contain_text("Legal hold")
    shot(page, "held")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Inbox").click()
    expect(row_with(page, "Hanna Held")).to_contain_text("Hold")
    page.get_by_label("Select inquiry from Hanna Held").check()
    page.get_by_label("Select inquiry from Dora Deleted").check()
    page.get_by_role("button", name="Delete selected…").click()
    expect(page.get_by_role("heading", name="Delete 1 inquiry?")).to_be_visible()
    expect(
        page.get_by_text(re.compile(r"1 of the selected inquir(y|ies) is on legal hold and will be kept"))
    ).to_be_visible()
    shot(page, "confirm-delete")
    page.get_by_role("button", name="Delete 1").click()

    expect(page).to_have_url(ADMIN_HOME)
    expect(page.get_by_text("Deleted 1 inquiry. 1 inquiry on legal hold kept.")).to_be_visible()
    expect(row_with(page, "Dora Deleted")).to_have_count(0)
    expect(row_with(page, "Hanna Held")).to_have_count(1)
    shot(page, "after-delete")

    with page.expect_download() as download:
        page.get_by_role("button", name="Export CSV").click()
    assert re.fullmatch(r"sundown-inquiries-\d{4}-\d{2}-\d{2}\.csv", download.value.suggested_filename)
    raw = download.value.path().read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))))
    by_name = {row["name"]: row for row in rows}
    assert list(rows[0]) == [
        "id",
        "received_utc",
        "name",
        "email",
        "message",
        "form",
        "legal_hold",
        "hold_reason",
        "hold_by",
        "replies",
        "last_reply_utc",
        "notes",
    ]
    assert by_name["Hanna Held"]["legal_hold"] == "yes"
    assert by_name["Hanna Held"]["hold_reason"] == "Open legal claim 2026-17"
    assert by_name["Hanna Held"]["hold_by"] == "Hal Admin"
    assert by_name["Kai Kept"]["message"] == '\'=HYPERLINK("x")'  # no formula for spreadsheets
    assert "Dora Deleted" not in by_name


def test_login_without_user_verification_fails_readably_and_starts_no_login(server, page, authenticator, shot):
    enroll(page, server.quick_invite_link("Uma Admin"))
    log_out(page)
    authenticator.set_user_verified(False)

    page.get_by_role("button", name="Log in with a passkey").click()
    expect(page.get_by_text("The passkey request was cancelled or timed out. You can try again.")).to_be_visible()
    expect(page).to_have_url(LOGIN_PAGE)
    expect(page.get_by_role("button", name="Log in with a passkey")).to_be_enabled()
    shot(page, "login-refused")

    expect_logged_out(page)
    assert login_count(server, "Uma Admin") == 0
    assert not [c for c in page.context.cookies() if c["name"] == "sundown_admin"]


def test_second_passkey_renamed_first_removed_logs_out_its_logins(server, page, authenticator, new_context, shot):
    enroll(page, server.quick_invite_link("Kim Admin"))
    other = new_context().new_page()
    copy_passkeys(authenticator, Authenticator(other))
    log_in(other)  # a login made by the first passkey, in another browser

    authenticator.replace()  # this browser now holds a new, empty security key
    page.goto("/admin/account")
    page.get_by_role("button", name="Add a passkey").click()
    names = page.get_by_label("Name", exact=True)
    expect(names).to_have_count(2)
    shot(page, "two-passkeys")
    names.nth(1).fill("Blue security key")
    passkeys_table(page).nth(1).get_by_role("button", name="Rename").click()
    expect(page.get_by_text("Passkey renamed.")).to_be_visible()
    expect(names.nth(1)).to_have_value("Blue security key")

    log_out(page)
    log_in(page)  # with the new passkey: the only one this browser has
    page.goto("/admin/account")
    expect(logins_table(page)).to_have_count(2)
    passkeys_table(page).nth(0).get_by_role("button", name="Remove").click()

    expect(page.get_by_text("Passkey removed; the browsers it logged in were logged out.")).to_be_visible()
    expect(names).to_have_count(1)
    expect(names.first).to_have_value("Blue security key")
    expect(page.get_by_text("Your only passkey")).to_be_visible()
    expect(logins_table(page)).to_have_count(1)
    shot(page, "first-passkey-removed")

    expect_logged_out(other)
    shot(other, "other-browser-logged-out")
    assert passkey_count(server, "Kim Admin") == 1
    assert login_count(server, "Kim Admin") == 1


# --- Reading the pages and the database ---------------------------------------


def section(page, heading: str):
    """The card whose heading is ``heading``."""
    return page.locator("section").filter(has=page.get_by_role("heading", name=heading))


def logins_table(page):
    """The body rows of the "Where you are logged in" table."""
    return section(page, "Where you are logged in").locator("tbody tr")


def passkeys_table(page):
    """The body rows of the "Your passkeys" table."""
    return section(page, "Your passkeys").locator("tbody tr")


def login_count(server, admin_name: str) -> int:
    """How many login rows the admin has."""
    return _count(server, AdminLogin, admin_name)


def passkey_count(server, admin_name: str) -> int:
    """How many passkeys the admin has."""
    return _count(server, Passkey, admin_name)


def _count(server, model, admin_name: str) -> int:
    with server.engine.connect() as conn:
        return conn.scalar(
            select(func.count())
            .select_from(model)
            .join(Admin, Admin.id == model.admin_id)
            .where(Admin.name == admin_name)
        )
