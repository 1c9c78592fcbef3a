"""Forms on the owner's site (app/forms/embed.py): allowed origins, plain HTML posts, the JSON API with CORS."""

from __future__ import annotations

import pytest
from sqlalchemy import select, update

from app.forms import embed
from app.models import Form, Inquiry
from tests.helpers import csrf_token, editor_post, solution

SITE = "https://www.example.org"
FIELDS = [
    {"type": "text", "key": "name", "label-en": "Your name", "required": "1", "label-ja": "お名前"},
    {"type": "email", "key": "email", "label-en": "Work address", "required": "1"},
    {"type": "textarea", "key": "message", "label-en": "Message", "required": "1"},
]
ANSWERS = {"name": "Hana Host", "email": "hana@example.com", "message": "From the shop page."}


@pytest.fixture
def quote(admin_client, query) -> int:
    data = editor_post(
        admin_client,
        "/admin/forms/new",
        FIELDS,
        allowed_origins=f"{SITE}\nhttps://*.shop.example",
        thanks_url=f"{SITE}/thanks.html",
    )
    assert admin_client.post("/admin/forms/new", data=data).status_code == 303
    return query(select(Form.id).where(Form.slug == "quote"))[0]


@pytest.mark.parametrize(
    "rule, origin, allowed",
    [
        ("https://www.example.org", "https://www.example.org", True),
        ("https://www.example.org", "https://www.example.org:443", True),
        ("https://www.example.org", "http://www.example.org", False),
        ("https://www.example.org", "https://example.org", False),
        ("https://www.example.org", "https://www.example.org.evil.test", False),
        ("https://*.example.org", "https://a.b.example.org", True),
        ("https://*.example.org", "https://example.org", False),
        ("https://*.example.org", "https://evilexample.org", False),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080", True),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8081", False),
    ],
)
def test_an_origin_matches_only_its_rule(rule, origin, allowed):
    assert embed.matches(embed.parse_rule(rule), origin) is allowed


@pytest.mark.parametrize(
    "raw",
    [
        "www.example.org",
        "https://example.org/path",
        "ftp://example.org",
        "https://*",
        "https://a.*.example.org",
        "https://user@example.org",
        "https://x:99999",
    ],
)
def test_a_bad_origin_rule_is_refused(raw):
    with pytest.raises(ValueError):
        embed.parse_rule(raw)


def test_a_plain_html_post_from_an_allowed_site_needs_no_token_and_goes_to_its_thank_you_page(client, quote, query):
    response = client.post(
        "/f/quote",
        data={**ANSWERS, "thanks_url": "https://evil.test/", "next": "//evil.test"},
        headers={"Origin": SITE},
    )
    assert response.status_code == 303 and response.headers["Location"] == f"{SITE}/thanks.html"
    [row] = query(select(Inquiry))
    # No proof of work, but from a listed site with one link: the inbox.
    assert (row.name, row.origin, row.form_id, row.status) == ("Hana Host", SITE, quote, "inbox")
    assert "thanks_url: https://evil.test/" in row.message  # a field the form does not know, kept


@pytest.mark.parametrize(
    "stored",
    [
        f"{SITE}/thanks\nhtml",
        f"{SITE}/thanks\r\nSet-Cookie: a=b",
        f"https://{'a' * 64}.shop.example/",
        "https://www.example.org:99999/",
    ],
)
def test_a_stored_thank_you_address_no_redirect_can_carry_is_ignored_with_a_warning(
    client, quote, query, caplog, stored
):
    query.using(
        lambda session: (
            session.execute(update(Form).where(Form.id == quote).values(thanks_url=stored)),
            session.commit(),
        )
    )
    response = client.post("/f/quote", data=ANSWERS, headers={"Origin": SITE})
    assert response.status_code == 303 and response.headers["Location"] == "/thanks"
    assert query.count(Inquiry) == 1
    assert "form quote: its thank-you address cannot be redirected to" in caplog.text


