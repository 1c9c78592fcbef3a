"""The account page (app/admin/account.py): passkeys and invites, with real ceremonies."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from app.models import Admin, AdminLogin, AuditEntry, Passkey
from tests.helpers import csrf_token
from tests.softauthn import PasskeyBrowser, invite

PASSKEYS = select(Passkey).order_by(Passkey.id)
LOGINS = select(AdminLogin).order_by(AdminLogin.id)


@pytest.fixture
def laptop(app, client) -> PasskeyBrowser:
    """Ada, enrolled and logged in on her laptop."""
    browser = PasskeyBrowser(app, client)
    assert browser.enroll(invite(app, "Ada")).status_code == 200
    return browser


def post_form(browser: PasskeyBrowser, path: str, **data):
    token = csrf_token(browser.client, "/admin/account")
    return browser.client.post(path, data={"csrf_token": token, **data})


def test_an_admin_renames_themselves_on_the_account_page(laptop, app, query):
    assert 'id="admin-name" name="name"' in laptop.client.get("/admin/account").get_data(as_text=True)
    response = post_form(laptop, "/admin/account/name", name="  Ada   Lovelace ")
    assert response.status_code == 303
    assert query(select(Admin.name)) == ["Ada Lovelace"]
    assert query.rows(select(AuditEntry.admin_name, AuditEntry.action, AuditEntry.detail))[-1] == (
        "Ada",
        "name_changed",
        "Ada → Ada Lovelace",
    )
    page = laptop.client.get("/admin/account").get_data(as_text=True)
    assert "Name saved." in page and "Account: Ada Lovelace" in page


def test_a_name_taken_or_empty_is_refused_and_nothing_changes(laptop, app, query):
    other = PasskeyBrowser(app, app.test_client())
    assert other.enroll(invite(app, "Grace")).status_code == 200
    post_form(laptop, "/admin/account/name", name="Grace")
    assert "Another admin is already named Grace" in laptop.client.get("/admin/account").get_data(as_text=True)
    post_form(laptop, "/admin/account/name", name="   ")
    assert "Enter a name of 1 to 100 characters." in laptop.client.get("/admin/account").get_data(as_text=True)
    assert sorted(query(select(Admin.name))) == ["Ada", "Grace"]


def test_adding_a_passkey_lets_it_log_in(laptop, query):
    response = laptop.add_passkey()
    assert response.status_code == 200, response.get_json()
    assert len(query(PASSKEYS)) == 2
    laptop.logout()
    assert laptop.login(credential=laptop.authenticator.credentials[1]).status_code == 200
    assert laptop.login(credential=laptop.authenticator.credentials[0]).status_code == 200


def test_add_passkey_options_exclude_existing_passkeys(laptop):
    options = laptop.post_json("/auth/register/options", csrf_path="/admin/account").get_json()
    assert len(options["excludeCredentials"]) == 1
    assert options["user"]["name"] == "Ada"


def test_registering_needs_a_login(client):
    response = client.post("/auth/register/options", json={}, headers={"Accept": "application/json"})
    assert response.status_code in (400, 401)  # CSRF or login: either way no options


def test_rename_a_passkey(laptop, query):
    passkey = query(PASSKEYS)[0]
    response = post_form(laptop, f"/admin/account/passkeys/{passkey.id}/rename", name="  Work   laptop ")
    assert response.status_code == 303
    assert query(PASSKEYS)[0].name == "Work laptop"
    assert "Work laptop" in laptop.client.get("/admin/account").get_data(as_text=True)


def test_rename_refuses_an_empty_name(laptop, query):
    passkey = query(PASSKEYS)[0]
    post_form(laptop, f"/admin/account/passkeys/{passkey.id}/rename", name="   ")
    assert query(PASSKEYS)[0].name == passkey.name


def test_the_last_passkey_cannot_be_removed(laptop, query):
    passkey = query(PASSKEYS)[0]
    response = post_form(laptop, f"/admin/account/passkeys/{passkey.id}/remove")
    assert response.status_code == 303
    assert len(query(PASSKEYS)) == 1
    page = laptop.client.get("/admin/account").get_data(as_text=True)
    assert "cannot remove your last passkey" in page


def test_removing_a_passkey_revokes_the_logins_it_created(app, laptop, query):
    laptop.add_passkey()
    first, second = query(PASSKEYS)
    phone = PasskeyBrowser(app, app.test_client(), laptop.authenticator)
    assert phone.login(credential=laptop.authenticator.credentials[1]).status_code == 200
    assert [s.passkey_id for s in query(LOGINS)] == [first.id, second.id]
    response = post_form(laptop, f"/admin/account/passkeys/{second.id}/remove")
    assert response.status_code == 303
    assert [p.id for p in query(PASSKEYS)] == [first.id]
    assert [s.passkey_id for s in query(LOGINS)] == [first.id]
    assert phone.client.get("/admin/account").status_code == 302
    assert laptop.client.get("/admin/account").status_code == 200
    phone.logout()
    assert phone.login(credential=laptop.authenticator.credentials[1]).status_code == 400


def test_an_admin_cannot_touch_another_admins_passkeys(app, laptop, query):
    laptop.add_passkey()
    target = query(PASSKEYS)[0]
    bob = PasskeyBrowser(app, app.test_client())
    assert bob.enroll(invite(app, "Bob")).status_code == 200
    post_form(bob, f"/admin/account/passkeys/{target.id}/remove")
    post_form(bob, f"/admin/account/passkeys/{target.id}/rename", name="pwned")
    assert query(PASSKEYS)[0].id == target.id and query(PASSKEYS)[0].name == target.name


def test_invite_from_the_account_page_shows_a_working_one_time_link(app, laptop):
    response = post_form(laptop, "/admin/account/invite", name="Grace")
    assert response.status_code == 200
    url = re.search(r'value="(http://localhost/auth/enroll/[^"]+)"', response.get_data(as_text=True)).group(1)
    grace = PasskeyBrowser(app, app.test_client())
    assert grace.enroll(url).status_code == 200
    assert grace.client.get("/admin/account").status_code == 200


def test_invite_refuses_an_existing_name(laptop):
    response = post_form(laptop, "/admin/account/invite", name="Ada")
    assert response.status_code == 303
    assert "exists" in laptop.client.get("/admin/account").get_data(as_text=True)
