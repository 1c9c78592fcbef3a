"""Steps the journeys share: what a person does in the browser, in a few words each."""

from __future__ import annotations

import re
import time

from axe_playwright_python.sync_playwright import Axe
from babel.support import Translations
from playwright.sync_api import Page, expect

from devtools.server import ROOT
from tests.e2e.conftest import Authenticator

ADMIN_HOME = re.compile(r"/admin/$")
OWNER_HOME = re.compile(r"/admin/overview$")  # where an owner lands after logging in
LOGIN_PAGE = re.compile(r"/auth/login(\?.*)?$")


FILL_SECONDS = 3.2  # a person takes longer than the time trap's 3 seconds to fill in the form


def submit_inquiry(page: Page, name: str, email: str, message: str) -> None:
    """Send an inquiry through the public form, as a person does, and wait for the thank-you page.

    With JavaScript on, the form has solved its spam check by then and the
    inquiry lands in the inbox.
    """
    page.goto("/")
    page.get_by_label("Your name").fill(name)
    page.get_by_label("Email address").fill(email)
    page.get_by_label("Message").fill(message)
    wait_like_a_person(page)
    page.get_by_role("button", name="Send inquiry").click()
    page.wait_for_url("**/thanks")


def add_field(page: Page, kind: str, key: str, label: str, choices: str) -> None:
    """In the form editor, fill the blank field card and add it: the page comes back with it as a card of its own."""
    card = page.get_by_role("group", name="Add a field")
    card.get_by_label("Type").select_option(label=kind)
    card.get_by_label("Key").fill(key)
    card.get_by_label("Label (English)").fill(label)
    if choices:
        card.get_by_label("Choices (English)").fill(choices)
    card.get_by_role("button", name="Add the field").click()
    page.wait_for_load_state("load")


def wait_like_a_person(page: Page) -> None:
    """Until the form has been open ``FILL_SECONDS`` and its spam check is solved (JavaScript on)."""
    open_for = page.evaluate("() => performance.now()") / 1000
    time.sleep(max(0.0, FILL_SECONDS - open_for))
    expect(page.locator("form[data-spam-check='solved']")).to_have_count(1)


def enroll(page: Page, link: str) -> None:
    """Open an enrollment link, create the passkey, land on the Overview (an owner), and open the inbox."""
    page.goto(link)
    page.get_by_role("button", name="Create passkey").click()
    expect(page).to_have_url(OWNER_HOME)
    page.wait_for_load_state("load")  # the script's redirect: its stylesheet may still be on the way
    open_inbox(page)


def open_inbox(page: Page) -> None:
    """Follow the navigation's Inbox link."""
    page.get_by_role("navigation", name="Main").get_by_role("link", name=re.compile(r"^Inbox")).click()
    expect(page).to_have_url(ADMIN_HOME)
    page.wait_for_load_state("load")


def log_in(page: Page) -> None:
    """Username-less passkey login from the login page; lands on the Overview (an owner), then opens the inbox."""
    page.goto("/auth/login")
    page.get_by_role("button", name="Log in with a passkey").click()
    expect(page).to_have_url(OWNER_HOME)
    page.wait_for_load_state("load")
    open_inbox(page)


def log_out(page: Page) -> None:
    """Use the "Log out" button in the admin navigation."""
    nav = page.get_by_role("navigation", name="Main")
    nav.get_by_role("button", name=re.compile(r"^Log out")).click()
    expect(page).to_have_url(LOGIN_PAGE)
    expect(page.get_by_text("You are logged out.")).to_be_visible()


def expect_logged_out(page: Page) -> None:
    """The inbox is refused: the next request lands on the login page."""
    page.goto("/admin/")
    expect(page).to_have_url(LOGIN_PAGE)
    expect(page.get_by_role("heading", name="Admin login")).to_be_visible()


def copy_passkeys(source: Authenticator, target: Authenticator) -> None:
    """Put ``source``'s credentials on ``target``, as a passkey synced to another device."""
    for credential in source.credentials():
        target.cdp.send("WebAuthn.addCredential", {"authenticatorId": target.id, "credential": credential})


def row_with(page: Page, text: str):
    """The table row that contains ``text``."""
    return page.get_by_role("row").filter(has_text=text)