def test_a_browser_that_sends_only_a_referer_is_judged_by_it(client, quote, query):
    response = client.post("/f/quote", data=ANSWERS, headers={"Referer": "https://a.shop.example/contact?x=1"})
    assert response.status_code == 303
    assert query(select(Inquiry.origin)) == ["https://a.shop.example"]


def test_another_site_is_refused_and_nothing_is_stored(client, quote, query):
    response = client.post("/f/quote", data=ANSWERS, headers={"Origin": "https://evil.test"})
    page = response.get_data(as_text=True)
    assert response.status_code == 403 and "is not one of the sites this form takes inquiries from" in page
    assert "From the shop page." in page  # the visitor's text is kept
    json = client.post("/api/forms/quote/inquiries", json=ANSWERS, headers={"Origin": "https://evil.test"})
    assert json.status_code == 403 and "Access-Control-Allow-Origin" not in json.headers
    assert query.count(Inquiry) == 0


def test_sundowns_own_pages_keep_the_csrf_token(client, quote, query):
    assert client.post("/f/quote", data=ANSWERS, headers={"Origin": "http://localhost"}).status_code == 400
    data = {**ANSWERS, "csrf_token": csrf_token(client, "/f/quote")}
    response = client.post("/f/quote", data=data, headers={"Origin": "http://localhost"})
    assert response.status_code == 303 and response.headers["Location"] == "/thanks"  # Sundown's own page
    assert query(select(Inquiry.origin)) == [None]


def test_an_invalid_post_from_a_site_shows_sundowns_page_with_the_errors_the_text_and_a_way_back(client, quote):
    response = client.post(
        "/f/quote", data={**ANSWERS, "email": "nope"}, headers={"Origin": SITE, "Referer": f"{SITE}/contact.html"}
    )
    page = response.get_data(as_text=True)
    assert response.status_code == 422 and "From the shop page." in page and 'aria-invalid="true"' in page
    assert f'href="{SITE}/contact.html"' in page


