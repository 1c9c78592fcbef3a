"""Server-side sessions: absolute and idle expiry with the injected clock, revoke, listing."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.models import AdminLogin
from tests.helpers import csrf_token

def rows(app) -> list[AdminLogin]:
    with app.app_context():
        from app.db import get_session

        return list(get_session().scalars(select(AdminLogin).order_by(AdminLogin.id)))


def test_a_session_dies_at_its_absolute_lifetime_even_when_active(app, client, login, clock):
    login()
    lifetime = app.config["SESSION_LIFETIME"]
    for _ in range(lifetime // 3600 - 1):
        clock.advance(hours=1)
        assert client.get("/admin/account").status_code == 200
    clock.advance(seconds=3600 - 1)
    assert client.get("/admin/account").status_code == 200
    clock.advance(seconds=1)
    assert client.get("/admin/account").status_code == 302


def test_a_session_dies_after_the_idle_timeout(app, client, login, clock):
    login()
    clock.advance(seconds=app.config["SESSION_IDLE_TIMEOUT"] - 1)
    assert client.get("/admin/account").status_code == 200
    clock.advance(seconds=app.config["SESSION_IDLE_TIMEOUT"] - 1)
    assert client.get("/admin/account").status_code == 200  # the last visit reset the idle clock
    clock.advance(seconds=app.config["SESSION_IDLE_TIMEOUT"])
    assert client.get("/admin/account").status_code == 302


def test_an_expired_row_is_refused_before_the_pruner_deletes_it(app, client, login, clock):
    login()
    clock.advance(seconds=app.config["SESSION_LIFETIME"] + 1)
    assert client.get("/admin/account", headers={"Accept": "application/json"}).status_code == 401
    assert len(rows(app)) == 1


def test_last_seen_is_written_at_most_once_a_minute(app, client, login, clock):
    login()
    start = rows(app)[0].last_seen_at
    clock.advance(seconds=59)
    client.get("/admin/account")
    assert rows(app)[0].last_seen_at == start
    clock.advance(seconds=1)
    client.get("/admin/account")
    assert rows(app)[0].last_seen_at == clock()


def test_account_page_lists_sessions_and_marks_this_browser(app, client, login):
    admin = login("Ada")
    phone = app.test_client()
    login_as_same_admin(app, admin, phone)
    token = phone.get_cookie("sundown_admin").value
    page = client.get("/admin/account").get_data(as_text=True)
    assert "Chrome 156 on Linux" in page and "Safari 18 on iOS" in page
    assert page.count("this browser") == 1
    assert token not in page


def test_revoking_another_session_logs_that_browser_out(app, client, login):
    admin = login("Ada")
    phone = app.test_client()
    login_as_same_admin(app, admin, phone)
    phone_row = rows(app)[1]
    response = client.post(
        f"/admin/account/sessions/{phone_row.id}/revoke", data={"csrf_token": csrf_token(client, "/admin/account")}
    )
    assert response.status_code == 303
    assert [row.id for row in rows(app)] != [] and phone_row.id not in [row.id for row in rows(app)]
    assert phone.get("/admin/account").status_code == 302
    assert client.get("/admin/account").status_code == 200


def test_revoking_this_session_logs_out_here(app, client, login):
    login("Ada")
    own = rows(app)[0]
    response = client.post(
        f"/admin/account/sessions/{own.id}/revoke", data={"csrf_token": csrf_token(client, "/admin/account")}
    )
    assert response.headers["Location"].endswith("/auth/login")
    assert rows(app) == []
    assert client.get("/admin/account").status_code == 302


def test_an_admin_cannot_revoke_someone_elses_session(app, client, login):
    login("Ada")
    mallory = app.test_client()
    login("Mallory", as_client=mallory)
    ada_row = rows(app)[0]
    mallory.post(
        f"/admin/account/sessions/{ada_row.id}/revoke",
        data={"csrf_token": csrf_token(mallory, "/admin/account")},
    )
    assert len(rows(app)) == 2
    assert client.get("/admin/account").status_code == 200


def test_a_forged_cookie_is_not_a_session(app, client, login):
    login()
    client.set_cookie("sundown_admin", "0" * 64)
    assert client.get("/admin/account").status_code == 302


def login_as_same_admin(app, admin, other_client) -> None:
    with app.test_request_context():
        from app.auth import logins
        from app.db import get_session

        token, _row = logins.start_login(admin.id, None, "Safari 18 on iOS")
        get_session().commit()
        other_client.set_cookie(logins.cookie_name(), token)


@pytest.mark.parametrize("origin, name", [("http://localhost", "sundown_admin"), ("https://inbox.example.org", "__Host-sundown_admin")])
def test_session_cookie_flags(make_app, app_config, origin, name):
    application = make_app({**app_config, "ORIGIN": origin, "RP_ID": origin.split("//")[1]})
    with application.test_request_context():
        from flask import make_response

        from app.auth import logins

        response = make_response("")
        logins.set_cookie(response, "t" * 64)
    header = response.headers["Set-Cookie"]
    assert header.startswith(f"{name}=") and "HttpOnly" in header and "SameSite=Lax" in header
    assert "Path=/" in header and "Domain" not in header
    assert ("Secure" in header) == origin.startswith("https")


def test_the_login_page_sends_a_logged_in_admin_on(client, login):
    assert client.get("/auth/login").status_code == 200
    login()
    response = client.get("/auth/login?next=/admin/settings")
    assert response.status_code == 302 and response.headers["Location"] == "/admin/settings"
    response = client.get("/auth/login?next=https://evil.example/")
    assert response.headers["Location"] == "/admin/"
