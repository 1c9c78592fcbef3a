"""Journey: the form builder. An admin builds a five-field form from compact cards beside a live preview, and
the page stays short (about 3,000 px at 1280 px wide), fits a phone and passes axe-core; without JavaScript the
same buttons post the form and the page comes back in its new shape."""

from __future__ import annotations

import json

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect
from sqlalchemy import select

from app.models import Form
from tests.e2e.steps import SIZES, add_field, assert_fits, enroll

FIVE = (
    ("Short text", "name", "Your name", ""),
    ("E-mail address", "email", "Your e-mail", ""),
    ("Single choice (menu)", "topic", "Topic", "sales | Sales\nsupport | Support\npress | Press"),
    ("Long text", "message", "Message", ""),
    ("Consent", "consent", "You may keep my message for 30 days.", ""),
)
TALLEST = 3000  # px at 1280 px wide, for a saved five-field form


def saved_fields(server, slug: str) -> list[dict]:
    """The fields of form ``slug`` as stored, in order."""
    with server.engine.connect() as connection:
        fields = connection.scalar(select(Form.fields).where(Form.slug == slug))
    return json.loads(fields) if isinstance(fields, str) else fields


def saved_keys(server, slug: str = "five") -> list[str]:
    """The keys of form ``slug`` as stored, in order."""
    return [each["key"] for each in saved_fields(server, slug)]


def axe_problems(page, name: str) -> list[str]:
    results = Axe().run(page)
    return [f"{name}: {results.generate_snapshot()}"] if results.violations_count else []


def test_an_admin_builds_a_five_field_form_in_a_page_that_stays_short(server, page, authenticator, shot):
    enroll(page, server.quick_invite_link("Bea Builder"))
    page.goto("/admin/forms/new")
    page.get_by_label("Title (English)").fill("Five questions")
    page.get_by_role("textbox", name="Address", exact=True).fill("five")
    card = page.get_by_role("group", name="Add a field")
    expect(card.get_by_label("Choices (English)")).to_be_hidden()  # a short text has no choices
    card.get_by_label("Label (English)").fill("Typed, not yet added")
    expect(page.locator("#preview-body")).to_contain_text("Typed, not yet added")  # the preview follows typing
    card.get_by_label("Type").select_option(label="Single choice (menu)")
    expect(card.get_by_label("Choices (English)")).to_be_visible()  # the card shows what the new type needs
    card.get_by_label("Label (English)").fill("")
    for kind, key, label, choices in FIVE:
        add_field(page, kind, key, label, choices)
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("The form five was saved.")).to_be_visible()
    assert saved_keys(server) == ["name", "email", "topic", "message", "consent"]

    topic = page.get_by_role("group", name="Field 3")
    expect(topic.get_by_label("Choices (English)")).to_be_visible()
    expect(topic.get_by_label("Maximum")).to_be_hidden()  # a choice has no length
    expect(topic.get_by_label("Label (日本語)")).to_be_hidden()  # other languages folded away
    expect(page.get_by_role("button", name="Copy the block")).to_be_visible()  # the embed block, at the top

    page.set_viewport_size({"width": 1280, "height": 800})
    height = page.evaluate("() => document.documentElement.scrollHeight")
    shot(page, "five-fields-1280")
    problems = axe_problems(page, "1280 px")
    page.set_viewport_size({"width": SIZES["phone"][0], "height": SIZES["phone"][1]})
    assert_fits(page)
    shot(page, "five-fields-390")
    problems += axe_problems(page, "390 px")
    print(f"five-field editor: {height} px tall at 1280 px")
    assert height <= TALLEST, f"the editor of a five-field form is {height} px tall at 1280 px"
    assert not problems, "\n".join(problems)

    page.set_viewport_size({"width": 1280, "height": 800})
    page.get_by_role("group", name="Field 3").get_by_role("button", name="Move up").click()  # in place
    expect(page.get_by_role("group", name="Field 2").get_by_label("Key")).to_have_value("topic")
    expect(page.locator("#preview-body label:not(.choice)").nth(1)).to_contain_text("Topic")  # the preview too
    page.get_by_role("group", name="Field 5").get_by_role("button", name="Remove").click()
    expect(page.get_by_role("group", name="Field 5")).to_have_count(0)
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("The form five was saved.")).to_be_visible()
    assert saved_keys(server) == ["name", "topic", "email", "message"]


def test_without_javascript_the_same_buttons_move_remove_and_retype_fields(
    server, page, authenticator, new_context, page_problems
):
    page_problems.allow(r"status of 422 .*/admin/forms/\d+\)$")  # Preview of a choice field with no choices yet
    enroll(page, server.quick_invite_link("Nico Noscript"))
    page.goto("/admin/forms/new")
    page.get_by_label("Title (English)").fill("Five questions")
    page.get_by_role("textbox", name="Address", exact=True).fill("plain")
    for kind, key, label, choices in FIVE[:3]:
        add_field(page, kind, key, label, choices)
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("The form plain was saved.")).to_be_visible()
    editor_url = page.url

    plain = new_context(java_script_enabled=False, storage_state=page.context.storage_state()).new_page()
    plain.goto(editor_url)
    plain.get_by_role("group", name="Field 1").get_by_role("button", name="Move down").click()
    expect(plain.get_by_role("group", name="Field 1").get_by_label("Key")).to_have_value("email")
    expect(plain.locator("#preview-body label").first).to_contain_text("Your e-mail")  # the server's preview
    plain.get_by_role("group", name="Field 3").get_by_role("button", name="Remove").click()
    expect(plain.get_by_role("group", name="Field 3")).to_have_count(0)
    second = plain.get_by_role("group", name="Field 2")
    expect(second.get_by_label("Choices (English)")).to_be_hidden()
    second.get_by_label("Type").select_option(label="Multiple choice")
    plain.get_by_role("button", name="Preview", exact=True).click()  # the page comes back with the type's inputs
    second = plain.get_by_role("group", name="Field 2")
    expect(second.get_by_text("Give at least one choice, one per line.")).to_be_visible()
    expect(second.get_by_label("Maximum")).to_be_hidden()
    second.get_by_label("Choices (English)").fill("Mornings\nEvenings")
    plain.get_by_role("button", name="Save", exact=True).click()
    expect(plain.get_by_text("The form plain was saved.")).to_be_visible()
    assert saved_keys(server, "plain") == ["email", "name"]
    fields = saved_fields(server, "plain")
    assert fields[1]["type"] == "checkboxes" and [each["value"] for each in fields[1]["choices"]] == [
        "Mornings",
        "Evenings",
    ]
    assert "max" not in fields[1]  # the short text's length went with its type
