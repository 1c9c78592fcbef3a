"""Enrollment links: `flask admin invite`, first-link, redemption, recovery, registration rules."""

from __future__ import annotations

import hashlib
import re

import pytest
from sqlalchemy import select

from app.models import Admin, AdminLogin, OneTimeSecret, Passkey
from tests.softauthn import PasskeyBrowser, SoftAuthenticator, invite


@pytest.fixture
def browser(app, client) -> PasskeyBrowser:
    return PasskeyBrowser(app, client)


def token_of(url: str) -> str:
    return url.rsplit("/", 1)[1]


def test_invite_prints_a_one_time_url_whose_token_is_stored_hashed(app, query):
    url = invite(app, "Ada")
    assert re.fullmatch(r"http://localhost/auth/enroll/[A-Za-z0-9_-]{43,}", url)
    token = token_of(url)
    rows = query.rows(select(OneTimeSecret.identifier, OneTimeSecret.value))
    assert len(rows) == 1
    identifier, value = rows[0]
    assert identifier == "invite:" + hashlib.sha256(token.encode()).hexdigest()
    assert token not in identifier and token not in value


def test_enrollment_creates_the_admin_passkey_and_session(app, browser, query):
    response = browser.enroll(invite(app, "Ada"))
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["redirect"] == "/admin/overview"  # an owner lands on the Overview
    admin = query.scalar(select(Admin))
    passkey = query.scalar(select(Passkey))
    assert admin.name == "Ada" and len(admin.user_handle) == 64
    assert passkey.admin_id == admin.id and passkey.transports == "internal"
    assert query.count(AdminLogin) == 1
    assert query.count(OneTimeSecret) == 0  # link and challenge both used up
    assert browser.client.get("/admin/account").status_code == 200


def test_a_new_admin_chooses_their_display_name_on_the_enrollment_page(app, browser, client, query):
    url = invite(app, "admin")
    page = client.get(url.removeprefix("http://localhost")).get_data(as_text=True)
    assert 'id="display-name" name="display_name" data-display-name' in page and 'value="admin"' in page
    response = browser.enroll(url, display_name="  Grace   Hopper ")
    assert response.status_code == 200, response.get_json()
    assert query(select(Admin.name)) == ["Grace Hopper"]


def test_an_empty_display_name_keeps_the_invited_one_and_a_recovery_keeps_the_admins(app, browser, query):
    assert browser.enroll(invite(app, "Ada"), display_name="   ").status_code == 200
    recovery = invite(app, "Ada", recover=True)
    assert "data-display-name" not in browser.client.get(recovery.removeprefix("http://localhost")).get_data(
        as_text=True
    )
    assert PasskeyBrowser(app, app.test_client()).enroll(recovery, display_name="Mallory").status_code == 200
    assert query(select(Admin.name)) == ["Ada"]


def test_enrollment_page_shows_the_create_passkey_button(app, client):
    url = invite(app, "Ada")
    page = client.get(url.removeprefix("http://localhost")).get_data(as_text=True)
    assert "Create passkey" in page and "Ada" in page
    assert '<meta name="csrf-token"' in page


def test_registration_options_follow_the_policy(app, browser):
    path = invite(app, "Ada").removeprefix("http://localhost")
    browser.client.get(path)
    options = browser.post_json(f"{path}/options", csrf_path=path).get_json()
    assert options["authenticatorSelection"]["residentKey"] == "required"
    assert options["authenticatorSelection"]["userVerification"] == "required"
    assert options["attestation"] == "none"
    assert [p["alg"] for p in options["pubKeyCredParams"]] == [-8, -7, -257]
    assert options["rp"] == {"id": "localhost", "name": "Sundown"}
    assert options["excludeCredentials"] == []


def test_used_link_is_refused(app, browser, query):
    url = invite(app, "Ada")
    assert browser.enroll(url).status_code == 200
    again = PasskeyBrowser(app, app.test_client())
    assert again.enroll(url).status_code == 410
    assert query.count(Admin) == 1 and query.count(Passkey) == 1 and query.count(AdminLogin) == 1


def test_expired_link_is_refused(app, browser, clock, query):
    url = invite(app, "Ada")
    clock.advance(seconds=app.config["INVITE_TTL"] + 1)
    assert browser.enroll(url).status_code == 410
    assert query.count(Admin) == 0 and query.count(AdminLogin) == 0


def test_link_expiring_during_the_ceremony_is_not_redeemed(app, browser, clock, query):
    path = invite(app, "Ada").removeprefix("http://localhost")
    browser.client.get(path)
    options = browser.post_json(f"{path}/options", csrf_path=path).get_json()
    credential = browser.authenticator.create(options, browser.origin)
    clock.advance(seconds=app.config["INVITE_TTL"] + 1)
    token = browser.csrf_token()
    response = browser.client.post(f"{path}/verify", json={"credential": credential}, headers={"X-CSRFToken": token})
    assert response.status_code in (400, 410)
    assert query.count(Admin) == 0 and query.count(AdminLogin) == 0


