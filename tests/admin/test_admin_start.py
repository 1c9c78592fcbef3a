"""The Overview's getting-started checklist: each step ticked from what is stored, put away and brought back
by each owner, and shown to nobody else."""

from __future__ import annotations

import json
import re

import pytest
from sqlalchemy import select, update

from app.auth import roles
from app.models import Admin, AdminRole, Form, Preference
from app.notify import settings as notify_settings
from devtools import admins
from tests.factories import add_inquiries, inquiry
from tests.helpers import csrf_token, snapshot

STEPS = ["name", "replies", "form", "site", "inquiry", "notify"]
STEP = re.compile(r'id="start-(\w+)" data-done="(yes|no)"')


def ticks(client) -> dict[str, bool]:
    """Each step of the checklist on the Overview, and whether it is ticked; empty when it is not shown."""
    page = client.get("/admin/overview").get_data(as_text=True)
    return {key: done == "yes" for key, done in STEP.findall(page)}


def post(client, path: str):
    return client.post(path, data={"csrf_token": csrf_token(client, "/admin/account")})


def contact_saved(session, clock) -> None:
    session.execute(update(Form).where(Form.id == 1).values(updated_at=clock()))


def second_form(session, clock) -> None:
    contact = session.get(Form, 1)
    session.add(Form(slug="quote", title={"en": "Quote"}, fields=contact.fields, email_field=contact.email_field))


def site_listed(session, clock) -> None:
    session.get(Form, 1).allowed_origins = ["https://shop.example.org"]


def came_from_a_site(session, clock) -> None:
    add_inquiries(session, [inquiry(clock, origin="https://shop.example.org")])


def any_inquiry(session, clock) -> None:
    add_inquiries(session, [inquiry(clock)])


def site_recipients(session, clock) -> None:
    session.add(Preference(key=notify_settings.EMAILS_KEY, value=json.dumps(["team@example.org"])))


def form_chat(session, clock) -> None:
    session.get(Form, 1).notify_urls = ["ntfy://ntfy.example.org/sundown"]


def own_address(session, clock) -> None:
    session.execute(update(Admin).values(email="ada@example.org"))


# step -> ways of doing it (each arranges the stored state, then commits)
DONE_BY = {
    "replies": [own_address],
    "form": [contact_saved, second_form],
    "site": [site_listed, came_from_a_site],
    "notify": [site_recipients, form_chat],
}


def test_a_new_first_owner_sees_six_steps_to_do_each_linking_where_it_is_done(client, login):
    login("admin")  # the first admin's name until they choose one
    page = client.get("/admin/overview").get_data(as_text=True)
    assert ticks(client) == dict.fromkeys(STEPS, False)
    assert "0 of 6 steps done." in page and 'id="start-dismiss"' in page and "style=" not in page
    for path in ("/admin/account#admin-name", "/admin/account#admin-email", "/admin/forms", "/admin/forms/1#"):
        assert f'href="{path}' in page
    assert 'href="/"' in page and 'href="/admin/notifications"' in page


def test_choosing_a_name_ticks_the_first_step(client, login, query):
    admin = login("admin")
    assert not ticks(client)["name"]

    def rename(session):
        session.get(Admin, admin.id).name = "Ada Lovelace"
        session.commit()

    query.using(rename)
    assert ticks(client) == {**dict.fromkeys(STEPS, False), "name": True}


@pytest.mark.parametrize(
    ("step", "arrange"),
    [pytest.param(step, way, id=f"{step}-{way.__name__}") for step, ways in DONE_BY.items() for way in ways],
)
def test_each_step_is_ticked_from_what_is_stored_and_no_other(client, login, query, clock, step, arrange):
    login("admin")
    assert ticks(client) == dict.fromkeys(STEPS, False)

    def done(session):
        arrange(session, clock)
        session.commit()

    query.using(done)
    expected = {**dict.fromkeys(STEPS, False), step: True}
    if arrange is came_from_a_site:
        expected["inquiry"] = True  # that inquiry is one too
    assert ticks(client) == expected


def test_a_test_inquiry_in_spam_counts_too(client, login, query, clock):
    login("admin")
    query.using(lambda session: add_inquiries(session, [inquiry(clock, status="spam")]))
    assert ticks(client)["inquiry"]


def test_the_operators_addresses_tick_where_replies_come_back(app_config, make_app):
    app = make_app({**app_config, "REPLY_TO": "team@example.org", "NOTIFY_EMAILS": ["team@example.org"]})
    client = app.test_client()
    made = admins.log_in(app, "admin")
    client.set_cookie(made.cookie, made.token)
    found = ticks(client)
    assert found["replies"] and found["notify"] and not found["name"]


def test_an_owner_hides_the_checklist_and_brings_it_back_and_another_owner_still_sees_it(client, app, login, query):
    ada = login("Ada")
    grace_client = app.test_client()
    login("Grace", as_client=grace_client)
    response = post(client, "/admin/overview/start/dismiss")
    assert response.status_code == 303 and response.headers["Location"].endswith("/admin/overview")
    page = client.get("/admin/overview").get_data(as_text=True)
    assert ticks(client) == {} and 'id="start-restore"' in page and 'id="start-dismiss"' not in page
    assert query.scalar(select(Admin.start_dismissed_at).where(Admin.id == ada.id)) is not None
    assert len(ticks(grace_client)) == 6  # her own choice, not Ada's
    assert post(client, "/admin/overview/start/restore").status_code == 303
    assert len(ticks(client)) == 6
    assert query.scalar(select(Admin.start_dismissed_at).where(Admin.id == ada.id)) is None


def test_hiding_needs_the_csrf_token(admin_client, query):
    assert admin_client.post("/admin/overview/start/dismiss").status_code == 400
    assert query(select(Admin.start_dismissed_at)) == [None]


@pytest.mark.parametrize("role", [AdminRole.RESPONDER, AdminRole.VIEWER])
def test_only_owners_see_the_checklist_or_may_hide_it(app, client, login, query, role):
    login("Ada", as_client=app.test_client())  # an owner stays
    admin = login("Rhea")

    def demote(session):
        roles.give(session, session.get(Admin, admin.id), role, [1])
        session.commit()

    query.using(demote)
    page = client.get("/admin/overview").get_data(as_text=True)
    assert "Getting started" not in page and 'id="start-restore"' not in page and ticks(client) == {}
    token = csrf_token(client, "/admin/account")
    before = snapshot(query)
    for path in ("/admin/overview/start/dismiss", "/admin/overview/start/restore"):
        assert client.post(path, data={"csrf_token": token}).status_code == 403
    assert snapshot(query) == before
