"""A person's answer is told to the inquiry's assignee too, at their own address (kind ``assignee``): the same
e-mail the recipients get, once per address, and never to an assignee who no longer reads the form.

Every test runs on SQLite and PostgreSQL against the real SMTP server of conftest.py.
"""

from __future__ import annotations

import pytest
from sqlalchemy import delete, select

from app.core import clock
from app.inquiries import triage
from app.models import Admin, AdminForm, Delivery, Form, Inquiry, Preference
from tests.conversations.conftest import INBOUND, TOKEN
from tests.helpers import submit_inquiry
from tests.notify.conftest import ADMIN_ADDRESS
from tests.notify.steps import request_after
from tests.notify.test_answers import answer

ANN = "ann@example.org"


@pytest.fixture
def app_config(app_config) -> dict:
    return {**app_config, "INBOUND_TOKEN": TOKEN, "INBOUND_ADDRESS": INBOUND}


def assigned(query, client, role: str = "owner", address: str | None = ANN, forms: tuple[str, ...] = ()) -> int:
    """A person's inquiry assigned to Ann (``role``, given ``forms``, at ``address``); its id."""
    submit_inquiry(client)
    request_after(client)

    def arrange(session):
        ann = Admin(name="Ann", user_handle=b"a" * 64, role=role, email=address)
        session.add(ann)
        session.flush()
        for slug in forms:
            session.add(AdminForm(admin_id=ann.id, form_id=session.scalar(select(Form.id).where(Form.slug == slug))))
        inquiry_id = session.scalar(select(Inquiry.id))
        triage.assign(session, inquiry_id, ann.id, clock.now())
        session.commit()
        return inquiry_id

    return query.using(arrange)


def envelopes(mail) -> list[list[str]]:
    """Each e-mail's envelope recipients, in lower case."""
    return [sorted(address.lower() for address in rcpt) for rcpt, _bytes in mail.envelopes]


def kinds(query) -> list[tuple[str, str, str]]:
    return sorted((row.kind, row.channel, row.status) for row in query(select(Delivery)) if row.kind != "inquiry")


def test_the_assignee_hears_of_an_answer_with_the_recipients_e_mail(app, client, query, mail):
    inquiry_id = assigned(query, client)
    before = len(mail.messages)
    assert answer(app, client, inquiry_id, "Monday suits me.") == "thread"
    assert sorted(envelopes(mail)[before:]) == [[ADMIN_ADDRESS], [ANN]]
    [site] = [each for each in mail.messages[before:] if each["To"] == ADMIN_ADDRESS]
    [own] = [each for each in mail.messages[before:] if each["To"] == ANN]
    assert own["To"] == ANN and own["Subject"] == site["Subject"] == f"New message in inquiry #{inquiry_id}"
    assert own.get_payload() == site.get_payload() and "Monday suits me." not in own.get_payload()
    assert own["Message-ID"] != site["Message-ID"]
    assert ("assignee", "email", "done") in kinds(query)


def test_with_content_included_the_assignee_reads_what_the_recipients_read(app, client, query, db_session, mail):
    db_session.add(Preference(key="notify_include_content", value="1"))
    db_session.commit()
    inquiry_id = assigned(query, client)
    before = len(mail.messages)
    assert answer(app, client, inquiry_id, "Tuesday is better.") == "thread"
    [site] = [each for each in mail.messages[before:] if each["To"] == ADMIN_ADDRESS]
    [own] = [each for each in mail.messages[before:] if each["To"] == ANN]
    assert "Tuesday is better." in own.get_payload() and own.get_payload() == site.get_payload()
    assert own["Reply-To"] == site["Reply-To"]


def test_an_assignee_among_the_recipients_hears_once(app, client, query, mail):
    inquiry_id = assigned(query, client, address=ADMIN_ADDRESS.upper())
    before = len(mail.messages)
    assert answer(app, client, inquiry_id, "Monday suits me.") == "thread"
    assert envelopes(mail)[before:] == [[ADMIN_ADDRESS]]
    assert ("assignee", "email", "done") in kinds(query)


def test_an_assignee_who_no_longer_reads_the_form_is_not_told(app, client, query, mail):
    inquiry_id = assigned(query, client, role="responder", forms=("contact",))
    query.using(lambda session: (session.execute(delete(AdminForm)), session.commit()))
    before = len(mail.messages)
    assert answer(app, client, inquiry_id, "Monday suits me.") == "thread"
    assert envelopes(mail)[before:] == [[ADMIN_ADDRESS]]
    assert ("assignee", "email", "done") in kinds(query)


def test_a_responder_of_the_form_is_told(app, client, query, mail):
    inquiry_id = assigned(query, client, role="responder", forms=("contact",))
    before = len(mail.messages)
    assert answer(app, client, inquiry_id, "Monday suits me.") == "thread"
    assert sorted(envelopes(mail)[before:]) == [[ADMIN_ADDRESS], [ANN]]


def test_unassigned_or_without_an_address_nobody_more_is_told(app, client, query, mail):
    inquiry_id = assigned(query, client, address=None)
    before = len(mail.messages)
    assert answer(app, client, inquiry_id, "Monday suits me.") == "thread"
    assert envelopes(mail)[before:] == [[ADMIN_ADDRESS]]
    assert not any(kind == "assignee" for kind, _channel, _status in kinds(query))


def test_with_no_recipients_of_the_form_the_assignee_is_still_told(app, client, query, mail):
    inquiry_id = assigned(query, client)

    def no_recipients(session):
        session.scalar(select(Form).where(Form.slug == "contact")).notify_emails = []
        session.commit()

    query.using(no_recipients)
    before = len(mail.messages)
    assert answer(app, client, inquiry_id, "Monday suits me.") == "thread"
    assert envelopes(mail)[before:] == [[ANN]]
