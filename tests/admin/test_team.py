"""The team inbox: roles chosen on the invite and the Admins page, the last owner kept, step-up, triage,
and the record of who opened what."""

from __future__ import annotations

import json
import re

import pytest
from sqlalchemy import select

from app.models import (
    Access,
    Admin,
    AdminForm,
    AdminLogin,
    AuditEntry,
    Form,
    Inquiry,
    InquiryTriage,
    Note,
    Passkey,
    Tag,
)
from tests.factories import add_file, add_inquiries, inquiry
from tests.helpers import csrf_token, settle, snapshot
from tests.softauthn import PasskeyBrowser, invite


def post(client, path: str, page: str = "/admin/account", **data):
    return client.post(path, data={"csrf_token": csrf_token(client, page), **data})


def entries(query) -> list[tuple]:
    return [(row.action, row.detail) for row in query(select(AuditEntry).order_by(AuditEntry.id))]


@pytest.fixture
def quote(query) -> int:
    def add(session):
        contact = session.get(Form, 1)
        form = Form(slug="quote", title={"en": "Quote"}, fields=contact.fields, email_field=contact.email_field)
        session.add(form)
        session.commit()
        return form.id

    return query.using(add)


def test_an_invite_from_the_account_page_gives_the_role_and_forms_chosen(app, quote, query):
    ada = PasskeyBrowser(app, app.test_client())
    assert ada.enroll(invite(app, "Ada")).status_code == 200
    response = post(ada.client, "/admin/account/invite", name="Rita", role="responder", forms=str(quote))
    page = response.get_data(as_text=True)
    assert response.status_code == 200 and "Role: Responder, for the forms quote." in page
    url = re.search(r'value="(http://localhost/auth/enroll/[^"]+)"', page).group(1)
    rita = PasskeyBrowser(app, app.test_client())
    assert rita.enroll(url).status_code == 200
    made = query(select(Admin).where(Admin.name == "Rita"))[0]
    assert made.role == "responder" and made.form_ids == {quote}
    assert ("invite_created", "for Rita as responder: quote") in entries(query)
    assert rita.client.get("/admin/admins").status_code == 403
    assert 'href="/admin/forms"' not in rita.client.get("/admin/").get_data(as_text=True)


def test_flask_admin_invite_takes_a_role_and_forms_by_slug(app, quote, query):
    runner = app.test_cli_runner()
    result = runner.invoke(args=["admin", "invite", "Rita", "--role", "responder", "--forms", "quote"])
    assert result.exit_code == 0, result.output
    rita = PasskeyBrowser(app, app.test_client())
    assert rita.enroll(result.output.strip()).status_code == 200
    made = query(select(Admin).where(Admin.name == "Rita"))[0]
    assert made.role == "responder" and made.form_ids == {quote}
    refused = runner.invoke(args=["admin", "invite", "Sam", "--role", "viewer", "--forms", "jobs"])
    assert refused.exit_code != 0 and "There is no form 'jobs'" in refused.output
    listed = runner.invoke(args=["admin", "list"]).output
    assert "Rita (responder: quote)" in listed and "Ada" not in listed


def test_the_last_owner_can_be_neither_demoted_nor_removed(app, login, client, query):
    ada = login("Ada")
    response = post(client, f"/admin/admins/{ada.id}/role", "/admin/admins", role="viewer")
    assert response.status_code == 303
    assert "last owner" in client.get("/admin/admins").get_data(as_text=True)
    assert query(select(Admin.role)) == ["owner"]
    grace = login("Grace", as_client=app.test_client())
    assert post(client, f"/admin/admins/{grace.id}/role", "/admin/admins", role="viewer").status_code == 303
    remover = app.test_client()
    login(admin=grace, as_client=remover)  # Grace, a viewer now, cannot remove anyone
    assert post(remover, f"/admin/admins/{ada.id}/remove", "/admin/account", confirm="Ada").status_code == 403
    assert ("role_changed", "admin Grace: viewer") in entries(query)
    result = app.test_cli_runner().invoke(args=["admin", "remove", "Ada", "--yes"])
    assert result.exit_code != 0 and "last owner" in result.output
    assert post(client, f"/admin/admins/{grace.id}/role", "/admin/admins", role="owner").status_code == 303
    assert post(client, f"/admin/admins/{ada.id}/role", "/admin/admins", role="viewer").status_code == 303
    assert dict(query.using(lambda s: s.execute(select(Admin.name, Admin.role)).all())) == {
        "Ada": "viewer",
        "Grace": "owner",
    }


