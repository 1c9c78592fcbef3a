"""A form on the owner's site: the block to paste (one snippet for every field type), posts from sites the
form does not list, the services' field names (Formspree, Basin, Netlify), and floods that shed load."""

from __future__ import annotations

import io
import threading
from html.parser import HTMLParser

import pytest
from sqlalchemy import select

from app.models import Attachment, Form, Inquiry, RateLimit, RefusedSite
from tests.attachments.test_attachments import png
from tests.helpers import csrf_token, editor_post

SITE = "https://www.example.org"
EVERY_TYPE = [
    {"type": "text", "key": "name", "label-en": "Your name", "required": "1", "help-en": "As you like to be called"},
    {"type": "email", "key": "email", "label-en": "E-mail", "required": "1"},
    {"type": "textarea", "key": "message", "label-en": "Message", "required": "1", "max": "800"},
    {"type": "number", "key": "guests", "label-en": "Guests", "min": "1", "max": "20"},
    {"type": "tel", "key": "phone", "label-en": "Phone"},
    {"type": "url", "key": "site", "label-en": "Your site"},
    {"type": "date", "key": "day", "label-en": "Day"},
    {
        "type": "select",
        "key": "room",
        "label-en": "Room",
        "choices-en": "small | Small room\nlarge | Large room",
        "required": "1",
    },
    {"type": "radio", "key": "time", "label-en": "Time", "choices-en": "am | Morning\npm | Afternoon"},
    {"type": "checkboxes", "key": "extras", "label-en": "Extras", "choices-en": "tea\ncoffee"},
    {"type": "consent", "key": "terms", "label-en": "I agree to the terms"},
    {"type": "hidden", "key": "campaign", "label-en": "Campaign", "default": "spring"},
    {"type": "file", "key": "files", "label-en": "Plans", "max": "3"},
]
PERSON = {
    "name": "Hana Host",
    "email": "hana@example.com",
    "message": "We would like to book a room.",
    "room": "small",
    "terms": "yes",
}


@pytest.fixture
def booking(admin_client, query) -> int:
    data = editor_post(
        admin_client,
        "/admin/forms/new",
        EVERY_TYPE,
        slug="booking",
        allowed_origins=SITE,
        thanks_url=f"{SITE}/thanks.html",
    )
    assert admin_client.post("/admin/forms/new", data=data).status_code == 303
    return query(select(Form.id).where(Form.slug == "booking"))[0]


class Elements(HTMLParser):
    """Every start tag of a page, with its attributes, in order."""

    def __init__(self, html: str):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def named(self, name: str) -> list[dict]:
        return [attrs for tag, attrs in self.tags if attrs.get("name") == name]


def snippet_of(admin_client, form_id: int) -> str:
    page = admin_client.get(f"/admin/forms/{form_id}").get_data(as_text=True)
    start, end = page.index('<code id="snippet-block">') + len('<code id="snippet-block">'), page.index("</code>")
    block = page[start:end]
    assert page.index("snippet-block") < page.index('name="field_count"')  # at the top, before the editor
    return (
        block.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#34;", '"')
        .replace("&quot;", '"')
        .replace("&#39;", "'")
        .replace("&amp;", "&")
    )