def test_failed_registration_leaves_the_link_usable(app, browser, query):
    url = invite(app, "Ada")
    assert browser.enroll(url, origin="http://evil.localhost").status_code == 400
    assert browser.enroll(url, uv=False).status_code == 400
    assert browser.enroll(url, rp_id="evil.example").status_code == 400
    assert query.count(Admin) == 0 and query.count(AdminLogin) == 0
    assert browser.enroll(url).status_code == 200


def test_unknown_token_is_gone(client):
    assert client.get("/auth/enroll/not-a-real-token").status_code == 410


def test_recover_adds_a_passkey_to_the_existing_admin(app, browser, query):
    assert browser.enroll(invite(app, "Ada")).status_code == 200
    browser.logout()
    phone = PasskeyBrowser(app, app.test_client())
    path = invite(app, "Ada", recover=True).removeprefix("http://localhost")
    phone.client.get(path)
    options = phone.post_json(f"{path}/options", csrf_path=path).get_json()
    assert len(options["excludeCredentials"]) == 1
    credential = phone.authenticator.create(options, phone.origin)
    response = phone.post_json(f"{path}/verify", {"credential": credential}, csrf_path=path)
    assert response.status_code == 200, response.get_json()
    assert query.count(Admin) == 1 and query.count(Passkey) == 2
    assert phone.authenticator.credentials[0].user_handle == browser.authenticator.credentials[0].user_handle
    phone.logout()
    assert phone.login().status_code == 200


def test_invite_refuses_a_taken_name_and_recovering_a_missing_admin(app, browser):
    browser.enroll(invite(app, "Ada"))
    runner = app.test_cli_runner()
    taken = runner.invoke(args=["admin", "invite", "Ada"])
    assert taken.exit_code != 0 and "--recover" in taken.output
    missing = runner.invoke(args=["admin", "invite", "Nobody", "--recover"])
    assert missing.exit_code != 0 and "no admin named" in missing.output


def test_two_links_for_one_name_make_one_admin(app, browser, query):
    first, second = invite(app, "Ada"), invite(app, "Ada")
    assert browser.enroll(first).status_code == 200
    other = PasskeyBrowser(app, app.test_client())
    assert other.enroll(second).status_code == 409
    assert query.count(Admin) == 1 and query.count(Passkey) == 1


def test_first_link_only_while_there_is_no_admin(app, browser, query):
    runner = app.test_cli_runner()
    first = runner.invoke(args=["admin", "first-link"])
    assert first.exit_code == 0
    url = re.search(r"http://localhost/auth/enroll/\S+", first.output).group(0)
    assert browser.enroll(url).status_code == 200
    assert query.scalar(select(Admin.name)) == "admin"
    later = runner.invoke(args=["admin", "first-link"])
    assert later.exit_code == 0
    assert "/auth/enroll/" not in later.output and "An admin exists" in later.output


def test_duplicate_credential_id_is_refused(app, browser, query):
    assert browser.enroll(invite(app, "Ada")).status_code == 200
    taken = browser.authenticator.credentials[0].credential_id
    path = invite(app, "Ada", recover=True).removeprefix("http://localhost")
    browser.client.get(path)
    options = browser.post_json(f"{path}/options", csrf_path=path).get_json()
    forged = browser.authenticator.create(options, browser.origin, credential_id=taken)
    response = browser.post_json(f"{path}/verify", {"credential": forged}, csrf_path=path)
    assert response.status_code == 409
    assert query.count(Passkey) == 1
    assert browser.enroll(f"http://localhost{path}").status_code == 200  # the link still works


def test_credential_id_longer_than_1023_bytes_is_refused(app, browser, query):
    path = invite(app, "Ada").removeprefix("http://localhost")
    browser.client.get(path)
    options = browser.post_json(f"{path}/options", csrf_path=path).get_json()
    forged = browser.authenticator.create(options, browser.origin, credential_id=b"x" * 1024)
    response = browser.post_json(f"{path}/verify", {"credential": forged}, csrf_path=path)
    assert response.status_code == 400
    assert query.count(Admin) == 0 and query.count(Passkey) == 0


def test_login_challenge_cannot_complete_a_registration(app, browser, query):
    path = invite(app, "Ada").removeprefix("http://localhost")
    browser.client.get(path)
    registration = browser.post_json(f"{path}/options", csrf_path=path).get_json()
    login = browser.login_options()  # replaces the bound ceremony with a login one
    credential = browser.authenticator.create({**registration, "challenge": login["challenge"]}, browser.origin)
    response = browser.post_json(f"{path}/verify", {"credential": credential}, csrf_path=path)
    assert response.status_code == 400
    assert query.count(Admin) == 0


def test_a_fresh_authenticator_cannot_log_in_before_enrolling(app, client):
    stranger = PasskeyBrowser(app, client, SoftAuthenticator())
    stranger.authenticator.create(
        {"rp": {"id": "localhost"}, "user": {"id": "AA"}, "challenge": "AA"}, "http://localhost"
    )
    assert stranger.login().status_code == 400
