"""Login and enrollment attempts are rate limited per client and in all, in the database."""

from __future__ import annotations

import pytest

from app.models import AdminLogin
from tests.softauthn import PasskeyBrowser, invite


@pytest.fixture
def app_config(app_config):
    return {**app_config, "AUTH_RATE_LIMIT_PER_CLIENT": "4/600", "AUTH_RATE_LIMIT_GLOBAL": "1000/600"}


def test_login_attempts_over_the_client_limit_get_429_and_no_session(app, client, clock, query):
    browser = PasskeyBrowser(app, client)
    options = browser.login_options()  # hit 1
    for _ in range(3):  # hits 2..4
        assert browser.post_json("/auth/login/options").status_code == 200
    response = browser.login_verify(browser.authenticator.create(  # hit 5: over
        {"rp": {"id": "localhost"}, "user": {"id": "AA"}, "challenge": options["challenge"]}, browser.origin
    ))
    assert response.status_code == 429
    assert int(response.headers["Retry-After"]) > 0
    assert "Too many requests" in response.get_json()["error"]
    assert query.count(AdminLogin) == 0


def test_a_valid_login_is_refused_while_limited_and_allowed_after_the_window(app, client, clock, query):
    browser = PasskeyBrowser(app, client)
    assert browser.enroll(invite(app, "Ada")).status_code == 200  # 3 hits: page, options, verify
    browser.logout()
    assert query.count(AdminLogin) == 0
    assert browser.post_json("/auth/login/options").status_code == 200  # hit 4
    response = browser.post_json("/auth/login/options")
    assert response.status_code == 429
    clock.advance(seconds=int(response.headers["Retry-After"]))
    assert browser.login().status_code == 200
    assert query.count(AdminLogin) == 1


def test_another_address_is_not_limited_by_the_first(app, clock):
    first = PasskeyBrowser(app, app.test_client())
    for _ in range(4):
        first.post_json("/auth/login/options")
    assert first.post_json("/auth/login/options").status_code == 429
    second = PasskeyBrowser(app, app.test_client())
    second.client.environ_base["REMOTE_ADDR"] = "127.0.0.2"
    assert second.post_json("/auth/login/options").status_code == 200


def test_enrollment_links_are_rate_limited(app, client):
    url = invite(app, "Ada").removeprefix("http://localhost")
    for _ in range(4):
        assert client.get(url).status_code == 200
    response = client.get(url)
    assert response.status_code == 429
    assert "Retry-After" in response.headers
    assert "Too many requests" in response.get_data(as_text=True)


def test_the_global_limit_holds_across_addresses(make_app, app_config):
    application = make_app({**app_config, "AUTH_RATE_LIMIT_PER_CLIENT": "100/600", "AUTH_RATE_LIMIT_GLOBAL": "3/600"})
    statuses = []
    for number in range(4):
        browser = PasskeyBrowser(application, application.test_client())
        browser.client.environ_base["REMOTE_ADDR"] = f"127.0.0.{number + 1}"
        statuses.append(browser.post_json("/auth/login/options").status_code)
    assert statuses == [200, 200, 200, 429]
