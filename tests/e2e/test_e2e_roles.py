"""Journey: an owner invites a responder given one form; the responder enrols and sees only that form's
inquiries, in the inbox, a search and the CSV export.

In a Chromium speaking English, Japanese and Chinese (its words from the app's own catalogs). Every page
of the journey fits 1280×800 and 390×844 with no sideways scroll, and axe-core finds no violation on it.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect
from sqlalchemy import select

from app.core import db
from app.core.db import get_session
from app.models import Form
from tests.e2e.conftest import Authenticator
from tests.e2e.steps import ADMIN_HOME, OWNER_HOME, catalog, check_widths, row_with
from tests.factories import add_inquiries, inquiry, wall_clock

# The browser's locale, and the app's language it asks for (the catalog's folder, the page's lang).
LANGUAGES = {"en-US": ("en", "en"), "ja-JP": ("ja", "ja"), "zh-CN": ("zh_Hans", "zh-Hans")}


def arrange(server, tag: str) -> dict[str, int]:
    """The quote form (made once per server) beside contact, and an inquiry about a roof on each, named with
    ``tag``: their ids by form.

    The live server writes to the same SQLite file (its first requests claim a cleanup): each write here
    begins as a write (``db.transaction(write=True)``, or a first statement that writes), never as a read
    that later writes, which SQLite refuses at once when another connection wrote in between."""
    with server.app().app_context():
        with db.transaction(write=True) as session:
            quote_id = session.scalar(select(Form.id).where(Form.slug == "quote"))
            if quote_id is None:
                contact = session.get(Form, 1)
                fields, email_field = contact.fields, contact.email_field
                quote = Form(slug="quote", title={"en": "Quote"}, fields=fields, email_field=email_field)
                session.add(quote)
                session.flush()
                quote_id = quote.id
        contact_id, quote_id = add_inquiries(
            get_session(),
            [
                inquiry(wall_clock, 0.1, name=f"Carla {tag}", email="carla@example.com", message="Call me: the roof"),
                inquiry(wall_clock, 0.1, name=f"Quentin {tag}", form_id=quote_id, message="Quote the roof, please"),
            ],
        )
    return {"contact": contact_id, "quote": quote_id}


@pytest.mark.parametrize("locale", sorted(LANGUAGES))
def test_an_owner_invites_a_responder_who_sees_only_their_form(server, new_context, shot, page_problems, locale):
    language, lang = LANGUAGES[locale]
    words = catalog(language)
    say = words.gettext
    made = arrange(server, locale)
    problems: list[str] = []

    owner = new_context(locale=locale).new_page()
    Authenticator(owner)
    owner.goto(server.quick_invite_link(f"Olga {locale}"))
    owner.get_by_role("button", name=say("Create passkey")).click()
    expect(owner).to_have_url(OWNER_HOME)  # an owner lands on the Overview
    owner.goto("/admin/account")  # just enrolled: the passkey was verified a moment ago
    expect(owner.locator("html")).to_have_attribute("lang", lang)
    problems += check_widths(owner, shot, f"{locale}-owner-account")
    owner.get_by_label(say("Their name")).fill(f"Rita {locale}")
    owner.get_by_role("radio", name=words.pgettext("admin role", "Responder")).check()
    owner.get_by_role("checkbox", name=re.compile(r"\(quote\)")).check()
    owner.get_by_role("button", name=say("Create a one-time link")).click()
    expect(owner.locator("#invite-role")).to_contain_text("quote")
    problems += check_widths(owner, shot, f"{locale}-invite-link")
    link = owner.locator("#invite-url").input_value()

    responder = new_context(locale=locale).new_page()
    Authenticator(responder)
    responder.goto(link)
    problems += check_widths(responder, shot, f"{locale}-enroll")
    responder.get_by_role("button", name=say("Create passkey")).click()
    expect(responder).to_have_url(ADMIN_HOME)
    expect(row_with(responder, f"Quentin {locale}")).to_be_visible()
    expect(responder.get_by_text(f"Carla {locale}")).to_have_count(0)
    problems += check_widths(responder, shot, f"{locale}-responder-inbox")

    responder.get_by_label(say("Search name, email or message")).fill("roof")
    responder.get_by_role("button", name=say("Search"), exact=True).click()
    expect(responder).to_have_url(re.compile(r"q=roof"))
    expect(row_with(responder, f"Quentin {locale}")).to_be_visible()
    expect(responder.get_by_text(f"Carla {locale}")).to_have_count(0)
    problems += check_widths(responder, shot, f"{locale}-responder-search")

    with responder.expect_download() as download:
        responder.get_by_role("button", name=say("Export CSV")).click()
    exported = Path(download.value.path()).read_text(encoding="utf-8-sig")
    names = [row["name"] for row in csv.DictReader(exported.splitlines())]
    assert f"Quentin {locale}" in names and not [name for name in names if name.startswith("Carla")], names

    other = f"/admin/inquiries/{made['contact']}"
    page_problems.expect_status(404, other)
    assert responder.goto(other).status == 404  # not there for them
    assert not problems, "\n".join(problems)