def test_the_block_is_the_stylesheet_the_form_for_every_field_type_and_the_script(admin_client, booking):
    html = snippet_of(admin_client, booking)
    parsed = Elements(html)
    [form] = [attrs for tag, attrs in parsed.tags if tag == "form"]
    assert form["action"] == "http://localhost/f/booking" and form["method"] == "post"
    assert form["enctype"] == "multipart/form-data" and form["class"] == "sundown-form"
    assert ("link", {"rel": "stylesheet", "href": "http://localhost/embed.css"}) in parsed.tags
    assert ("script", {"src": "http://localhost/embed.js", "data-form": "booking", "defer": None}) in parsed.tags
    [files] = parsed.named("files")
    assert files["type"] == "file" and "multiple" in files and "maxlength" not in files
    assert "image/png" in files["accept"].split(",")
    [message] = parsed.named("message")
    assert message["maxlength"] == "800" and "required" in message
    [name] = parsed.named("name")
    assert name["aria-describedby"] == "sundown-booking-name-help" and 'id="sundown-booking-name-help"' in html
    assert "As you like to be called" in html and "autocomplete" in name
    assert "required" in parsed.named("room")[0]
    assert [attrs["value"] for tag, attrs in parsed.tags if tag == "option"] == ["", "small", "large"]
    assert [attrs["type"] for attrs in parsed.named("time")] == ["radio", "radio"]
    assert [attrs["type"] for attrs in parsed.named("extras")] == ["checkbox", "checkbox"]
    [guests] = parsed.named("guests")
    assert (guests["type"], float(guests["min"]), float(guests["max"])) == ("number", 1, 20)
    assert parsed.named("terms")[0]["type"] == "checkbox" and "required" in parsed.named("terms")[0]
    assert parsed.named("campaign")[0] == {"type": "hidden", "name": "campaign", "value": "spring"}
    assert parsed.named("website")[0]["tabindex"] == "-1"  # the honeypot, in a hidden block
    for attrs in parsed.named("name") + parsed.named("email") + parsed.named("day"):
        assert f'for="{attrs["id"]}"' in html  # every input has its label
    assert "style=" not in html and "<script>" not in html  # nothing inline: host pages' CSPs allow it


def test_the_pasted_block_posts_every_field_type_with_files_to_the_inbox(admin_client, client, booking, query):
    """What a browser without script sends from the pasted block, on a listed site: saved, files and all."""
    data = {
        **PERSON,
        "guests": "4",
        "phone": "+81 3 1234 5678",
        "site": "",
        "day": "2027-01-05",
        "time": "pm",
        "extras": ["tea", "coffee"],
        "campaign": "spring",
        "website": "",
        "files": [(io.BytesIO(png()), "plan.png"), (io.BytesIO(png()), "room.png")],
    }
    response = client.post("/f/booking", data=data, headers={"Origin": SITE}, content_type="multipart/form-data")
    assert response.status_code == 303 and response.headers["Location"] == f"{SITE}/thanks.html"
    [(status, inquiry_id)] = query.rows(select(Inquiry.status, Inquiry.id))
    assert status == "inbox"
    assert sorted(query(select(Attachment.name).where(Attachment.inquiry_id == inquiry_id))) == ["plan.png", "room.png"]


# --- a site the form does not list -------------------------------------------------------------------


def test_a_post_from_an_unlisted_site_keeps_the_text_and_offers_to_send_it_from_here(client, booking, query):
    response = client.post(
        "/f/booking", data={**PERSON, "budget": "about 300"}, headers={"Origin": "https://new-shop.example"}
    )
    page = response.get_data(as_text=True)
    assert response.status_code == 403 and "https://new-shop.example" in page
    assert "We would like to book a room." in page and "about 300" in page  # a field it does not know, too
    assert 'action="/f/booking"' in page and 'name="csrf_token"' in page  # send it from Sundown's own page
    assert query.count(Inquiry) == 0
    assert query.rows(select(RefusedSite.origin, RefusedSite.count)) == [("https://new-shop.example", 1)]
    data = {**PERSON, "budget": "about 300", "csrf_token": csrf_token(client, "/f/booking")}
    assert client.post("/f/booking", data=data).status_code == 303  # sent from here, it arrives
    assert query.count(Inquiry) == 1


def test_the_forms_page_lists_refused_sites_and_one_action_allows_one(admin_client, client, booking, query):
    for _ in range(2):
        client.post("/f/booking", data=PERSON, headers={"Origin": "https://new-shop.example"})
    page = admin_client.get(f"/admin/forms/{booking}").get_data(as_text=True)
    assert "new-shop.example" in page and "2 posts" in page
    data = {"origin": "https://new-shop.example", "csrf_token": csrf_token(admin_client, f"/admin/forms/{booking}")}
    assert admin_client.post(f"/admin/forms/{booking}/allow-site", data=data).status_code == 303
    assert query(select(Form.allowed_origins).where(Form.id == booking)) == [[SITE, "https://new-shop.example"]]
    assert query.count(RefusedSite) == 0
    response = client.post("/f/booking", data=PERSON, headers={"Origin": "https://new-shop.example"})
    assert response.status_code == 303 and query.count(Inquiry) == 1


