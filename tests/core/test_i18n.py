"""Languages: complete catalogs, no untranslated template text, and pages, errors and admins in ja and zh-Hans."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC
from html.parser import HTMLParser
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from sqlalchemy import select

from app.core import i18n
from app.models import Admin
from tests.helpers import VALID, csrf_token

ROOT = Path(__file__).resolve().parents[2]
CATALOGS = {
    locale: ROOT / "app" / "translations" / locale / "LC_MESSAGES" / "messages.po" for locale in ("ja", "zh_Hans")
}
PLACEHOLDER = re.compile(r"%\(\w+\)s|\{\w+\}")
JA = {"Accept-Language": "ja-JP,ja;q=0.9,en;q=0.5"}
ZH = {"Accept-Language": "zh-CN,zh;q=0.9"}


# --- the catalogs ---------------------------------------------------------------------------


def _messages(locale: str):
    with CATALOGS[locale].open("rb") as file:
        return [message for message in read_po(file, locale=locale) if message.id]


@pytest.mark.parametrize("locale", sorted(CATALOGS))
def test_every_message_is_translated_and_not_fuzzy(locale):
    messages = _messages(locale)
    assert len(messages) > 300
    untranslated = [m.id for m in messages if not all(m.string if m.pluralizable else [m.string])]
    fuzzy = [m.id for m in messages if m.fuzzy]
    assert untranslated == [] and fuzzy == []


@pytest.mark.parametrize("locale", sorted(CATALOGS))
def test_translations_keep_every_placeholder_and_tag(locale):
    for message in _messages(locale):
        source = message.id[-1] if message.pluralizable else message.id
        for text in message.string if message.pluralizable else [message.string]:
            assert sorted(PLACEHOLDER.findall(text)) == sorted(set(PLACEHOLDER.findall(source))) or sorted(
                set(PLACEHOLDER.findall(text))
            ) == sorted(set(PLACEHOLDER.findall(source))), (source, text)
            assert re.findall(r"</?\w+", text) == re.findall(r"</?\w+", source), (source, text)


def test_script_messages_are_in_the_catalogs():
    ids = {m.id for m in _messages("ja")}
    assert set(i18n.SCRIPT_MESSAGES) <= ids


# --- templates: no user-visible text outside gettext --------------------------------------------

ALLOWED_TEXT = {"Sundown", "· Sundown"}  # the product name
JINJA = re.compile(r"{{.*?}}|{%.*?%}|{#.*?#}", re.S)


class _TextNodes(HTMLParser):
    """Collects text nodes and the attributes people read (aria-label, placeholder, title, alt)."""

    def __init__(self):
        super().__init__()
        self.found: list[str] = []

    def handle_data(self, data):
        self.found.append(data)

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("aria-label", "placeholder", "title", "alt", "data-failed") and value:
                self.found.append(value)


def _visible_text(template: Path) -> list[str]:
    source = JINJA.sub(" ", template.read_text())
    parser = _TextNodes()
    parser.feed(source)
    words = [piece.strip() for text in parser.found for piece in re.split(r"\s{2,}|\n", text)]
    return [word for word in words if word and word not in ALLOWED_TEXT and re.search(r"[A-Za-z]", word)]


@pytest.mark.parametrize("template", sorted((ROOT / "templates").rglob("*.html")), ids=lambda p: p.name)
def test_templates_have_no_text_outside_gettext(template):
    assert _visible_text(template) == []


def test_the_template_check_finds_plain_text(tmp_path):
    page = tmp_path / "page.html"
    page.write_text('<p>{{ _("Fine") }}</p><p>Not fine</p><nav aria-label="Main"></nav>')
    assert _visible_text(page) == ["Not fine", "Main"]


# --- choosing the locale ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("ja-JP,ja;q=0.9", "ja"),
        ("zh-CN,zh;q=0.9", "zh_Hans"),
        ("zh-Hans", "zh_Hans"),
        ("zh", "zh_Hans"),
        ("zh-TW", None),
        ("zh-Hant-HK,en;q=0.5", "en"),
        ("fr-FR,ja;q=0.5", "ja"),
        ("de", None),
        ("ja;q=0,en;q=0.1", "en"),
    ],
)
def test_accept_language_best_match(header, expected):
    from werkzeug.datastructures import LanguageAccept
    from werkzeug.http import parse_accept_header

    assert i18n.from_accept_language(parse_accept_header(header, LanguageAccept)) == expected


def test_japanese_browser_gets_japanese_pages(client):
    for path in ("/", "/privacy", "/thanks", "/auth/login"):
        page = client.get(path, headers=JA).get_data(as_text=True)
        assert '<html lang="ja">' in page, path
    form = client.get("/", headers=JA).get_data(as_text=True)
    assert "お問い合わせ" in form and "送信する" in form and "Send inquiry" not in form


def test_chinese_browser_gets_simplified_chinese(client):
    page = client.get("/privacy", headers=ZH).get_data(as_text=True)
    assert '<html lang="zh-Hans">' in page
    assert "每条咨询保存 <strong>180 天</strong>，之后将自动删除。" in page


def test_privacy_retention_sentence_reads_naturally(client):
    assert "お問い合わせは<strong>180日間</strong>保管し" in client.get("/privacy", headers=JA).get_data(as_text=True)
    assert "We keep each inquiry for <strong>180 days</strong>." in client.get("/privacy").get_data(as_text=True)


def test_no_accept_language_gets_the_default_locale(app_config, make_app):
    app = make_app({**app_config, "DEFAULT_LOCALE": "ja"})
    page = app.test_client().get("/").get_data(as_text=True)
    assert '<html lang="ja">' in page


def test_form_errors_in_japanese(client):
    data = {"name": "", "email": "nope", "message": "hi", "csrf_token": csrf_token(client)}
    response = client.post("/", data=data, headers=JA)
    page = response.get_data(as_text=True)
    assert response.status_code == 422
    assert "以下の項目を修正してください。" in page
    assert "この項目は必須です。" in page
    assert "メールアドレスには @ が必要です（例：name@example.com）。" in page


def test_json_api_errors_in_japanese_keep_their_structure(client):
    english = client.post("/api/inquiries", json={**VALID, "email": "a＠example.com", "name": ""})
    japanese = client.post("/api/inquiries", json={**VALID, "email": "a＠example.com", "name": ""}, headers=JA)
    assert english.status_code == japanese.status_code == 422
    assert (
        english.json.keys() == japanese.json.keys() and english.json["errors"].keys() == japanese.json["errors"].keys()
    )
    assert japanese.json["errors"] == {
        "name": "この項目は必須です。",
        "email": "全角の「＠」ではなく、半角の「@」を使ってください。",
    }
    assert english.json["errors"]["email"] == "Use the ordinary @ sign, not the full-width ＠."


def test_json_api_refusals_in_chinese(client):
    response = client.post("/api/inquiries", data="x", headers={**ZH, "Content-Type": "text/plain"})
    assert response.status_code == 415
    assert response.json == {"ok": False, "error": "请以 JSON 格式（Content-Type: application/json）提交咨询。"}


def test_not_found_page_in_japanese(client):
    response = client.get("/nowhere", headers=JA)
    page = response.get_data(as_text=True)
    assert response.status_code == 404 and "ページが見つかりません" in page and 'lang="ja"' in page


def test_switch_sets_a_cookie_that_wins_over_the_browser(client):
    response = client.get("/language/zh-Hans?next=/privacy", headers=JA)
    assert response.status_code == 303 and response.headers["Location"].endswith("/privacy")
    assert "lang=zh_Hans" in response.headers["Set-Cookie"] and "HttpOnly" in response.headers["Set-Cookie"]
    page = client.get("/privacy", headers=JA).get_data(as_text=True)
    assert '<html lang="zh-Hans">' in page


def test_switch_links_are_on_every_page_and_refuse_other_sites(client):
    page = client.get("/privacy").get_data(as_text=True)
    assert 'href="/language/ja?next=/privacy" lang="ja" hreflang="ja"' in page
    assert ">日本語</a>" in page and ">简体中文</a>" in page
    response = client.get("/language/ja?next=//evil.example/")
    assert response.headers["Location"] == "/"
    response = client.get("/language/fr?next=/privacy")
    assert response.status_code == 303 and "Set-Cookie" not in response.headers


def test_script_messages_on_the_page_and_as_json(client):
    page = client.get("/auth/login", headers=JA).get_data(as_text=True)
    attribute = re.search(r"data-messages='([^']*)'", page).group(1)
    assert json.loads(html.unescape(attribute))["Waiting for your passkey…"] == "パスキーの操作を待っています…"
    catalog = client.get("/i18n/zh-Hans.json").json
    assert catalog["Waiting for your passkey…"] == "正在等待通行密钥…"
    assert set(catalog) == set(i18n.SCRIPT_MESSAGES)
    assert client.get("/i18n/xx.json").status_code == 404


def test_rate_limit_message_in_japanese(app_config, make_app):
    app = make_app({**app_config, "SUBMIT_RATE_LIMITS": "1/60"})
    client = app.test_client()
    client.post("/api/inquiries", json=VALID, headers=JA)
    response = client.post("/api/inquiries", json=VALID, headers=JA)
    assert response.status_code == 429
    assert response.json["error"] == "リクエストが多すぎます。60秒後にもう一度お試しください。"


# --- admins ---------------------------------------------------------------------------------


def test_admin_pages_follow_the_browser_until_a_choice(admin_client, query):
    assert "受信箱" in admin_client.get("/admin/", headers=JA).get_data(as_text=True)
    token = csrf_token(admin_client, "/admin/account")
    response = admin_client.post("/admin/account/language", data={"locale": "zh-Hans", "csrf_token": token}, headers=JA)
    assert response.status_code == 303
    assert query.scalar(select(Admin.locale).where(Admin.name == "Ada")) == "zh_Hans"
    page = admin_client.get("/admin/account", headers=JA).get_data(as_text=True)
    assert '<html lang="zh-Hans">' in page and "语言已保存。" in page


def test_admin_choice_applies_in_a_browser_without_the_cookie(app, client, login, query):
    admin = login("Ada")
    token = csrf_token(client, "/admin/account")
    client.post("/admin/account/language", data={"locale": "ja", "csrf_token": token})
    other = app.test_client()
    login(as_client=other, admin=admin)
    page = other.get("/admin/cleanup").get_data(as_text=True)
    assert '<html lang="ja">' in page and "クリーンアップはまだ実行されていません。" in page


def test_admin_language_refuses_unknown_values_and_needs_csrf(admin_client, query):
    response = admin_client.post(
        "/admin/account/language", data={"locale": "fr", "csrf_token": csrf_token(admin_client, "/admin/account")}
    )
    assert response.status_code == 303
    assert query.scalar(select(Admin.locale).where(Admin.name == "Ada")) is None
    assert admin_client.post("/admin/account/language", data={"locale": "ja"}).status_code == 400


def test_japanese_times_and_numbers(app):
    from datetime import datetime

    from flask_babel import force_locale

    app.config["TIME_ZONE"] = "Asia/Tokyo"
    with app.test_request_context("/"), force_locale("ja"):
        assert i18n.local_time(datetime(2026, 12, 2, 5, 5, tzinfo=UTC)) == "2026年12月2日 14:05 JST"
        assert i18n.number(1234567) == "1,234,567"
        assert i18n.days(3) == "3日"
    with app.test_request_context("/"), force_locale("en"):
        assert i18n.local_time(datetime(2026, 12, 2, 5, 5, tzinfo=UTC)) == "2026-12-02 14:05 JST"
