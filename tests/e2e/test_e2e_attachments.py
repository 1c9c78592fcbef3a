"""Journey: files sent with an inquiry, on its page in a real Chromium, in English, Japanese and Chinese.

A visitor attaches an image and a text file to the form page (JavaScript
on); the admin's page of that inquiry shows the image as an image, under
the page's CSP, and offers both files as downloads that arrive whole. The
page fits 1280×800 and 390×844 with no sideways scroll, and axe-core finds
no violation.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect
from sqlalchemy import delete, select

from app.core.db import get_session
from app.forms import store as form_store
from app.forms.fields import CONTACT_FIELDS, Field, dump
from app.models import Form, Inquiry
from tests.attachments.test_attachments import png
from tests.e2e.steps import FILL_SECONDS, assert_fits, enroll

SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
WORDS = {"en": "Files", "ja": "ファイル", "zh-Hans": "文件"}


def add_file_form(server) -> None:
    with server.app().app_context():
        session = get_session(write=True)
        for old in session.scalars(select(Form).where(Form.slug == "damage")):
            session.execute(delete(Inquiry).where(Inquiry.form_id == old.id))
            session.delete(old)
        now = datetime.now(UTC)
        session.add(
            Form(
                slug="damage",
                title={"en": "Report damage"},
                description={},
                email_field="email",
                fields=dump((*CONTACT_FIELDS, Field("files", "file", {"en": "Photos"}, maximum=3))),
                enabled=True,
                created_at=now,
                updated_at=now,
            )
        )
        session.commit()
    time.sleep(form_store.FRESH_FOR + 0.2)


def test_an_admin_sees_an_inquirys_image_and_downloads_its_files(
    server, page, authenticator, new_context, shot, tmp_path
):
    add_file_form(server)
    image, notes = tmp_path / "破損 photo.png", tmp_path / "notes.txt"
    image.write_bytes(png(64, 48))
    notes.write_text("Box dented on the left side.\n")
    visitor = new_context().new_page()
    visitor.goto(f"{server.base_url}/f/damage")
    visitor.get_by_label("Your name").fill("Dana Damage")
    visitor.get_by_label("Email address").fill("dana@example.com")
    visitor.get_by_label("Message").fill("The parcel arrived dented.")
    visitor.get_by_label("Photos").set_input_files([str(image), str(notes)])
    for size, viewport in SIZES.items():
        visitor.set_viewport_size(viewport)
        assert_fits(visitor)
        results = Axe().run(visitor)
        assert results.violations_count == 0, results.generate_snapshot()
        shot(visitor, f"form-with-files-{size}")
    visitor.wait_for_timeout(FILL_SECONDS * 1000)
    visitor.get_by_role("button", name="Send inquiry").click()
    visitor.wait_for_url(f"{server.base_url}/thanks")
    with server.app().app_context():
        row = get_session().scalar(select(Inquiry.id).where(Inquiry.name == "Dana Damage"))

    enroll(page, server.quick_invite_link("Fiona Files"))
    for locale, heading in WORDS.items():
        if locale != "en":
            page.goto(f"{server.base_url}/admin/account")
            page.locator("#locale").select_option(locale)
            page.locator("#locale").locator("xpath=ancestor::form").locator("button[type=submit]").click()
        page.goto(f"{server.base_url}/admin/inquiries/{row}")
        expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible()
        preview = page.locator("img.attachment-preview")
        expect(preview).to_have_count(1)
        page.wait_for_function("() => document.querySelector('img.attachment-preview').naturalWidth === 64")
        for size, viewport in SIZES.items():
            page.set_viewport_size(viewport)
            assert_fits(page)
            results = Axe().run(page)
            assert results.violations_count == 0, results.generate_snapshot()
            shot(page, f"{locale}-files-{size}")
    links = page.locator("ul.attachments a")
    for index, source in enumerate((image, notes)):
        with page.expect_download() as arrived:
            links.nth(index).click()
        download = arrived.value
        assert download.suggested_filename == source.name
        assert Path(download.path()).read_bytes() == source.read_bytes()
