"""Journey: a form on the owner's own site, another origin, in a real Chromium.

A static host page on another origin (127.0.0.1 where Sundown is
localhost, each on its own port) sends the form with the script, under a
strict CSP of its own (no ``unsafe-inline``), and as plain HTML with
JavaScript off; both land in the inbox of the right form (the plain one
without a proof-of-work, from a listed site: a person). A page on an origin
the form does not list gets nothing stored, and the visitor's text kept. axe-core passes on the embedded form.
The pasted block and the refused site's page are walked in English, Japanese and Chinese, at a desktop's
1280 px and a phone's 390 px.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from axe_playwright_python.sync_playwright import Axe
from flask_babel import force_locale, gettext
from playwright.sync_api import expect
from sqlalchemy import delete, select

from app.core.db import get_session
from app.forms import embed
from app.forms import store as form_store
from app.forms.fields import CONTACT_FIELDS, Choice, Field, dump
from app.models import Attachment, Form, Inquiry
from app.web import public
from tests.e2e.steps import FILL_SECONDS

HOST_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>A shop</title>
<link rel="stylesheet" href="{base}/embed.css"></head>
<body><main><h1>Contact the shop</h1>{body}</main></body></html>"""


# The journeys' languages (the form's, and the browser's Accept-Language) and widths (a desktop's, a phone's).
LANGUAGES = {"en": "en-US", "ja": "ja-JP", "zh_Hans": "zh-CN"}  # the catalog's name: the browser's
OWN_WORDS = ("Your name", "Email address", "Message", "Phone")
WIDTHS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


def words(server, locale: str, **texts: str) -> dict[str, str]:
    """Sundown's own words the journey looks for, from the server app's catalog in ``locale``."""
    with server.app().test_request_context("/"), force_locale(locale):
        said = {key: str(text) for key, text in embed.EMBED_TEXTS.items()}
        labels = {text: gettext(text) for text in OWN_WORDS}  # the owner's words that the catalog translates
        return {**said, **labels, "unlisted": str(public.UNLISTED).format(site=texts.get("site", ""))}


def host_page(server, body: str, lang: str = "en") -> str:
    """A page of the owner's site holding ``body``, in ``lang``."""
    tag = lang.replace("_", "-")
    return HOST_PAGE.format(base=server.base_url, body=body).replace('<html lang="en">', f'<html lang="{tag}">')


