"""Every /admin route, present and future, needs a live session and, for writes, a CSRF token,
and no admin response may be cached.

The routes come from the app's URL map at run time, so a route added later
is checked without editing this file.
"""

from __future__ import annotations

import re

import pytest

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
EVERY_METHOD = None
SAMPLE = {"int": "1", "float": "1.0", "uuid": "00000000-0000-0000-0000-000000000000"}
# Ids that no row has: a logged-in request must not revoke its own session on the way.
UNKNOWN = {**SAMPLE, "int": "999999"}
EXPECTED_AT_LEAST = {("GET", "/admin/account"), ("POST", "/admin/account/invite")}


def admin_routes(app, methods=METHODS, sample=SAMPLE) -> list[tuple[str, str]]:
    """(method, concrete URL) for every rule under /admin; ``methods=EVERY_METHOD`` adds HEAD and OPTIONS."""
    routes = []
    for rule in app.url_map.iter_rules():
        if not (rule.rule == "/admin" or rule.rule.startswith("/admin/")):
            continue
        url = rule.rule
        for converter, name in re.findall(r"<(?:(\w+)(?:\([^)]*\))?:)?(\w+)>", rule.rule):
            pattern = re.compile(r"<[^>]*\b" + name + ">")
            url = pattern.sub(sample.get(converter, "x"), url)
        routes.extend((method, url) for method in sorted(rule.methods) if methods is EVERY_METHOD or method in methods)
    return routes


def csrf_header(client) -> dict:
    page = client.get("/auth/login").get_data(as_text=True)
    return {"X-CSRFToken": re.search(r'name="csrf-token" content="([^"]+)"', page).group(1)}


def test_the_url_map_holds_the_admin_routes(app):
    assert set(admin_routes(app)) >= EXPECTED_AT_LEAST


def test_without_a_session_html_requests_are_sent_to_the_login_page(app, client):
    headers = csrf_header(client)  # a valid token, so only the login check can refuse
    for method, url in admin_routes(app):
        response = client.open(url, method=method, headers={**headers, "Accept": "text/html"})
        assert response.status_code == 302, (method, url, response.status_code)
        assert response.headers["Location"].startswith("/auth/login"), (method, url)


def test_without_a_session_json_requests_get_401(app, client):
    headers = csrf_header(client)
    for method, url in admin_routes(app):
        response = client.open(url, method=method, headers={**headers, "Accept": "application/json"})
        assert response.status_code == 401, (method, url, response.status_code)
        assert response.get_json()["ok"] is False


def test_every_admin_response_says_no_store_and_an_anonymous_request_is_refused(app, client, login):
    routes = admin_routes(app, methods=EVERY_METHOD, sample=UNKNOWN)
    assert {"HEAD", "OPTIONS"} <= {method for method, _url in routes}
    anonymous = app.test_client()
    headers = csrf_header(client)  # before login: the login page sends a logged-in admin on
    login()
    for method, url in routes:
        response = client.open(url, method=method, headers=headers)
        assert response.headers.get("Cache-Control") == "no-store", (method, url)
        assert response.status_code != 401, (method, url)
        assert not response.headers.get("Location", "").startswith("/auth/login"), (method, url)
        for accept in ("text/html", "application/json"):
            refused = anonymous.open(url, method=method, headers={"Accept": accept})
            assert refused.status_code in (302, 400, 401), (method, url, accept, refused.status_code)
            if refused.status_code == 302:
                assert refused.headers["Location"].startswith("/auth/login"), (method, url, accept)


def test_an_expired_session_is_no_session(app, client, login, clock):
    login()
    clock.advance(seconds=app.config["LOGIN_LIFETIME"])
    for method, url in admin_routes(app):
        if method == "GET":
            assert client.get(url).status_code == 302, url


def test_writes_without_a_csrf_token_are_refused_when_logged_in(app, client, login):
    login()
    for method, url in admin_routes(app):
        if method == "GET":
            continue
        for accept in ("text/html", "application/json"):
            response = client.open(url, method=method, headers={"Accept": accept})
            assert response.status_code == 400, (method, url, accept, response.status_code)


def test_a_new_admin_route_without_login_required_is_still_protected(app_config, make_app):
    application = make_app(app_config)
    application.add_url_rule("/admin/added-later", "added_later", lambda: "secret")
    response = application.test_client().get("/admin/added-later")
    assert response.status_code == 302
    assert "secret" not in response.get_data(as_text=True)


@pytest.mark.parametrize("path", ["/administrator", "/admin-help"])
def test_only_the_admin_area_is_guarded(client, path):
    assert client.get(path).status_code == 404


def test_a_page_request_returns_to_its_page_after_login(client):
    location = client.get("/admin/account").headers["Location"]
    assert location == "/auth/login?next=/admin/account"
