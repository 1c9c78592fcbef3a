"""Passkey login over HTTP with a software authenticator, verified by the real py_webauthn."""

from __future__ import annotations

import logging
import threading

import pytest
from sqlalchemy import select

from app.models import AdminLogin, OneTimeSecret, Passkey
from tests.softauthn import PasskeyBrowser, SoftAuthenticator, invite

SIGN_COUNT = select(Passkey.sign_count)


@pytest.fixture
def browser(app, client) -> PasskeyBrowser:
    """A browser whose authenticator holds Ada's passkey; Ada is enrolled and logged out."""
    browser = PasskeyBrowser(app, client)
    assert browser.enroll(invite(app, "Ada")).status_code == 200
    assert browser.logout().status_code == 303
    return browser


def test_login_creates_a_login_row_and_opens_the_admin_area(browser, query):
    response = browser.login()
    assert response.status_code == 200, response.get_json()
    assert response.get_json() == {"ok": True, "redirect": "/admin/overview"}
    assert query.count(AdminLogin) == 1
    assert browser.client.get("/admin/account").status_code == 200
    assert query.scalar(SIGN_COUNT) == 1


def test_login_page_offers_the_passkey_button_and_needs_javascript(client):
    page = client.get("/auth/login").get_data(as_text=True)
    assert "Log in with a passkey" in page
    assert "<noscript>" in page
    assert 'src="/static/passkey.js"' in page
    assert "<script>" not in page


def test_login_redirects_to_a_local_next_path_only(browser):
    options = browser.login_options()
    assertion = browser.authenticator.get(options, browser.origin)
    evil = browser.login_verify(assertion, next="//evil.example/admin")
    assert evil.get_json()["redirect"] == "/admin/overview"
    options = browser.login_options()
    good = browser.login_verify(browser.authenticator.get(options, browser.origin), next="/admin/retention")
    assert good.get_json()["redirect"] == "/admin/retention"


def test_login_options_require_user_verification_and_no_allow_list(browser):
    options = browser.login_options()
    assert options["userVerification"] == "required"
    assert options.get("allowCredentials", []) == []
    assert options["rpId"] == "localhost"
    assert len(options["challenge"]) >= 43  # 32 bytes in base64url


def test_login_replaces_any_previous_session_and_flask_session(browser):
    browser.client.set_cookie("sundown_admin", "attacker-chosen-token")
    with browser.client.session_transaction() as flask_session:
        flask_session["planted"] = "by an attacker"
    assert browser.login().status_code == 200
    with browser.client.session_transaction() as flask_session:
        assert "planted" not in flask_session
    cookie = browser.client.get_cookie("sundown_admin")
    assert cookie.value != "attacker-chosen-token" and len(cookie.value) >= 64
    assert cookie.http_only


def test_logout_deletes_the_login_row(browser, query):
    browser.login()
    assert query.count(AdminLogin) == 1
    response = browser.logout()
    assert response.status_code == 303
    assert response.headers["Location"].endswith("/auth/login")
    assert query.count(AdminLogin) == 0
    assert browser.client.get("/admin/account").status_code == 302


def test_logout_without_csrf_token_is_refused(browser, query):
    browser.login()
    assert browser.client.post("/auth/logout").status_code == 400
    assert query.count(AdminLogin) == 1


# --- Refusals: each leaves no login behind. -----------------------------------


def assert_refused(query, response, status=400):
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.get_json()["ok"] is False
    assert query.count(AdminLogin) == 0
    assert "sundown_admin" not in response.headers.get("Set-Cookie", "")


def test_wrong_origin_is_refused(browser, query):
    assert_refused(query, browser.login(origin="http://evil.localhost"))


def test_wrong_rp_id_is_refused(browser, query):
    assert_refused(query, browser.login(rp_id="evil.example"))


def test_a_host_header_cannot_change_the_relying_party(browser):
    token = browser.csrf_token()
    cookie = browser.client.get_cookie("sundown")
    browser.client.set_cookie("sundown", cookie.value, domain="evil.example")
    options = browser.client.post(
        "/auth/login/options", json={}, headers={"X-CSRFToken": token, "Host": "evil.example"}
    )
    assert options.status_code == 200
    assert options.get_json()["rpId"] == "localhost"


def test_replayed_assertion_is_refused(browser, query):
    options = browser.login_options()
    assertion = browser.authenticator.get(options, browser.origin)
    assert browser.login_verify(assertion).status_code == 200
    browser.logout()
    assert_refused(query, browser.login_verify(assertion))


def test_replayed_assertion_with_a_new_challenge_cookie_is_refused(browser, query):
    options = browser.login_options()
    assertion = browser.authenticator.get(options, browser.origin)
    assert browser.login_verify(assertion).status_code == 200
    browser.logout()
    browser.login_options()  # a fresh challenge bound to the browser
    assert_refused(query, browser.login_verify(assertion))