class HostSite:
    """A static site on its own origin: ``pages`` by path, each sent with the CSP a host page documents."""

    def __init__(self, pages: dict[str, str], base: str):
        self.pages, self.base = pages, base
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the name http.server calls
                if self.path == "/favicon.ico":
                    self.send_response(204)
                    self.end_headers()
                    return
                page = site.pages.get(self.path.split("?")[0])
                body = (page or "not here").encode()
                self.send_response(200 if page else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header(
                    "Content-Security-Policy",
                    f"default-src 'self'; script-src {site.base}; "
                    f"connect-src {site.base}; style-src {site.base}; form-action 'self' {site.base}",
                )
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @contextmanager
    def running(self):
        self.thread.start()
        try:
            yield self
        finally:
            self.httpd.shutdown()
            self.httpd.server_close()


def add_form(server, slug: str, origins: list[str], thanks: str | None = None, fields=CONTACT_FIELDS) -> int:
    """Form ``slug`` afresh (an earlier test's, with its inquiries, removed), listing ``origins``."""
    with server.app().app_context():
        session = get_session(write=True)  # the server's cleanup may be writing: wait for the lock
        for old in session.scalars(select(Form).where(Form.slug == slug)):
            session.execute(delete(Inquiry).where(Inquiry.form_id == old.id))
            session.delete(old)
        session.flush()
        now = datetime.now(UTC)
        form = Form(
            slug=slug,
            title={"en": "Write to the shop"},
            description={},
            fields=dump(fields),
            email_field="email",
            enabled=True,
            allowed_origins=origins,
            thanks_url=thanks,
            created_at=now,
            updated_at=now,
        )
        session.add(form)
        session.commit()
    time.sleep(form_store.FRESH_FOR + 0.2)  # the server's processes read a changed form within FRESH_FOR
    return form.id


def assert_accessible(page, page_problems) -> None:
    """axe-core finds nothing; it applies inline styles of its own, which the host's CSP rightly blocks,
    so the CSP messages are checked (none) before it runs, and its own are allowed."""
    assert not [each for each in page_problems.seen if "Content Security Policy" in each]
    page_problems.allow(r"Applying inline style violates the following Content Security Policy")
    page_problems.allow(r"Couldn't load preload assets")
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_snapshot()


def stored(server, form_id: int) -> list[tuple]:
    with server.engine.connect() as connection:
        return [
            tuple(row)
            for row in connection.execute(
                select(Inquiry.name, Inquiry.status, Inquiry.origin)
                .where(Inquiry.form_id == form_id)
                .order_by(Inquiry.id)
            )
        ]


@pytest.fixture
def host(server):
    script = (
        f'<div data-sundown-form="shop"></div><script src="{server.base_url}/embed.js" data-form="shop" defer></script>'
    )
    pages = {
        "/script.html": HOST_PAGE.format(base=server.base_url, body=script),
        "/thanks.html": HOST_PAGE.format(base=server.base_url, body="<p>Thanks from the shop.</p>"),
    }
    site = HostSite(pages, server.base_url)
    plain = f'''<form action="{server.base_url}/f/shop" method="post">
      <label for="n">Your name</label><input id="n" name="name">
      <label for="e">Email address</label><input id="e" name="email" type="email">
      <label for="m">Message</label><textarea id="m" name="message"></textarea>
      <input name="website" hidden><button type="submit">Send</button></form>'''
    site.pages["/plain.html"] = HOST_PAGE.format(base=server.base_url, body=plain)
    with site.running():
        yield site


def test_the_script_renders_the_form_on_another_site_and_sends_it_there(server, host, new_context, page_problems):
    form_id = add_form(server, "shop", [host.origin], thanks=f"{host.origin}/thanks.html")
    page = new_context().new_page()
    page.goto(f"{host.origin}/script.html")
    expect(page.get_by_role("heading", name="Write to the shop")).to_be_visible()
    assert_accessible(page, page_problems)
    page.get_by_label("Your name").fill("Sara Shopper")
    page.get_by_label("Email address").fill("sara@example.com")
    page.get_by_label("Message").fill("Do you ship to Oslo?")
    expect(page.locator("form[data-spam-check='solved']")).to_have_count(1)
    page.get_by_role("button", name="Send inquiry").click()
    expect(page.get_by_role("status")).to_contain_text("Thank you.")
    assert page.context.cookies() == []  # nothing set, on either site
    assert stored(server, form_id) == [("Sara Shopper", "inbox", host.origin)]


def test_errors_show_next_to_their_fields_on_the_host_page(server, host, new_context, page_problems):
    add_form(server, "shop", [host.origin])
    page_problems.expect_status(422, "/api/forms/shop/inquiries")
    page = new_context().new_page()
    page.goto(f"{host.origin}/script.html")
    page.get_by_label("Your name").fill("Ned")
    page.get_by_label("Email address").fill("not an address")
    # Sending waits for the spam check (up to 15 s): solved first, as by a person typing, the answer is prompt.
    expect(page.locator("form[data-spam-check='solved']")).to_have_count(1)
    page.get_by_role("button", name="Send inquiry").click()
    expect(page.get_by_role("alert")).to_be_visible()
    expect(page.get_by_label("Email address")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Message")).to_have_attribute("aria-invalid", "true")
    assert_accessible(page, page_problems)


def test_the_plain_form_works_without_javascript_and_goes_to_the_shops_thank_you_page(server, host, new_context):
    form_id = add_form(server, "shop", [host.origin], thanks=f"{host.origin}/thanks.html")
    page = new_context(java_script_enabled=False).new_page()
    page.goto(f"{host.origin}/plain.html")
    page.get_by_label("Your name").fill("Paul Plain")
    page.get_by_label("Email address").fill("paul@example.com")
    page.get_by_label("Message").fill("No scripts here.")
    page.wait_for_timeout(FILL_SECONDS * 1000)
    page.get_by_role("button", name="Send").click()
    page.wait_for_url(f"{host.origin}/thanks.html")
    assert stored(server, form_id) == [("Paul Plain", "inbox", host.origin)]  # a person, though no proof-of-work


@pytest.mark.parametrize("width", sorted(WIDTHS))
@pytest.mark.parametrize("locale", sorted(LANGUAGES))
def test_a_site_the_form_does_not_list_stores_nothing(server, host, new_context, page_problems, locale, width):
    form_id = add_form(server, "shop", ["https://www.example.org"])
    said = words(server, locale, site=host.origin)
    page_problems.allow(r"(CORS|Access-Control|Failed to load resource|ERR_FAILED)")
    page_problems.expect_status(403, "/f/shop")
    scripted = new_context().new_page()
    scripted.goto(f"{host.origin}/script.html")
    scripted.wait_for_timeout(1500)
    expect(scripted.get_by_role("button", name="Send inquiry")).to_have_count(0)  # the description is refused
    # The plain form has no script: its post is the same with JavaScript on, which axe-core needs.
    plain = new_context(locale=LANGUAGES[locale], viewport=WIDTHS[width]).new_page()
    plain.goto(f"{host.origin}/plain.html")
    plain.get_by_label("Your name").fill("Eve Elsewhere")
    plain.get_by_label("Email address").fill("eve@example.com")
    plain.get_by_label("Message").fill("Let me in.")
    plain.get_by_role("button", name="Send").click()
    expect(plain.locator("html")).to_have_attribute("lang", locale.replace("_", "-"))
    expect(plain.locator("body")).to_contain_text(said["unlisted"])
    expect(plain.locator("textarea[name=message]")).to_have_value("Let me in.")  # kept, to send from Sundown's page
    assert_accessible(plain, page_problems)
    assert stored(server, form_id) == []


FILE_FIELDS = (*CONTACT_FIELDS, Field("files", "file", {"en": "Photos of the item"}, maximum=2))


def files_of(server, form_id: int) -> list[tuple]:
    with server.engine.connect() as connection:
        return [
            tuple(row)
            for row in connection.execute(
                select(Attachment.name, Attachment.content_type, Attachment.size)
                .join(Inquiry, Inquiry.id == Attachment.inquiry_id)
                .where(Inquiry.form_id == form_id)
                .order_by(Attachment.id)
            )
        ]


def test_files_go_with_the_script_and_with_plain_html_without_javascript(
    server, host, new_context, page_problems, tmp_path
):
    form_id = add_form(server, "shop", [host.origin], thanks=f"{host.origin}/thanks.html", fields=FILE_FIELDS)
    photo = tmp_path / "broken lamp.txt"
    photo.write_text("the lamp's base is cracked\n" * 20_000)  # 540 KB
    page = new_context().new_page()
    page.goto(f"{host.origin}/script.html")
    page.get_by_label("Your name").fill("Sara Shopper")
    page.get_by_label("Email address").fill("sara@example.com")
    page.get_by_label("Message").fill("It arrived broken.")
    page.get_by_label("Photos of the item").set_input_files([str(photo)])
    expect(page.get_by_text("Up to 2 files, 10 MB in all")).to_be_visible()
    assert_accessible(page, page_problems)
    expect(page.locator("form[data-spam-check='solved']")).to_have_count(1)
    page.get_by_role("button", name="Send inquiry").click()
    expect(page.get_by_role("status")).to_contain_text("Thank you.")
    assert files_of(server, form_id) == [("broken lamp.txt", "text/plain", photo.stat().st_size)]

    host.pages["/plain-files.html"] = HOST_PAGE.format(
        base=server.base_url,
        body=f'''
      <form action="{server.base_url}/f/shop" method="post" enctype="multipart/form-data">
      <label for="n">Your name</label><input id="n" name="name">
      <label for="e">Email address</label><input id="e" name="email" type="email">
      <label for="m">Message</label><textarea id="m" name="message"></textarea>
      <label for="f">Photos</label><input id="f" name="files" type="file" multiple>
      <button type="submit">Send</button></form>''',
    )
    plain = new_context(java_script_enabled=False).new_page()
    plain.goto(f"{host.origin}/plain-files.html")
    plain.get_by_label("Your name").fill("Paul Plain")
    plain.get_by_label("Email address").fill("paul@example.com")
    plain.get_by_label("Message").fill("No scripts here.")
    plain.get_by_label("Photos").set_input_files([str(photo)])
    plain.wait_for_timeout(FILL_SECONDS * 1000)
    plain.get_by_role("button", name="Send").click()
    plain.wait_for_url(f"{host.origin}/thanks.html")
    assert [name for name, *_rest in files_of(server, form_id)] == ["broken lamp.txt", "broken lamp.txt"]


EVERY_TYPE = (
    Field("name", "text", {"en": "Your name"}, required=True, help={"en": "As you like to be called"}),
    Field("email", "email", {"en": "Email address"}, required=True),
    Field("message", "textarea", {"en": "Message"}, required=True),
    Field("guests", "number", {"en": "Guests"}, minimum=1, maximum=20),
    Field("phone", "tel", {"en": "Phone"}),
    Field("day", "date", {"en": "Day"}),
    Field(
        "room",
        "select",
        {"en": "Room"},
        required=True,
        choices=(Choice("small", {"en": "Small room"}), Choice("large", {"en": "Large room"})),
    ),
    Field(
        "time", "radio", {"en": "Time"}, choices=(Choice("am", {"en": "Morning"}), Choice("pm", {"en": "Afternoon"}))
    ),
    Field(
        "extras", "checkboxes", {"en": "Extras"}, choices=(Choice("tea", {"en": "Tea"}), Choice("cake", {"en": "Cake"}))
    ),
    Field("terms", "consent", {"en": "I agree to the terms"}),
    Field("campaign", "hidden", {"en": "Campaign"}, default="spring"),
    Field("files", "file", {"en": "Plans"}, maximum=3),
)


def pasted_block(server, locale: str = "en") -> str:
    """The block the form's page offers in ``locale``, rendered by the server's app as the page renders it."""
    with server.app().test_request_context("/"):
        return embed.snippet(form_store.page_form("shop"), server.base_url, locale)


def fill_every_type(page, photo, label=lambda text: text) -> None:
    """Fill in every field, found by its ``label`` (the owner's words, shown translated where Sundown's
    catalog has them: "Your name", "Message")."""
    page.get_by_label(label("Your name")).fill("Bea Booker")
    page.get_by_label(label("Email address")).fill("bea@example.com")
    page.get_by_label(label("Message")).fill("A room for four, please.")
    page.get_by_label(label("Guests")).fill("4")
    page.get_by_label(label("Phone")).fill("+81 3 1234 5678")
    page.get_by_label(label("Day")).fill("2027-03-05")
    page.get_by_label(label("Room")).select_option("large")
    page.get_by_label(label("Afternoon")).check()
    page.get_by_label(label("Tea")).check()
    page.get_by_label(label("Cake")).check()
    page.get_by_label(label("I agree to the terms")).check()
    page.get_by_label(label("Plans")).set_input_files([str(photo), str(photo)])


@pytest.mark.parametrize("width", sorted(WIDTHS))
@pytest.mark.parametrize("locale", sorted(LANGUAGES))
@pytest.mark.parametrize("javascript", [False, True])
def test_the_pasted_block_sends_every_field_type_with_files(
    server, host, new_context, page_problems, tmp_path, javascript, locale, width
):
    form_id = add_form(server, "shop", [host.origin], thanks=f"{host.origin}/thanks.html", fields=EVERY_TYPE)
    said = words(server, locale)
    host.pages["/pasted.html"] = host_page(server, pasted_block(server, locale), locale)
    photo = tmp_path / "plan.txt"
    photo.write_text("a plan of the room\n" * 100)
    options = {"java_script_enabled": javascript, "locale": LANGUAGES[locale], "viewport": WIDTHS[width]}
    page = new_context(**options).new_page()
    page.goto(f"{host.origin}/pasted.html")
    fill_every_type(page, photo, lambda text: said.get(text, text))
    page.wait_for_timeout(FILL_SECONDS * 1000)
    if javascript:  # axe-core stalls on a page with JavaScript off (docs: NOTES); the same form is checked here
        expect(page.locator("form[data-spam-check='solved']")).to_have_count(1)
        assert_accessible(page, page_problems)
        page.get_by_role("button", name=said["send"]).click()
        expect(page.get_by_role("status")).to_contain_text(said["thanks"])
    else:
        page.get_by_role("button", name=said["send"]).click()
        page.wait_for_url(f"{host.origin}/thanks.html")
    assert stored(server, form_id) == [("Bea Booker", "inbox", host.origin)]
    assert [name for name, *_rest in files_of(server, form_id)] == ["plan.txt", "plan.txt"]
    with server.engine.connect() as connection:
        answers = connection.execute(select(Inquiry.answers).where(Inquiry.form_id == form_id)).scalar_one()
    values = {entry["key"]: entry.get("value") for entry in answers}
    assert (
        values["guests"],
        values["room"],
        values["time"],
        values["extras"],
        values["terms"],
        values["campaign"],
        values["day"],
    ) == ("4", "large", "pm", ["tea", "cake"], True, "spring", "2027-03-05")
