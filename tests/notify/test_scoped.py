"""A responder's or viewer's address among the recipients hears only of the inquiries of their forms.

Every test runs on SQLite and PostgreSQL against the real SMTP server of conftest.py.
"""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.models import Admin, AdminForm, Delivery, Form, Inquiry, Preference
from tests.helpers import VALID, solution
from tests.notify.conftest import ADMIN_ADDRESS
from tests.notify.steps import request_after

# Rita's account says rita@example.org: a recipient is matched to an admin in any case.
RITA, OLGA, VIC = "Rita@Example.org", "olga@example.org", "vic@example.org"
RECIPIENTS = [ADMIN_ADDRESS, RITA, OLGA, VIC]
EMAILS = select(Delivery).where(Delivery.channel == "email").order_by(Delivery.id)


@pytest.fixture
def app_config(app_config) -> dict:
    return {**app_config, "NOTIFY_EMAILS": RECIPIENTS}


@pytest.fixture
def team(query) -> None:
    """The quote form beside contact; Rita a responder of quote, Vic a viewer of no form, Olga an owner: each
    with their address. (Arranged in a session of its own: a test's app context would outlive the requests.)"""

    def arrange(session):
        contact = session.get(Form, 1)
        quote = Form(slug="quote", title={"en": "Quote"}, fields=contact.fields, email_field=contact.email_field)
        session.add(quote)
        people = (("Rita", "responder", "rita@example.org"), ("Vic", "viewer", VIC), ("Olga", "owner", OLGA))
        admins = [Admin(name=name, user_handle=name.encode() * 8, role=role, email=to) for name, role, to in people]
        session.add_all(admins)
        session.flush()
        session.add(AdminForm(admin_id=admins[0].id, form_id=quote.id))
        session.commit()

    query.using(arrange)


def send(client, slug: str, name: str) -> None:
    """A person's inquiry to the form ``slug``; waits for the work after it."""
    path = "/api/inquiries" if slug == "contact" else f"/api/forms/{slug}/inquiries"
    with client.post(path, json={**VALID, "name": name, "altcha": solution(client)}) as response:
        assert response.status_code == 201, response.get_data(as_text=True)
    request_after(client)


def recipients_of(mail) -> list[list[str]]:
    """Each e-mail's envelope recipients, in lower case (the settings keep a domain in lower case)."""
    return [sorted(address.lower() for address in rcpt) for rcpt, _bytes in mail.envelopes]


def to(message) -> str:
    return message["To"].lower()


def digest_every_ten_minutes(query) -> None:
    def save(session):
        session.add(Preference(key="notify_digest_minutes", value="10"))
        session.commit()

    query.using(save)


def test_each_inquirys_email_goes_only_to_the_addresses_that_see_its_form(client, team, mail, query):
    send(client, "contact", "Carla Contact")
    send(client, "quote", "Quentin Quote")
    assert recipients_of(mail) == [
        sorted([ADMIN_ADDRESS, OLGA]),  # Rita and Vic are not given the contact form
        sorted([ADMIN_ADDRESS, OLGA, RITA.lower()]),  # Rita is given quote; Vic no form at all
    ]
    assert to(mail.messages[1]) == ", ".join([ADMIN_ADDRESS, RITA, OLGA]).lower()
    assert {row.status for row in query(EMAILS)} == {"done"}


def test_a_digest_lists_for_each_address_only_the_inquiries_of_its_forms(client, team, clock, mail, query):
    digest_every_ten_minutes(query)
    for slug, name in (("contact", "Carla"), ("quote", "Quentin"), ("contact", "Cleo")):
        send(client, slug, name)
    assert mail.messages == []
    clock.moment = max(row.next_attempt_at for row in query(EMAILS))
    request_after(client)
    ids = dict(query.rows(select(Inquiry.name, Inquiry.id)))
    everything, scoped = sorted(mail.messages, key=lambda message: message["Subject"], reverse=True)
    assert everything["Subject"] == "3 new inquiries" and to(everything) == f"{ADMIN_ADDRESS}, {OLGA}"
    assert scoped["Subject"] == "1 new inquiry" and to(scoped) == RITA.lower()
    assert f"/admin/inquiries/{ids['Quentin']}" in scoped.get_payload()
    assert all(f"/admin/inquiries/{ids[name]}" not in scoped.get_payload() for name in ("Carla", "Cleo"))
    assert all(f"/admin/inquiries/{each}" in everything.get_payload() for each in ids.values())
    assert everything["Message-ID"] != scoped["Message-ID"]
    assert [row.status for row in query(EMAILS)] == ["done"] * 3


def test_a_refused_scoped_digest_retries_only_the_inquiries_it_listed(client, team, clock, mail, query):
    digest_every_ten_minutes(query)
    send(client, "contact", "Carla")
    send(client, "quote", "Quentin")
    mail.mailbox.refused.update({"Rita@Example.org", "Rita@example.org"})
    clock.moment = max(row.next_attempt_at for row in query(EMAILS))
    request_after(client)
    assert recipients_of(mail) == [sorted([ADMIN_ADDRESS, OLGA])]  # Rita's was refused
    statuses = dict(query.rows(select(Inquiry.name, Delivery.status).join(Delivery).where(Delivery.channel == "email")))
    assert statuses == {"Carla": "done", "Quentin": "pending"}


def test_an_inquiry_no_recipient_may_see_is_done_with_no_email(app_config, make_app, team, mail, query):
    client = make_app({**app_config, "NOTIFY_EMAILS": [RITA, VIC]}).test_client()
    send(client, "contact", "Carla")
    assert mail.envelopes == []
    [row] = query(EMAILS)
    assert (row.status, row.attempts, row.last_error) == ("done", 1, None)
    send(client, "quote", "Quentin")
    assert recipients_of(mail) == [[RITA.lower()]]


def test_a_role_changed_before_the_send_decides_who_hears(client, team, clock, mail, query):
    digest_every_ten_minutes(query)
    send(client, "contact", "Carla")

    def promote(session):
        session.scalar(select(Admin).where(Admin.name == "Vic")).role = "owner"
        session.commit()

    query.using(promote)  # while the e-mail waits for its digest
    clock.moment = max(row.next_attempt_at for row in query(EMAILS))
    request_after(client)
    assert recipients_of(mail) == [sorted([ADMIN_ADDRESS, OLGA, VIC])]