STEP_UP_POSTS = (
    "/admin/account/email",
    "/admin/account/invite",
    "/admin/admins/{other}/role",
    "/admin/admins/{other}/logout",
    "/admin/admins/{other}/remove",
    "/admin/account/passkeys/{key}/remove",
)


def test_what_keeps_an_account_needs_a_passkey_verified_in_the_last_five_minutes(app, login, client, query, clock):
    ada = login("Ada")
    grace = login("Grace", as_client=app.test_client())

    def passkeys(session):
        for name in ("Laptop", "Phone"):
            session.add(Passkey(admin_id=ada.id, credential_id=name.encode() * 4, public_key=b"k", name=name))
        session.commit()
        return session.scalar(select(Passkey.id).where(Passkey.name == "Laptop"))

    key = query.using(passkeys)
    token = csrf_token(client, "/admin/account")
    clock.advance(minutes=6)
    before = snapshot(query, skip=("admin_logins",))
    for path in STEP_UP_POSTS:
        response = client.post(
            path.format(other=grace.id, key=key),
            data={"csrf_token": token, "email": "ada@example.org", "name": "Bo", "role": "viewer", "confirm": "Grace"},
        )
        page = response.get_data(as_text=True)
        assert response.status_code == 403 and 'id="step-up"' in page, path
        assert "/auth/login?reauth=1" in page
    options = client.post(
        "/auth/register/options", json={}, headers={"X-CSRFToken": token, "Accept": "application/json"}
    )
    assert options.status_code == 403 and "five minutes" in options.get_json()["error"]
    assert snapshot(query, skip=("admin_logins",)) == before
    login(admin=ada)  # logging in again is the fresh verification
    assert post(client, f"/admin/admins/{grace.id}/role", "/admin/admins", role="viewer").status_code == 303
    assert query(select(Admin.role).where(Admin.id == grace.id)) == ["viewer"]
    assert query(select(AdminLogin.id).where(AdminLogin.admin_id == grace.id))  # untouched so far


@pytest.fixture
def detail(app, login, client, query, clock):
    """Ada (an owner) on the page of an inquiry with a file; Rita, a responder of the contact form."""
    ada = login("Ada")
    rita = login("Rita", as_client=app.test_client())

    def rows(session):
        [inquiry_id] = add_inquiries(session, [inquiry(clock)])
        file_id = add_file(session, inquiry_id, b"hello")
        session.add(Tag(name="urgent"))
        row = session.get(Admin, rita.id)
        row.role = "responder"
        session.commit()
        return inquiry_id, file_id, session.scalar(select(Tag.id))

    inquiry_id, file_id, tag_id = query.using(rows)
    return ada, rita, inquiry_id, file_id, tag_id


def test_state_assignment_tags_and_notes_are_saved_audited_once_and_filter_the_inbox(client, detail, query):
    ada, rita, inquiry_id, _file, tag_id = detail
    page = f"/admin/inquiries/{inquiry_id}"
    assert 'name="admin_id"' in client.get(page).get_data(as_text=True)
    for _twice in range(2):
        post(client, f"{page}/state", page, state="waiting")
        post(client, f"{page}/assign", page, admin_id=str(ada.id))
        post(client, f"{page}/tags", page, tags=str(tag_id))
    assert post(client, f"{page}/assign", page, admin_id=str(rita.id)).status_code == 400  # no form given to her
    assert post(client, f"{page}/state", page, state="lost").status_code == 400
    post(client, f"{page}/notes", page, body="Called back, waiting for the plans.")
    assert post(client, f"{page}/notes", page, body=" ").status_code == 422
    assert entries(query)[-4:] == [
        ("state_changed", f"inquiry #{inquiry_id}: waiting"),
        ("assigned", f"inquiry #{inquiry_id}: Ada"),
        ("tagged", f"inquiry #{inquiry_id}: +urgent"),
        ("note_added", f"inquiry #{inquiry_id}"),
    ]
    shown = client.get(page).get_data(as_text=True)
    assert "Called back, waiting for the plans." in shown and "Waiting" in shown
    listed = f'href="/admin/inquiries/{inquiry_id}"'
    for filters, found in (
        (dict(assigned="mine"), True),
        (dict(assigned="unassigned"), False),
        (dict(state="waiting"), True),
        (dict(state="open"), False),
        (dict(state="closed"), False),
        (dict(tag=str(tag_id)), True),
        (dict(tag="999"), False),
    ):
        assert (listed in client.get("/admin/", query_string=filters).get_data(as_text=True)) is found, filters
    assert client.get("/admin/", query_string={"assigned": "everyone"}).status_code == 400
    post(client, f"{page}/state", page, state="open")
    post(client, f"{page}/assign", page, admin_id="")
    assert listed in client.get("/admin/?state=open&assigned=unassigned").get_data(as_text=True)