def test_expired_challenge_is_refused(app, browser, clock, query):
    options = browser.login_options()
    clock.advance(seconds=app.config["CHALLENGE_TTL"] + 1)
    assert_refused(query, browser.login_verify(browser.authenticator.get(options, browser.origin)))


def test_challenge_from_the_registration_ceremony_is_refused(browser, query):
    browser.login()
    registration = browser.post_json("/auth/register/options", csrf_path="/admin/account").get_json()
    browser.logout()
    with browser.client.session_transaction() as flask_session:
        flask_session["ceremony"] = last_registration_nonce(query)
    assertion = browser.authenticator.get({"challenge": registration["challenge"]}, browser.origin)
    assert_refused(query, browser.login_verify(assertion))


def last_registration_nonce(query) -> str:
    identifier = query.scalar(select(OneTimeSecret.identifier).where(OneTimeSecret.identifier.like("registration:%")))
    return identifier.split(":", 1)[1]


def test_unknown_credential_is_refused(app, browser, query):
    stranger = PasskeyBrowser(app, browser.client, SoftAuthenticator())
    stranger.authenticator.create(
        {"rp": {"id": "localhost"}, "user": {"id": "AAAA"}, "challenge": "AAAA"}, browser.origin
    )
    assert_refused(query, stranger.login())


def test_user_handle_of_another_admin_is_refused(app, browser, client, query):
    other = PasskeyBrowser(app, app.test_client())
    assert other.enroll(invite(app, "Bob")).status_code == 200
    other.logout()
    bob_handle = other.authenticator.credentials[0].user_handle
    assert_refused(query, browser.login(user_handle=bob_handle))


def test_missing_user_handle_is_refused(browser, query):
    options = browser.login_options()
    assertion = browser.authenticator.get(options, browser.origin)
    del assertion["response"]["userHandle"]
    assert_refused(query, browser.login_verify(assertion))


def test_sign_count_regression_is_refused_and_logged_as_a_clone(browser, caplog, query):
    assert browser.login(sign_count=5).status_code == 200
    browser.logout()
    with caplog.at_level(logging.WARNING, logger="app.auth.ceremonies"):
        assert_refused(query, browser.login(sign_count=3))
    assert "possible cloned authenticator" in caplog.text
    assert query.scalar(SIGN_COUNT) == 5


def test_zero_sign_counts_are_allowed_for_synced_passkeys(browser):
    assert browser.login(sign_count=0).status_code == 200
    browser.logout()
    assert browser.login(sign_count=0).status_code == 200


def test_missing_user_verification_is_refused(browser, query):
    assert_refused(query, browser.login(uv=False))


def test_tampered_signature_is_refused(browser, query):
    options = browser.login_options()
    assertion = browser.authenticator.get(options, browser.origin)
    other = browser.authenticator.get(options, "http://localhost")
    assertion["response"]["signature"] = other["response"]["signature"]
    assert_refused(query, browser.login_verify(assertion))


@pytest.mark.parametrize(
    "body",
    [None, {"credential": "nonsense"}, {"credential": {"rawId": 5}}, {"credential": {"rawId": "AA", "response": []}}],
)
def test_malformed_verify_bodies_are_400_not_500(browser, body, query):
    browser.login_options()
    response = browser.client.post(
        "/auth/login/verify",
        data="not json" if body is None else None,
        json=body,
        headers={"X-CSRFToken": browser.csrf_token()},
    )
    assert response.status_code == 400
    assert query.count(AdminLogin) == 0


def test_ceremony_endpoints_need_the_csrf_header(browser):
    assert browser.client.post("/auth/login/options", json={}).status_code == 400


def test_two_concurrent_verifies_of_one_challenge_exactly_one_succeeds(app, browser, query):
    options = browser.login_options()
    # Sign count 0 (a synced passkey), so only the single-use challenge can stop the twin.
    assertion = browser.authenticator.get(options, browser.origin, sign_count=0)
    token = browser.csrf_token()
    # A second client sharing the browser's cookies (same bound challenge).
    twin = app.test_client()
    for name in ("sundown",):
        twin.set_cookie(name, browser.client.get_cookie(name).value)
    barrier = threading.Barrier(2)
    statuses = []

    def verify(client):
        barrier.wait()
        response = client.post("/auth/login/verify", json={"credential": assertion}, headers={"X-CSRFToken": token})
        statuses.append(response.status_code)

    threads = [threading.Thread(target=verify, args=(c,)) for c in (browser.client, twin)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200, 400]
    assert query.count(AdminLogin) == 1