def test_refused_sites_stay_bounded_and_count_against_the_client(app_config, make_app, booking, query):
    app_config["SUBMIT_RATE_LIMITS"] = "3/60,100/86400"
    client = make_app(app_config).test_client()
    for number in range(5):
        client.post("/f/booking", data=PERSON, headers={"Origin": f"https://s{number}.example"})
    assert query.count(RefusedSite) == 3  # past its own limit the client's posts are not recorded


# --- moving from Formspree, Basin or Netlify ----------------------------------------------------------


def test_a_formspree_form_keeps_its_names_next_subject_replyto_and_unknown_fields(client, booking, query):
    data = {
        **PERSON,
        "message": "From Formspree.",
        "_next": f"{SITE}/merci.html",
        "_subject": "New booking",
        "_replyto": "other@example.com",
        "_gotcha": "",
        "company": "Tea House",
    }
    response = client.post("/f/booking", data=data, headers={"Origin": SITE})
    assert response.status_code == 303 and response.headers["Location"] == f"{SITE}/merci.html"
    [row] = query(select(Inquiry))
    assert row.status == "inbox"
    kept = {entry["key"]: entry.get("value") for entry in row.answers}
    assert (kept["_subject"], kept["company"], kept["_replyto"]) == ("New booking", "Tea House", "other@example.com")
    assert "_next" not in kept and "_gotcha" not in kept


def test_next_elsewhere_than_a_listed_site_is_ignored(client, booking):
    response = client.post("/f/booking", data={**PERSON, "_next": "https://evil.test/"}, headers={"Origin": SITE})
    assert response.headers["Location"] == f"{SITE}/thanks.html"


def test_gotcha_is_a_honeypot(client, booking, query):
    response = client.post("/f/booking", data={**PERSON, "_gotcha": "bot"}, headers={"Origin": SITE})
    assert response.status_code == 303 and query.count(Inquiry) == 0


def test_replyto_is_the_address_of_a_form_without_one(admin_client, client, query):
    fields = [{"type": "textarea", "key": "message", "label-en": "Message", "required": "1"}]
    data = editor_post(admin_client, "/admin/forms/new", fields, slug="note", allowed_origins=SITE)
    assert admin_client.post("/admin/forms/new", data=data).status_code == 303
    client.post("/f/note", data={"message": "Hello", "_replyto": "Ada@Example.com"}, headers={"Origin": SITE})
    assert query(select(Inquiry.email)) == ["Ada@example.com"]


# --- floods shed load ---------------------------------------------------------------------------------


@pytest.fixture
def tight(app_config):
    app_config.update(SUBMIT_RATE_LIMITS="3/60,100/86400", SUBMIT_GLOBAL_RATE_LIMITS="5/60,100/86400")


def visitor(app, address: str):
    browser = app.test_client()
    browser.environ_base["REMOTE_ADDR"] = address
    return browser


def test_one_client_flooding_past_every_cap_leaves_another_able_to_submit(tight, app, booking, query):
    flood = visitor(app, "192.0.2.7")
    statuses = set()
    for number in range(40):
        honeypot = {"website": "x"} if number % 2 else {}
        files = {"files": [(io.BytesIO(b"MZ" + b"\0" * 100), "x.exe")]} if number % 3 == 0 else {}
        data = {**PERSON, **honeypot, **files}
        statuses.add(
            flood.post(
                "/f/booking", data=data, headers={"Origin": SITE}, content_type="multipart/form-data"
            ).status_code
        )
    assert 429 in statuses
    person = visitor(app, "198.51.100.20")
    response = person.post("/f/booking", data=PERSON, headers={"Origin": SITE})
    assert response.status_code == 303
    assert query(select(RateLimit.count).where(RateLimit.key.like("submit-all:60:%"))) == [1 + 1]  # stored only
    # (the flood stored one inquiry before its limit: its first post was a refused file, its second the honeypot)


