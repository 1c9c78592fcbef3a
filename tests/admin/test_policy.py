"""The one guard and its policy: every /admin endpoint needs a listed permission, and an admin without it
changes nothing.

The walks below narrow the set (``permissions_for`` monkeypatched) and try
every route with every method on real rows; ``test_roles.py`` walks them as
each real role, with forms given and not.
"""

from __future__ import annotations

import os
import re

import pytest
from sqlalchemy import select

from app.admin import policy
from app.auth import permissions
from app.auth.permissions import Permission
from app.models import AdminLogin, Delivery, InboundMessage, Passkey, Tag
from devtools import admins
from tests.admin.test_authz import admin_routes
from tests.factories import add_file, add_inquiries, inquiry
from tests.helpers import csrf_token, settle, snapshot

EVERY = None  # every method a rule allows, HEAD and OPTIONS included
NARROWER = {
    "nothing": frozenset(),
    "read only": frozenset({Permission.READ}),
    "a viewer": frozenset({Permission.READ, Permission.PEOPLE, Permission.ACCOUNT}),
    "a responder": frozenset(
        {Permission.READ, Permission.MARK, Permission.ANSWER, Permission.TRIAGE, Permission.DELETE, Permission.ACCOUNT}
    ),
}
# One value for every field any admin form reads: enough for each action to do something if let through.
FIELDS = {
    "confirm": "1",
    "through": "999999",
    "reason": "A claim",
    "retention_days": "30",
    "spam_retention_days": "7",
    "email": "ada@example.com",
    "locale": "ja",
    "name": "Renamed",
    "subject": "Re: Hello",
    "body": "Thanks",
    "emails": "team@example.org",
    "digest_minutes": "5",
    "chat_urls": "ntfy://ntfy.invalid/sundown",  # a host that never resolves: nothing leaves the machine
    "include_content": "1",
    "action": "save",
    "slug": "contact",
    "folder": "inbox",
    "state": "closed",
    "role": "viewer",
}
DELETING = {"admin.delete_inquiries", "admin.delete_all_spam", "admin.person_erase"}


def endpoint_of(app, url: str, method: str) -> str:
    adapter = app.url_map.bind("localhost")
    return adapter.match(url, method=method)[0]


@pytest.fixture
def arranged(app, query, login, clock):
    """Real rows for every id an admin URL names: an inquiry with a file, spam, another admin, a passkey, a
    second login of this admin. Returns the logged-in client, a CSRF token and the ids by URL variable."""
    client = app.test_client()
    ada = login("Ada", as_client=client)
    grace = login("Grace", as_client=app.test_client())
    login(admin=ada, as_client=app.test_client())  # a second browser of Ada's, for the revoke route

    def rows(session):
        inbox, spam = add_inquiries(session, [inquiry(clock), inquiry(clock, status="spam")])
        file_id = add_file(session, inbox, b"hello")
        session.add(Passkey(admin_id=ada.id, credential_id=os.urandom(16), public_key=b"key", name="Laptop"))
        tag = Tag(name="urgent")
        session.add(tag)
        held = InboundMessage(
            inquiry_id=inbox,
            state="held",
            kind="message",
            sender="ada@work.example",
            sender_name="",
            subject="Hello",
            body="Hi",
            files_refused=0,
            received_at=clock(),
        )
        failed = Delivery(
            inquiry_id=inbox, channel="slack", kind="inquiry", status="failed", attempts=1,
            next_attempt_at=clock(), idempotency_key="msg_policy", created_at=clock(), finished_at=clock(),
        )  # fmt: skip
        session.add_all([held, failed])
        session.commit()
        logins = session.scalars(select(AdminLogin.id).where(AdminLogin.admin_id == ada.id).order_by(AdminLogin.id))
        passkey = session.scalar(select(Passkey.id).where(Passkey.admin_id == ada.id))
        return {
            "inquiry_id": inbox,
            "attachment_id": file_id,
            "admin_id": grace.id,
            "passkey_id": passkey,
            "login_id": list(logins)[-1],
            "form_id": 1,
            "spam_id": spam,
            "tag_id": tag.id,
            "message_id": held.id,
            "delivery_id": failed.id,
        }

    ids = query.using(rows)
    token = csrf_token(client, "/admin/")
    settle(app)  # the inbox page asked for the first cleanup: done before anything is compared
    return client, token, ids


def concrete(app, ids: dict, methods=EVERY) -> list[tuple[str, str]]:
    """(method, URL) of every admin route, its variables filled with the arranged rows' ids."""
    routes = []
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/admin"):
            continue
        url = re.sub(r"<(?:\w+:)?(\w+)>", lambda match: str(ids[match.group(1)]), rule.rule)
        routes += [(method, url) for method in sorted(rule.methods) if methods is EVERY or method in methods]
    return routes


def send(client, method: str, url: str, token: str, ids: dict):
    data = {
        **FIELDS,
        "csrf_token": token,
        "ids": [str(ids["inquiry_id"]), str(ids["spam_id"])],
        "tags": str(ids["tag_id"]),
        "admin_id": str(ids["admin_id"]),
    }
    return client.open(
        url,
        method=method,
        data=data if method == "POST" else None,
        headers={"X-CSRFToken": token, "Accept": "text/html"},
    )


