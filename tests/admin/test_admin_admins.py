"""Offboarding (app/admin/admins.py, flask admin list/remove) and the passkey an invite needs, all audited."""

from __future__ import annotations

from sqlalchemy import select

from app.models import Admin, AdminLogin, AuditEntry, OneTimeSecret, Passkey
from tests.helpers import csrf_token
from tests.softauthn import PasskeyBrowser, invite


def actions(query) -> list[str]:
    return query(select(AuditEntry.action).order_by(AuditEntry.id))


def test_the_admins_page_logs_an_admin_out_everywhere(admin_client, app, login, query):
    other = app.test_client()
    grace = login("Grace", as_client=other)
    page = admin_client.get("/admin/admins").get_data(as_text=True)
    assert "Grace" in page and "Ada" in page
    token = csrf_token(admin_client, "/admin/admins")
    assert admin_client.post(f"/admin/admins/{grace.id}/logout", data={"csrf_token": token}).status_code == 303
    assert query.count(AdminLogin) == 1  # Ada's own
    assert other.get("/admin/").status_code == 302  # Grace must log in again
    assert "sessions_revoked" in actions(query)


def test_removing_an_admin_takes_a_confirmation_and_their_passkeys_and_logins(app, query):
    ada = PasskeyBrowser(app, app.test_client())
    assert ada.enroll(invite(app, "Ada")).status_code == 200
    grace = PasskeyBrowser(app, app.test_client())
    assert grace.enroll(invite(app, "Grace")).status_code == 200
    [grace_id] = query(select(Admin.id).where(Admin.name == "Grace"))
    token = csrf_token(ada.client, "/admin/admins")
    confirm = ada.client.post(f"/admin/admins/{grace_id}/remove", data={"csrf_token": token})
    assert confirm.status_code == 200 and "Remove Grace?" in confirm.get_data(as_text=True)
    assert query.count(Admin) == 2
    done = ada.client.post(f"/admin/admins/{grace_id}/remove", data={"csrf_token": token, "confirm": "Grace"})
    assert done.status_code == 303
    assert query(select(Admin.name)) == ["Ada"]
    assert {row.admin_id for row in query(select(Passkey))} == {row.admin_id for row in query(select(AdminLogin))}
    assert grace.client.get("/admin/").status_code == 302 and grace.login().status_code == 400
    assert {"admin_enrolled", "admin_removed"} <= set(actions(query))


def test_an_admin_cannot_remove_themselves_here(admin_client, query):
    [ada] = query(select(Admin.id))
    token = csrf_token(admin_client, "/admin/admins")
    admin_client.post(f"/admin/admins/{ada}/remove", data={"csrf_token": token, "confirm": "Ada"})
    assert query.count(Admin) == 1


def test_the_operator_lists_and_removes_admins_but_never_the_last(app, runner, login, query):
    login("Ada")
    assert runner.invoke(args=["admin", "remove", "Ada", "--yes"]).exit_code == 1  # the last one
    login("Grace", as_client=app.test_client())
    assert "Grace (owner): 0 passkeys, 1 logins" in runner.invoke(args=["admin", "list"]).output
    result = runner.invoke(args=["admin", "remove", "Grace", "--yes"])
    assert result.exit_code == 0 and "Grace was removed" in result.output
    assert query(select(Admin.name)) == ["Ada"]
    assert query(select(AuditEntry.admin_name).where(AuditEntry.action == "admin_removed")) == [
        "operator (command line)"
    ]


def test_an_invite_needs_a_passkey_verified_in_the_last_five_minutes(app, clock, query):
    ada = PasskeyBrowser(app, app.test_client())
    assert ada.enroll(invite(app, "Ada")).status_code == 200
    secrets_before = query.count(OneTimeSecret)
    clock.advance(minutes=6)
    page = ada.client.get("/admin/account").get_data(as_text=True)
    assert "needs a fresh confirmation with your passkey" in page and 'id="invite-name"' not in page
    token = csrf_token(ada.client, "/admin/account")
    refused = ada.client.post("/admin/account/invite", data={"csrf_token": token, "name": "Mallory"})
    assert refused.status_code == 403 and query.count(OneTimeSecret) == secrets_before
    assert 'id="step-up"' in refused.get_data(as_text=True)
    assert ada.client.get("/auth/login?reauth=1&next=/admin/account").status_code == 200  # not sent on
    assert ada.login().status_code == 200  # the passkey again
    token = csrf_token(ada.client, "/admin/account")
    made = ada.client.post("/admin/account/invite", data={"csrf_token": token, "name": "Lin"})
    assert made.status_code == 200 and "/auth/enroll/" in made.get_data(as_text=True)
    assert query(select(AuditEntry.detail).where(AuditEntry.action == "invite_created"))[-1] == "for Lin as owner"


def test_passkey_changes_and_revoked_logins_are_audited(app, login, query, admin_client):
    other = app.test_client()
    login("Ada", as_client=other, admin=query(select(Admin))[0])
    [other_login] = [row.id for row in query(select(AdminLogin))][-1:]
    token = csrf_token(admin_client, "/admin/account")
    admin_client.post(f"/admin/account/logins/{other_login}/revoke", data={"csrf_token": token})
    assert "session_revoked" in actions(query)
