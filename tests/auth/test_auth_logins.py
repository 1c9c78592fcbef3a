"""Admin logins (server-side, a row each): absolute and idle expiry with the injected clock, revoke, listing."""

from __future__ import annotations

import pytest
from flask import make_response
from sqlalchemy import select

from app.auth import logins
from app.models import AdminLogin
from tests.helpers import csrf_token

LOGINS = select(AdminLogin).order_by(AdminLogin.id)


def test_a_login_dies_at_its_absolute_lifetime_even_when_active(app, client, login, clock):
    login()
    lifetime = app.config["LOGIN_LIFETIME"]
    for _ in range(lifetime // 3600 - 1):
        clock.advance(hours=1)
        assert client.get("/admin/account").status_code == 200
    clock.advance(seconds=3600 - 1)
    assert client.get("/admin/account").status_code == 200
    clock.advance(seconds=1)
    assert client.get("/admin/account").status_code == 302


def test_a_login_dies_after_the_idle_timeout(app, client, login, clock):
    login()
    clock.advance(seconds=app.config["LOGIN_IDLE_TIMEOUT"] - 1)
    assert client.get("/admin/account").status_code == 200
    clock.advance(seconds=app.config["LOGIN_IDLE_TIMEOUT"] - 1)
    assert client.get("/admin/account").status_code == 200  # the last visit reset the idle clock
    clock.advance(seconds=app.config["LOGIN_IDLE_TIMEOUT"])
    assert client.get("/admin/account").status_code == 302


def test_an_expired_row_is_refused_before_the_cleanup_deletes_it(app, client, login, clock, query):
    login()
    clock.advance(seconds=app.config["LOGIN_LIFETIME"] + 1)
    assert client.get("/admin/account", headers={"Accept": "application/json"}).status_code == 401
    assert len(query(LOGINS)) == 1


def test_last_seen_is_written_at_most_once_a_minute(client, login, clock, query):
    login()
    start = query(LOGINS)[0].last_seen_at
    clock.advance(seconds=59)
    client.get("/admin/account")
    assert query(LOGINS)[0].last_seen_at == start
    clock.advance(seconds=1)
    client.get("/admin/account")
    assert query(LOGINS)[0].last_seen_at == clock()


def test_account_page_lists_logins_and_marks_this_browser(app, client, login):
    admin = login("Ada")
    phone = app.test_client()
    login(admin=admin, as_client=phone, browser="Safari 18 on iOS")
    token = phone.get_cookie("sundown_admin").value
    page = client.get("/admin/account").get_data(as_text=True)
    assert "Chrome 156 on Linux" in page and "Safari 18 on iOS" in page
    assert page.count("this browser") == 1
    assert token not in page


def test_revoking_another_login_logs_that_browser_out(app, client, login, query):
    admin = login("Ada")
    phone = app.test_client()
    login(admin=admin, as_client=phone, browser="Safari 18 on iOS")
    phone_row = query(LOGINS)[1]
    response = client.post(
        f"/admin/account/logins/{phone_row.id}/revoke", data={"csrf_token": csrf_token(client, "/admin/account")}
    )
    assert response.status_code == 303
    assert [row.id for row in query(LOGINS)] != [] and phone_row.id not in [row.id for row in query(LOGINS)]
    assert phone.get("/admin/account").status_code == 302
    assert client.get("/admin/account").status_code == 200


def test_revoking_this_login_logs_out_here(client, login, query):
    login("Ada")
    own = query(LOGINS)[0]
    response = client.post(
        f"/admin/account/logins/{own.id}/revoke", data={"csrf_token": csrf_token(client, "/admin/account")}
    )
    assert response.headers["Location"].endswith("/auth/login")
    assert query(LOGINS) == []
    assert client.get("/admin/account").status_code == 302


def test_an_admin_cannot_revoke_someone_elses_login(app, client, login, query):
    login("Ada")
    mallory = app.test_client()
    login("Mallory", as_client=mallory)
    ada_row = query(LOGINS)[0]
    mallory.post(
        f"/admin/account/logins/{ada_row.id}/revoke",
        data={"csrf_token": csrf_token(mallory, "/admin/account")},
    )
    assert len(query(LOGINS)) == 2
    assert client.get("/admin/account").status_code == 200


def test_a_forged_cookie_is_not_a_login(client, login):
    login()
    client.set_cookie("sundown_admin", "0" * 64)
    assert client.get("/admin/account").status_code == 302


@pytest.mark.parametrize(
    "origin, name", [("http://localhost", "sundown_admin"), ("https://inbox.example.org", "__Host-sundown_admin")]
)
def test_login_cookie_flags(make_app, app_config, origin, name):
    application = make_app({**app_config, "ORIGIN": origin, "RP_ID": origin.split("//")[1]})
    with application.test_request_context():
        response = make_response("")
        logins.set_cookie(response, "t" * 64)
    header = response.headers["Set-Cookie"]
    assert header.startswith(f"{name}=") and "HttpOnly" in header and "SameSite=Lax" in header
    assert "Path=/" in header and "Domain" not in header
    assert ("Secure" in header) == origin.startswith("https")


def test_the_login_page_sends_a_logged_in_admin_on(client, login):
    assert client.get("/auth/login").status_code == 200
    login()
    response = client.get("/auth/login?next=/admin/retention")
    assert response.status_code == 302 and response.headers["Location"] == "/admin/retention"
    response = client.get("/auth/login?next=https://evil.example/")
    assert response.headers["Location"] == "/admin/overview"