def test_refused_uploads_count_toward_the_clients_limit(tight, app, booking):
    flood = visitor(app, "192.0.2.8")
    statuses = [
        flood.post(
            "/f/booking",
            data={**PERSON, "files": [(io.BytesIO(b"MZ" + b"\0" * 100), "x.exe")]},
            headers={"Origin": SITE},
            content_type="multipart/form-data",
        ).status_code
        for _ in range(4)
    ]
    assert statuses == [415, 415, 415, 415]
    assert flood.post("/f/booking", data=PERSON, headers={"Origin": SITE}).status_code == 429


@pytest.mark.parametrize(
    ("settings", "status"),
    [
        ({"SUBMIT_CLIENT_FILE_BYTES": 300 * 1024}, 413),
        ({"SUBMIT_FILE_BYTES": 300 * 1024}, 507),
        ({"ATTACHMENT_MIN_FREE_BYTES": 10**18}, 507),
    ],
)
def test_file_budgets_and_the_disk_floor_refuse_clearly_with_the_text_kept(
    app_config, make_app, booking, query, settings, status
):
    app_config.update(settings)
    client = make_app(app_config).test_client()
    big = png() + b"\0" * (200 * 1024)  # under the test client's 500 KB, past which it spools the body to a file
    if status == 413 or "SUBMIT_FILE_BYTES" in settings:  # the first fits the day's budget, the second not
        first = client.post(
            "/f/booking",
            data={**PERSON, "files": [(io.BytesIO(big), "a.png")]},
            headers={"Origin": SITE},
            content_type="multipart/form-data",
        )
        assert first.status_code == 303
    response = client.post(
        "/f/booking",
        data={**PERSON, "message": "Kept for you.", "files": [(io.BytesIO(big), "b.png")]},
        headers={"Origin": SITE},
        content_type="multipart/form-data",
    )
    page = response.get_data(as_text=True)
    assert response.status_code == status and "Kept for you." in page and "without the files" in page
    assert client.post("/f/booking", data=PERSON, headers={"Origin": SITE}).status_code == 303  # text alone


def test_a_file_budget_beyond_the_counts_range_is_as_good_as_none(app_config, make_app, booking, query):
    """Budgets are counted in KiB in an INTEGER: 2**50 bytes is 2**40 KiB, which PostgreSQL refused as a
    bound parameter ("integer out of range": every upload a 503)."""
    app_config.update({"SUBMIT_CLIENT_FILE_BYTES": 2**50, "SUBMIT_FILE_BYTES": 2**50})
    client = make_app(app_config).test_client()
    response = client.post(
        "/f/booking",
        data={**PERSON, "files": [(io.BytesIO(png()), "a.png")]},
        headers={"Origin": SITE},
        content_type="multipart/form-data",
    )
    assert response.status_code == 303
    assert query(select(RateLimit.count).where(RateLimit.key.like("file-kib:%"))) == [1, 1]


@pytest.mark.parametrize(("setting", "refused"), [("SUBMIT_CLIENT_FILE_BYTES", 413), ("SUBMIT_FILE_BYTES", 507)])
def test_concurrent_uploads_never_pass_a_days_budget_together(app_config, make_app, booking, query, setting, refused):
    app_config[setting] = 1000 * 1024  # four of the uploads below fit, the fifth not
    app = make_app(app_config)
    big = png() + b"\0" * (200 * 1024)
    per_client = setting == "SUBMIT_CLIENT_FILE_BYTES"
    start, statuses = threading.Barrier(10), []

    def upload(number: int) -> None:
        address = "192.0.2.1" if per_client else f"192.0.2.{number + 1}"
        client = app.test_client()
        start.wait(30)
        response = client.post(
            "/f/booking",
            environ_base={"REMOTE_ADDR": address},
            data={**PERSON, "files": [(io.BytesIO(big), f"{number}.png")]},
            headers={"Origin": SITE},
            content_type="multipart/form-data",
        )
        statuses.append(response.status_code)

    threads = [threading.Thread(target=upload, args=(number,)) for number in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(statuses) == [303] * 4 + [refused] * 6
    assert sum(query(select(Attachment.size))) <= 1000 * 1024
