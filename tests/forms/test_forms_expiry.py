"""What a form's expiry does: the form page offers delete (the default) or anonymise, for owners only."""

from __future__ import annotations

from sqlalchemy import select

from app.auth import roles
from app.models import Admin, AdminRole, Form
from tests.helpers import editor_post

FIELDS = [{"type": "text", "key": "name", "label-en": "Name"}, {"type": "select", "key": "topic", "label-en": "Topic"}]


def test_the_form_page_saves_anonymise_and_shows_it_chosen(app, client, query, login):
    login()
    path = "/admin/forms/new"
    page = client.get(path).get_data(as_text=True)
    assert 'id="expiry_action-delete" name="expiry_action" value="delete" checked' in page
    response = client.post(path, data=editor_post(client, path, FIELDS[:1], expiry_action="anonymise"))
    assert response.status_code == 303, response.get_data(as_text=True)
    (form_id,) = query(select(Form.id).where(Form.slug == "quote"))
    assert query(select(Form.expiry_action).where(Form.id == form_id)) == ["anonymise"]
    page = client.get(f"/admin/forms/{form_id}").get_data(as_text=True)
    assert 'value="anonymise" checked' in page


def test_a_new_form_deletes_and_a_bad_choice_is_refused_with_its_message(app, client, query, login):
    login()
    path = "/admin/forms/new"
    response = client.post(path, data=editor_post(client, path, FIELDS[:1], expiry_action="shred"))
    assert response.status_code == 422
    assert "Choose what happens to its inquiries at the end of their retention." in response.get_data(as_text=True)
    assert query(select(Form.id).where(Form.slug == "quote")) == []
    response = client.post(path, data=editor_post(client, path, FIELDS[:1]))
    assert response.status_code == 303
    assert query(select(Form.expiry_action).where(Form.slug == "quote")) == ["delete"]


def test_only_owners_choose_it(app, client, query, login):
    login("Ada", as_client=app.test_client())  # an owner stays
    responder = login("Ray")

    def demote(session):
        roles.give(session, session.get(Admin, responder.id), AdminRole.RESPONDER, [1])
        session.commit()

    query.using(demote)
    path = "/admin/forms/1"
    response = client.post(
        path, data=editor_post(client, "/admin/inquiries", FIELDS[:1], slug="contact", expiry_action="anonymise")
    )
    assert response.status_code == 403
    assert query(select(Form.expiry_action).where(Form.id == 1)) == ["delete"]
