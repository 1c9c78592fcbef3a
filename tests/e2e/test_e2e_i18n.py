"""Languages in a real Chromium: a Japanese and a Chinese browser, the visitor's journey and the admin's.

The browser's locale (``ja-JP``, ``zh-CN``) sets ``Accept-Language``; every
page is photographed at a phone's 390 px width, checked for horizontal
overflow and by axe-core, and the passkey messages come from the catalog.
"""

from __future__ import annotations

import re
import time

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.e2e.conftest import Authenticator
from tests.e2e.steps import FILL_SECONDS, OWNER_HOME, row_with

PHONE = {"width": 390, "height": 844}
# The elements that stick out of the window on the right (for the failure message).
WIDER_THAN_WINDOW = """() => Array.from(document.querySelectorAll("body *"))
  .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 0.5)
  .map((el) => el.tagName + "." + el.className + " " + Math.round(el.getBoundingClientRect().right))
  .slice(0, 8)"""

# What each language calls the things the journeys use.
WORDS = {
    "ja-JP": {
        "lang": "ja",
        "name": "お名前",
        "email": "メールアドレス",
        "message": "お問い合わせ内容",
        "send": "送信する",
        "thanks": "ありがとうございました",
        "privacy": "お問い合わせの保管期間",
        "required": "この項目は必須です。",
        "enroll": "パスキーを作成",
        "inbox": "受信箱",
        "login": "パスキーでログイン",
        "logout": "ログアウト",
        "logged_out": "ログアウトしました。",
        "account": "アカウント",
        "person": "山田 花子",
        "text": "見積もりをお願いできますか。",
    },
    "zh-CN": {
        "lang": "zh-Hans",
        "name": "您的姓名",
        "email": "电子邮箱",
        "message": "留言内容",
        "send": "提交咨询",
        "thanks": "谢谢",
        "privacy": "我们保存您咨询的时长",
        "required": "此项为必填项。",
        "enroll": "创建通行密钥",
        "inbox": "收件箱",
        "login": "使用通行密钥登录",
        "logout": "退出登录",
        "logged_out": "您已退出登录。",
        "account": "账户",
        "person": "王小明",
        "text": "请问可以报价吗？",
    },
}


def check_page(page, shot, name: str, lang: str, scripts: bool = True) -> None:
    """The page speaks ``lang``, fits 390 px without horizontal scrolling, passes axe-core; photographed.

    Without JavaScript (``scripts=False``) nothing can be measured in the page: only the language and the picture.
    """
    expect(page.locator("html")).to_have_attribute("lang", lang)
    if not scripts:
        shot(page, name)
        return
    widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"{name}: the page is {widths[0]} px wide in a {widths[1]} px window: " + str(
        page.evaluate(WIDER_THAN_WINDOW)
    )
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_snapshot()
    shot(page, name)


@pytest.mark.parametrize("locale", sorted(WORDS))
def test_visitor_journey_in_the_browser_language(new_context, shot, page_problems, locale):
    words = WORDS[locale]
    page_problems.expect_status(422, "/")
    page = new_context(locale=locale, viewport=PHONE).new_page()
    page.goto("/")
    check_page(page, shot, f"{locale}-form", words["lang"])

    page.get_by_role("button", name=words["send"]).click()  # empty: the errors in the visitor's language
    expect(page.locator("#name-error")).to_have_text(words["required"])
    check_page(page, shot, f"{locale}-form-errors", words["lang"])

    page.get_by_label(words["name"]).fill(words["person"])
    page.get_by_label(words["email"]).fill("hanako@example.com")
    page.get_by_label(words["message"]).fill(words["text"])
    time.sleep(FILL_SECONDS)
    expect(page.locator("form[data-spam-check='solved']")).to_have_count(1)
    page.get_by_role("button", name=words["send"]).click()
    page.wait_for_url("**/thanks")
    expect(page.get_by_role("heading", name=words["thanks"])).to_be_visible()
    check_page(page, shot, f"{locale}-thanks", words["lang"])

    page.goto("/privacy")
    expect(page.get_by_role("heading", name=words["privacy"])).to_be_visible()
    check_page(page, shot, f"{locale}-privacy", words["lang"])


def test_language_switch_without_javascript(new_context, shot):
    page = new_context(locale="ja-JP", viewport=PHONE, java_script_enabled=False).new_page()
    page.goto("/privacy")
    page.get_by_role("navigation", name="言語").get_by_role("link", name="简体中文").click()
    expect(page).to_have_url(re.compile(r"/privacy$"))
    check_page(page, shot, "switched-to-zh-Hans", "zh-Hans", scripts=False)
    page.get_by_role("navigation", name="语言").get_by_role("link", name="English").click()
    expect(page.get_by_role("heading", name="How long we keep your inquiry")).to_be_visible()


@pytest.mark.parametrize("locale", sorted(WORDS))
def test_admin_enrolls_logs_in_and_reads_the_inbox_in_the_browser_language(server, new_context, shot, locale):
    words = WORDS[locale]
    visitor = new_context(locale=locale).new_page()
    visitor.goto("/")
    visitor.get_by_label(words["name"]).fill(f"{words['person']} {locale}")
    visitor.get_by_label(words["email"]).fill("visitor@example.com")
    visitor.get_by_label(words["message"]).fill(words["text"])
    time.sleep(FILL_SECONDS)
    expect(visitor.locator("form[data-spam-check='solved']")).to_have_count(1)
    visitor.get_by_role("button", name=words["send"]).click()
    visitor.wait_for_url("**/thanks")

    page = new_context(locale=locale, viewport=PHONE).new_page()
    authenticator = Authenticator(page)
    page.goto(server.invite_link(f"Admin {locale}"))
    check_page(page, shot, f"{locale}-enroll", words["lang"])
    page.get_by_role("button", name=words["enroll"]).click()
    expect(page).to_have_url(OWNER_HOME)  # an owner lands on the Overview
    check_page(page, shot, f"{locale}-overview", words["lang"])
    page.goto("/admin/")
    expect(page.get_by_role("heading", name=words["inbox"])).to_be_visible()
    expect(row_with(page, f"{words['person']} {locale}")).to_contain_text(words["text"])
    check_page(page, shot, f"{locale}-inbox", words["lang"])

    page.goto("/admin/account")
    check_page(page, shot, f"{locale}-account", words["lang"])
    page.get_by_role("navigation", name=re.compile(".")).first.get_by_role(
        "button", name=re.compile("^" + words["logout"])
    ).click()
    expect(page.get_by_text(words["logged_out"])).to_be_visible()
    check_page(page, shot, f"{locale}-login", words["lang"])
    page.get_by_role("button", name=words["login"]).click()
    expect(page).to_have_url(OWNER_HOME)
    assert len(authenticator.credentials()) == 1


def test_passkey_messages_come_from_the_catalog(new_context, shot, page_problems):
    page = new_context(locale="ja-JP", viewport=PHONE).new_page()
    authenticator = Authenticator(page)
    authenticator.set_user_verified(False)  # the login is refused in the browser: NotAllowedError
    page.goto("/auth/login")
    page.get_by_role("button", name="パスキーでログイン").click()
    expect(page.get_by_role("alert")).to_have_text(  # an alert, read out at once: not the quiet status line
        re.compile("キャンセルされたか、時間切れになりました|このパスキーはこのサイトに登録されていません")
    )
    expect(page.locator("[data-passkey-status]")).to_have_text("")
    check_page(page, shot, "ja-passkey-message", "ja")