def test_the_json_api_answers_cors_for_an_allowed_site_only(client, quote, query):
    preflight = client.options(
        "/api/forms/quote/inquiries",
        headers={
            "Origin": SITE,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert preflight.headers["Access-Control-Allow-Origin"] == SITE
    assert "POST" in preflight.headers["Access-Control-Allow-Methods"]
    assert preflight.headers["Access-Control-Allow-Headers"] == "Content-Type"
    assert "Access-Control-Allow-Credentials" not in preflight.headers
    refused = client.options(
        "/api/forms/quote/inquiries", headers={"Origin": "https://evil.test", "Access-Control-Request-Method": "POST"}
    )
    assert "Access-Control-Allow-Origin" not in refused.headers
    sent = client.post(
        "/api/forms/quote/inquiries", json={**ANSWERS, "altcha": solution(client)}, headers={"Origin": SITE}
    )
    assert sent.status_code == 201 and sent.headers["Access-Control-Allow-Origin"] == SITE
    assert "Origin" in sent.headers["Vary"]
    assert query.rows(select(Inquiry.status, Inquiry.origin)) == [("inbox", SITE)]
    own = client.post("/api/inquiries", json=ANSWERS, headers={"Origin": SITE})
    assert own.status_code == 403  # the site's own form does not list it


def test_the_embed_description_is_in_the_visitors_language_with_a_challenge(client, quote):
    response = client.get("/api/forms/quote/embed", headers={"Origin": SITE, "Accept-Language": "ja"})
    described = response.get_json()
    assert response.headers["Access-Control-Allow-Origin"] == SITE and response.headers["Cache-Control"] == "no-store"
    assert described["fields"][0]["label"] == "お名前" and described["fields"][1]["label"] == "Work address"
    assert described["action"] == "http://localhost/api/forms/quote/inquiries" and described["rendered"]
    assert described["challenge"]["parameters"]["algorithm"] == "PBKDF2/SHA-256" and described["texts"]["send"]
    challenge = client.get("/api/forms/quote/challenge", headers={"Origin": SITE})
    assert challenge.headers["Access-Control-Allow-Origin"] == SITE and "parameters" in challenge.get_json()
    assert client.get("/api/forms/nope/embed").status_code == 404


def test_the_script_is_served_to_other_sites(client):
    with client.get("/embed.js") as script:
        assert script.status_code == 200 and script.headers["Cross-Origin-Resource-Policy"] == "cross-origin"
        assert script.mimetype in ("text/javascript", "application/javascript")
        assert b"data-sundown-form" in script.data
    with client.get("/embed.css") as style:
        assert style.mimetype == "text/css"


@pytest.mark.parametrize(
    "settings, input_name, message",
    [
        ({"allowed_origins": "www.example.org"}, "allowed_origins", "is not a site"),
        ({"allowed_origins": SITE, "thanks_url": "https://evil.test/thanks"}, "thanks_url", "on one of the allowed"),
        ({"thanks_url": "javascript:alert(1)"}, "thanks_url", "on one of the allowed"),
        ({"allowed_origins": SITE, "thanks_url": f"{SITE}/thanks\r\nSet-Cookie: a=b"}, "thanks_url", "on one of the"),
        ({"allowed_origins": SITE, "thanks_url": f"{SITE}/thanks\nhtml"}, "thanks_url", "on one of the allowed"),
        ({"allowed_origins": SITE, "thanks_url": f"{SITE}/\u202ethanks"}, "thanks_url", "on one of the allowed"),
        (
            {"allowed_origins": "https://*.shop.example", "thanks_url": f"https://{'a' * 64}.shop.example/"},
            "thanks_url",
            "on one of the allowed",
        ),
        (
            {"allowed_origins": "https://*.shop.example", "thanks_url": "https://a..shop.example/"},
            "thanks_url",
            "on one of the allowed",
        ),
    ],
)
def test_the_editor_refuses_bad_sites_and_thank_you_addresses(admin_client, query, settings, input_name, message):
    response = admin_client.post(
        "/admin/forms/new", data=editor_post(admin_client, "/admin/forms/new", FIELDS, **settings)
    )
    assert response.status_code == 422 and message in response.get_data(as_text=True)
    assert f'id="{input_name}-error"' in response.get_data(as_text=True)
    assert query(select(Form.slug)) == ["contact"]


def test_the_forms_page_shows_both_snippets_and_the_sites_that_sent_inquiries(admin_client, client, quote):
    client.post("/f/quote", data=ANSWERS, headers={"Origin": SITE})
    page = admin_client.get(f"/admin/forms/{quote}").get_data(as_text=True)
    assert (
        "&lt;script src=&#34;http://localhost/embed.js&#34; data-form=&#34;quote&#34; defer" in page
        or 'data-form="quote" defer' in page.replace("&#34;", '"').replace("&lt;", "<")
    )
    assert "http://localhost/f/quote" in page and f"<code>{SITE}</code>: 1 inquiry" in page


def test_the_embed_description_of_a_file_field_names_its_limits(admin_client, client):
    fields = [
        {"type": "text", "key": "name", "label-en": "Name"},
        {"type": "file", "key": "files", "label-en": "Files", "max": "2"},
    ]
    data = editor_post(admin_client, "/admin/forms/new", fields, slug="upload", **{"title-en": "Upload"})
    assert admin_client.post("/admin/forms/new", data=data).status_code == 303
    described = client.get("/api/forms/upload/embed").get_json()["fields"][1]
    assert described == {
        "key": "files",
        "type": "file",
        "label": "Files",
        "help": "",
        "required": False,
        "choices": [],
        "files": 2,
        "max_bytes": 10 * 1024 * 1024,
        "accept": "image/png,image/jpeg,image/gif,image/webp,application/pdf,text/plain",
        "limits": "Up to 2 files, 10 MB in all: PNG, JPG, GIF, WEBP, PDF, TXT.",
    }