def test_every_admin_endpoint_is_in_the_policy_and_every_entry_names_one(app):
    endpoints = {endpoint_of(app, url, method) for method, url in admin_routes(app)}
    assert sorted(endpoints - set(policy.POLICY)) == []  # a new route needs its permission listed
    assert sorted(set(policy.POLICY) - endpoints) == []  # and a listed endpoint needs its route
    assert all(isinstance(needed, Permission) for needed in policy.POLICY.values())


def test_an_owner_holds_every_permission_on_every_form(app, login):
    ada = login("Ada")
    assert permissions.permissions_for(ada) == frozenset(Permission)
    assert all(permissions.forms_for(ada, each) is None for each in Permission)


def test_an_endpoint_missing_from_the_policy_is_refused(admin_client, monkeypatch, caplog):
    assert admin_client.get("/admin/account").status_code == 200
    # A copy without the endpoint: the table itself keeps its order for the tests after this one.
    monkeypatch.setattr(
        policy, "POLICY", {key: value for key, value in policy.POLICY.items() if key != "admin.account"}
    )
    response = admin_client.get("/admin/account")
    assert response.status_code == 403
    assert "does not have permission" in response.get_data(as_text=True)
    assert "'admin.account' is not in app.admin.policy" in caplog.text


def test_an_admin_route_outside_the_blueprint_is_refused_too(app_config, make_app, login):
    application = make_app(app_config)
    application.add_url_rule("/admin/added-later", "added_later", lambda: "secret")
    client = application.test_client()
    made = admins.log_in(application, "Ada")
    client.set_cookie(made.cookie, made.token)
    response = client.get("/admin/added-later")
    assert response.status_code == 403 and "secret" not in response.get_data(as_text=True)


@pytest.mark.parametrize("who", sorted(NARROWER))
def test_a_narrower_permission_set_is_refused_every_other_route_and_changes_nothing(
    app, arranged, query, monkeypatch, who
):
    client, token, ids = arranged
    held = NARROWER[who]
    monkeypatch.setattr(permissions, "permissions_for", lambda admin: held)
    refused = allowed = 0
    for method, url in concrete(app, ids):
        needed = policy.POLICY[endpoint_of(app, url, method)]
        before = snapshot(query)
        response = send(client, method, url, token, ids)
        if needed in held:
            assert response.status_code != 403, (method, url)
            allowed += 1
            continue
        assert response.status_code == 403, (method, url, response.status_code)
        assert snapshot(query) == before, (method, url)
        refused += 1
    assert refused > 0 and allowed == sum(
        1 for method, url in concrete(app, ids) if policy.POLICY[endpoint_of(app, url, method)] in held
    )


def test_with_every_permission_the_same_requests_do_change_things(app, arranged, query):
    """The walk above can fail: let through, its requests write (so "nothing changed" means refused)."""
    client, token, ids = arranged
    changed = []
    routes = [(endpoint_of(app, url, method), method, url) for method, url in concrete(app, ids, methods=("POST",))]
    for endpoint, method, url in sorted(routes, key=lambda route: route[0] in DELETING):  # deletions last
        before = snapshot(query)
        send(client, method, url, token, ids)
        if snapshot(query) != before:
            changed.append(endpoint)
    assert len(changed) >= 20, changed


def test_no_get_changes_anything_but_the_openers_own_record(app, arranged, query):
    client, token, ids = arranged
    before = snapshot(query, skip=("inquiry_views", "accesses"))
    for method, url in concrete(app, ids, methods=("GET", "HEAD")):
        send(client, method, url, token, ids)
    settle(app)
    assert snapshot(query, skip=("inquiry_views", "accesses")) == before


def test_templates_hide_what_the_admin_cannot_do(app, arranged, monkeypatch):
    client, _token, ids = arranged
    detail = f"/admin/inquiries/{ids['inquiry_id']}"
    everything = client.get(detail).get_data(as_text=True)
    for action in (
        "Mark answered",
        "Place hold",
        "Delete this inquiry",
        'id="reply"',
        'href="/admin/forms"',
        "Save state",
        "Add note",
        'href="/admin/tags"',
    ):
        assert action in everything, action
    monkeypatch.setattr(permissions, "permissions_for", lambda admin: NARROWER["read only"])
    page = client.get(detail).get_data(as_text=True)
    for action in (
        "Mark answered",
        "Place hold",
        "Delete this inquiry",
        'id="reply"',
        'href="/admin/forms"',
        'href="/admin/people"',
        'href="/admin/retention"',
        'href="/admin/admins"',
        'href="/admin/account"',
    ):
        assert action not in page, action
    assert "Mark unread" not in page and "Save state" not in page and "Add note" not in page
    monkeypatch.setattr(permissions, "permissions_for", lambda admin: NARROWER["read only"] | {Permission.MARK})
    assert "Mark unread" in client.get(detail).get_data(as_text=True)  # one's own read mark
    inbox = client.get("/admin/").get_data(as_text=True)
    assert 'name="ids"' not in inbox and "Delete selected" not in inbox and "Export CSV" not in inbox
    spam = client.get("/admin/spam").get_data(as_text=True)
    assert "Delete all spam" not in spam and "Not spam" not in spam