# Boxes that spill past the right edge of the page's main column, and boxes scrolling sideways
# inside it: either hides content behind a scrollbar even when the page itself fits the window.
_SPILLS = """() => {
  const main = document.querySelector("main");
  const edge = main.getBoundingClientRect().right - parseFloat(getComputedStyle(main).paddingRight);
  const name = (el) => el.tagName.toLowerCase() + (el.className ? "." + el.className : "");
  const wider = Array.from(main.querySelectorAll("*"))
    .filter((el) => el.getClientRects().length && el.getBoundingClientRect().right > edge + 0.5)
    .map((el) =>
      `${name(el)} ends at ${Math.round(el.getBoundingClientRect().right)} px, the column at ${Math.round(edge)}`);
  const scrolling = Array.from(document.querySelectorAll("body, body *"))
    .filter((el) => ["auto", "scroll"].includes(getComputedStyle(el).overflowX)
      && el.scrollWidth > el.clientWidth + 0.5)
    .map((el) => `${name(el)} scrolls sideways: ${el.scrollWidth} px in ${el.clientWidth}`);
  return wider.concat(scrolling).slice(0, 8);
}"""


def assert_fits(page: Page) -> None:
    """Nothing on the page needs a horizontal scrollbar: not the page, nor a box inside its main column."""
    widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"the page is {widths[0]} px wide in a {widths[1]} px window"
    spills = page.evaluate(_SPILLS)
    assert not spills, "; ".join(spills)


# Words wider than the table cell holding them: the browser breaks them in the middle (each word measured in
# its cell's font, as shown, capitals included; a header hidden for screen readers only, a select's options
# and a closed detail are not shown, so not measured).
_BROKEN_WORDS = """() => {
  const measure = document.createElement("canvas").getContext("2d");
  const found = [];
  for (const cell of document.querySelectorAll("main table caption, main table th, main table td")) {
    const head = cell.closest("thead");
    const unseen = cell.closest(".visually-hidden") || (head && getComputedStyle(head).position === "absolute");
    if (!cell.getClientRects().length || unseen) continue;
    const style = getComputedStyle(cell);
    measure.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const room = cell.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const shown = cell.cloneNode(true);
    shown.querySelectorAll(".visually-hidden, select, details:not([open]) > :not(summary)")
      .forEach((hidden) => hidden.remove());
    const text = style.textTransform === "uppercase" ? shown.textContent.toUpperCase() : shown.textContent;
    for (const word of text.split(/\\s+/)) {
      const width = measure.measureText(word).width + word.length * (parseFloat(style.letterSpacing) || 0);
      if (word && width > room + 1) found.push(`"${word}" (${Math.round(width)} px) in a ${Math.round(room)} px cell`);
    }
  }
  return found.slice(0, 8);
}"""


def assert_no_broken_words(page: Page) -> None:
    """No word in a table is wider than its cell, so none is broken in the middle to fit."""
    broken = page.evaluate(_BROKEN_WORDS)
    assert not broken, "; ".join(broken)


SIZES = {"desktop": (1280, 800), "phone": (390, 844)}


def catalog(language: str) -> Translations:
    """The app's own catalog for ``language`` (``en``, ``ja``, ``zh_Hans``): ``.gettext(text)`` and
    ``.pgettext(context, text)`` say what its pages call things, so one journey reads every language."""
    return Translations.load(str(ROOT / "app" / "translations"), [language])


def check_widths(page: Page, shot, name: str) -> list[str]:
    """At 1280 and 390 px: nothing scrolls sideways (``assert_fits``) and axe-core finds no violation; each
    photographed. What went wrong, one line each (the journey asserts none at its end); the page is left at
    1280 px."""
    problems = []
    for size, (width, height) in SIZES.items():
        page.set_viewport_size({"width": width, "height": height})
        try:
            assert_fits(page)
        except AssertionError as error:
            problems.append(f"{name} at {width} px: {error}")
        results = Axe().run(page)
        if results.violations_count:
            problems.append(f"{name} at {width} px: {results.generate_snapshot()}")
        shot(page, f"{name}-{size}")
    page.set_viewport_size({"width": SIZES["desktop"][0], "height": SIZES["desktop"][1]})
    return problems
