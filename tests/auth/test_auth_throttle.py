"""Login and enrollment attempts are rate limited per client, and failures in all, so no stranger locks admins out."""

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
    response = browser.login_verify(
        browser.authenticator.create(  # hit 5: over
            {"rp": {"id": "localhost"}, "user": {"id": "AA"}, "challenge": options["challenge"]}, browser.origin
        )
    )
    assert response.status_code == 429
    assert int(response.headers["Retry-After"]) > 0
    assert "Too many requests" in response.get_json()["error"]
    assert query.count(AdminLogin) == 0


def test_a_valid_login_is_refused_while_limited_and_allowed_after_the_window(app, client, clock, query):
    browser = PasskeyBrowser(app, client)
    assert browser.enroll(invite(app, "Ada")).status_code == 200  # 2 hits: options, verify (the page is free)
    browser.logout()
    assert query.count(AdminLogin) == 0
    for _ in range(2):  # hits 3, 4
        assert browser.post_json("/auth/login/options").status_code == 200
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


def test_enrollment_attempts_are_rate_limited_but_its_page_never_is(app, client):
    url = invite(app, "Ada").removeprefix("http://localhost")
    browser = PasskeyBrowser(app, client)
    for _ in range(10):
        assert client.get(url).status_code == 200
    for _ in range(4):
        assert browser.post_json(f"{url}/options").status_code == 200
    response = browser.post_json(f"{url}/options")
    assert response.status_code == 429
    assert "Retry-After" in response.headers
    assert "Too many requests" in response.get_json()["error"]


def test_an_ipv6_client_is_its_64_so_rotating_addresses_in_it_gains_nothing(app):
    statuses = []
    for number in range(5):
        browser = PasskeyBrowser(app, app.test_client())
        browser.client.environ_base["REMOTE_ADDR"] = f"2001:db8:1:2:{number:x}::1"
        statuses.append(browser.post_json("/auth/login/options").status_code)
    assert statuses == [200, 200, 200, 200, 429]
    other = PasskeyBrowser(app, app.test_client())
    other.client.environ_base["REMOTE_ADDR"] = "2001:db8:1:3::1"  # another /64
    assert other.post_json("/auth/login/options").status_code == 200


@pytest.fixture
def strangers_limits(make_app, app_config):
    return make_app({**app_config, "AUTH_RATE_LIMIT_PER_CLIENT": "4/600", "AUTH_RATE_LIMIT_GLOBAL": "3/600"})


def test_no_number_of_strangers_can_lock_an_admin_out(strangers_limits, query):
    application = strangers_limits
    admin = PasskeyBrowser(application, application.test_client())
    admin.client.environ_base["REMOTE_ADDR"] = "192.0.2.10"
    assert admin.enroll(invite(application, "Ada")).status_code == 200
    admin.logout()
    link = invite(application, "Bob").removeprefix("http://localhost")
    statuses = []
    for number in range(60):  # 60 addresses (each its own /64): pages, guessed links, wrong passkeys
        stranger = PasskeyBrowser(application, application.test_client())
        stranger.client.environ_base["REMOTE_ADDR"] = f"2001:db8:{number:x}::1"
        assert stranger.client.get(f"/auth/enroll/guess{number}").status_code == 410
        assert stranger.client.get(link).status_code == 200
        stranger.post_json(f"/auth/enroll/guess{number}/options")
        options = stranger.post_json("/auth/login/options")
        if options.status_code == 200:  # refused (429) once the strangers' failures pass the global limit
            stranger.login_verify(
                stranger.authenticator.create(
                    {"rp": {"id": "localhost"}, "user": {"id": "AA"}, "challenge": options.get_json()["challenge"]},
                    stranger.origin,
                )
            )
        statuses.append(options.status_code)
    assert statuses[0] == 200 and set(statuses[10:]) == {429}  # failed strangers are refused
    assert admin.login().status_code == 200  # the admin never failed: the global limit does not apply
    assert query.count(AdminLogin) == 1
    failed = PasskeyBrowser(application, application.test_client())
    failed.client.environ_base["REMOTE_ADDR"] = "2001:db8:0::5"  # in the first stranger's /64, which failed
    assert failed.post_json("/auth/login/options").status_code == 429


def test_failures_below_the_global_limit_refuse_nobody(strangers_limits):
    application = strangers_limits
    for number in range(2):
        stranger = PasskeyBrowser(application, application.test_client())
        stranger.client.environ_base["REMOTE_ADDR"] = f"198.51.100.{number + 1}"
        assert stranger.post_json(f"/auth/enroll/guess{number}/options").status_code == 410
    again = PasskeyBrowser(application, application.test_client())
    again.client.environ_base["REMOTE_ADDR"] = "198.51.100.1"
    assert again.post_json("/auth/login/options").status_code == 200
