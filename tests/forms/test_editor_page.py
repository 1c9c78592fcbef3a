"""The editor's page (templates/admin/form_edit.html, app/admin/forms.py): compact field cards that show only
what their type needs, other languages folded, Move and Remove buttons that work as plain posts, and the
preview its script asks for."""

from __future__ import annotations

import re

from sqlalchemy import select

from app.models import Form
from tests.forms.test_forms import QUOTE_FIELDS, create_quote
from tests.helpers import editor_post


def tag(page: str, element_id: str) -> str:
    """The opening tag of the input with the id (else the name) ``element_id``."""
    match = re.search(rf'<(?:input|textarea|select)\b[^>]*\b(?:id|name)="{re.escape(element_id)}"[^>]*>', page)
    assert match, f"no input {element_id}"
    return match.group(0)


def card(page: str, row: int) -> str:
    """The HTML of field row ``row``'s card."""
    start = page.index(f'id="field-{row}-card"')
    return page[start : page.index("</fieldset>", start)]


def saved_form_page(admin_client, query) -> str:
    assert create_quote(admin_client).status_code == 303
    [form_id] = query(select(Form.id).where(Form.slug == "quote"))
    return admin_client.get(f"/admin/forms/{form_id}").get_data(as_text=True)


def test_each_card_posts_only_the_inputs_its_type_needs(admin_client, query):
    page = saved_form_page(admin_client, query)
    assert " disabled" not in tag(page, "field-3-choices-en")  # a menu: its choices
    assert " disabled" in tag(page, "field-3-max") and " disabled" in tag(page, "field-3-min")
    assert " disabled" in tag(page, "field-0-choices-en") and " disabled" not in tag(page, "field-0-max")  # text
    assert " disabled" not in tag(page, "field-10-default") and " disabled" in tag(page, "field-0-default")
    assert " disabled" in tag(page, "field-9-required")  # a consent is always required
    assert ">Min. value<" in card(page, 2) and ">Max. length<" in card(page, 0)  # the bounds say what they bound


def test_a_saved_required_field_shows_ticked_so_saving_again_keeps_it(admin_client, query):
    page = saved_form_page(admin_client, query)
    assert " checked" in tag(page, "field-0-required") and " checked" not in tag(page, "field-2-required")


def test_other_languages_are_folded_until_one_has_an_error(admin_client):
    page = admin_client.get("/admin/forms/new").get_data(as_text=True)
    assert '<details class="more">' in page and page.index('<details class="more">') < page.index('id="title-ja"')
    data = editor_post(admin_client, "/admin/forms/new", [{**QUOTE_FIELDS[0], "label-ja": "名" * 501}])
    response = admin_client.post("/admin/forms/new", data=data)
    folded = card(response.get_data(as_text=True), 0)
    assert response.status_code == 422
    assert '<details class="languages" open' in folded and 'id="field-0-label-ja-error"' in folded


def test_move_and_remove_buttons_show_the_form_in_its_new_shape_unsaved(admin_client, query):
    data = editor_post(admin_client, "/admin/forms/new", QUOTE_FIELDS[:3], action="", move="0-down")
    del data["action"]
    page = admin_client.post("/admin/forms/new", data=data).get_data(as_text=True)
    assert page.index('id="field-1-card"') < page.index('id="field-0-card"')
    assert 'value="1"' in tag(page, "field-1-position") and 'value="2"' in tag(page, "field-0-position")
    assert page.index('id="preview-work_email"') < page.index('id="preview-name"')

    del data["move"]
    data["field-2-remove"] = "1"
    page = admin_client.post("/admin/forms/new", data=data).get_data(as_text=True)
    assert 'id="field-2-card"' in page and "Add a field" in card(page, 2)  # row 2's number: the blank card's
    assert 'value=""' in tag(page, "field-2-key")  # which comes back empty, not with the removed field's key
    assert query(select(Form.slug)) == ["contact"]


def test_a_type_changed_without_script_comes_back_with_its_inputs(admin_client):
    field = {**QUOTE_FIELDS[0], "type": "checkboxes"}  # was a short text: no choices were posted
    data = editor_post(admin_client, "/admin/forms/new", [field], action="preview")
    response = admin_client.post("/admin/forms/new", data=data)
    page = response.get_data(as_text=True)
    assert response.status_code == 422 and "Give at least one choice" in page
    assert " disabled" not in tag(page, "field-0-choices-en") and " disabled" in tag(page, "field-0-max")


def test_the_live_preview_renders_the_posted_fields_even_with_errors(admin_client, query):
    data = editor_post(admin_client, "/admin/forms/new", [*QUOTE_FIELDS[:3], {"type": "text", "key": "Bad Key"}])
    response = admin_client.post("/admin/forms/preview", data=data)
    fragment = response.get_data(as_text=True)
    assert response.status_code == 200 and 'id="preview-budget"' in fragment and "Quote request" in fragment
    assert "<html" not in fragment and query(select(Form.slug)) == ["contact"]


def test_the_embed_block_and_its_copy_button_come_before_the_editor(admin_client, query):
    page = saved_form_page(admin_client, query)
    assert page.index('data-copy="snippet-block"') < page.index('id="form-editor"')
    assert page.index('id="form-editor"') < page.index('id="preview-body"')