def test_notes_go_with_their_inquiry_and_are_in_the_persons_export(app, client, detail, query):
    _ada, _rita, inquiry_id, _file, _tag = detail
    page = f"/admin/inquiries/{inquiry_id}"
    post(client, f"{page}/notes", page, body="Private: ask about the budget")
    exported = json.loads(client.get("/admin/people/export.json?email=ada@example.com").get_data(as_text=True))
    [record] = exported["inquiries"]
    assert [note["text"] for note in record["notes"]] == ["Private: ask about the budget"]
    assert {access["what"] for access in record["accessed"]} >= {"opened", "person_export"}
    token = csrf_token(client, "/admin/")
    client.post("/admin/inquiries/delete", data={"ids": str(inquiry_id), "confirm": "1", "csrf_token": token})
    settle(app)
    assert query(select(Inquiry.id)) == [] and query(select(Note.id)) == [] and query(select(InquiryTriage)) == []
    assert query(select(Access.inquiry_id).distinct()) == [inquiry_id]  # numbers only, kept as the audit log is


def test_opening_downloading_and_exporting_are_recorded_and_shown(app, client, login, detail, query):
    ada, rita, inquiry_id, file_id, _tag = detail
    page = f"/admin/inquiries/{inquiry_id}"
    client.get(page)
    client.get(f"{page}/files/{file_id}")
    client.get("/admin/export.csv").get_data()
    client.get(page, headers={"Sec-Fetch-Site": "cross-site"})  # not this admin's own navigation
    kinds = query.using(
        lambda s: s.execute(select(Access.admin_name, Access.kind, Access.inquiry_id).order_by(Access.id)).all()
    )
    assert kinds == [("Ada", "opened", inquiry_id), ("Ada", "file", inquiry_id), ("Ada", "export", None)]
    shown = client.get(page).get_data(as_text=True)
    assert 'id="accesses"' in shown and "Ada opened a file" in shown and "Ada opened the inquiry" in shown


def test_the_record_of_who_opened_what_follows_the_audit_retention(app, client, detail, query, clock):
    _ada, _rita, inquiry_id, _file, _tag = detail
    client.get(f"/admin/inquiries/{inquiry_id}")
    assert len(query(select(Access.id))) == 1
    clock.advance(days=app.config["AUDIT_RETENTION_DAYS"] + 1)
    result = app.test_cli_runner().invoke(args=["cleanup", "--force"])
    assert result.exit_code == 0, result.output
    assert query(select(Access.id)) == []


def test_a_viewer_reads_but_writes_no_mark_and_no_triage(app, detail, query, login):
    _ada, _rita, inquiry_id, _file, _tag = detail
    viewer = app.test_client()
    vic = login("Vic", as_client=viewer)

    def demote(session):
        session.get(Admin, vic.id).role = "viewer"
        session.commit()

    query.using(demote)
    page = f"/admin/inquiries/{inquiry_id}"
    assert viewer.get(page).status_code == 404  # no form given

    def give(session):
        session.add(AdminForm(admin_id=vic.id, form_id=1))
        session.commit()

    query.using(give)
    shown = viewer.get(page).get_data(as_text=True)
    assert "Mark unread" not in shown and "Save state" not in shown and "Add note" not in shown
    assert post(viewer, f"{page}/unread", page).status_code == 403
    assert post(viewer, f"{page}/notes", page, body="x").status_code == 403
