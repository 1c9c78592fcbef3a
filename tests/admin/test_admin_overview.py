"""The Overview page: inquiries per week and form, the share answered, the median time to the first reply."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import insert

from app.auth import roles, web
from app.core.db import get_session
from app.models import Admin, AdminRole, Form, InquiryStatus, Reply
from tests.factories import add_inquiries, inquiry


def quote_form(session) -> int:
    contact = session.get(Form, 1)
    form = Form(slug="quote", title={"en": "Quote"}, fields=contact.fields, email_field=contact.email_field)
    session.add(form)
    session.commit()
    return form.id


def reply(inquiry_id: int, at) -> dict:
    return {
        "inquiry_id": inquiry_id,
        "kind": "reply",
        "subject": "Re",
        "body": "Thanks",
        "locale": "en",
        "message_id": f"<{inquiry_id}-{at.timestamp()}@example.com>",
        "status": "sent",
        "created_at": at,
    }


def arrange(app, clock):
    with app.app_context():
        session = get_session()
        quote = quote_form(session)
        now = clock()
        first, second, _third, _spam, _old, _quote = add_inquiries(
            session,
            [
                inquiry(clock, days_old=3, answered_at=now),
                inquiry(clock, days_old=3),
                inquiry(clock, days_old=10),
                inquiry(clock, days_old=3, status=InquiryStatus.SPAM),
                inquiry(clock, days_old=400),  # past retention and the year: not counted
                inquiry(clock, days_old=3, form_id=quote, name="Quoted"),
            ],
        )
        received = now - timedelta(days=3)
        session.execute(
            insert(Reply),
            [
                reply(first, received + timedelta(hours=2)),
                reply(first, received + timedelta(hours=30)),  # not the first: ignored
                reply(second, received + timedelta(hours=4)),
            ],
        )
        session.commit()
        return quote


def test_an_owner_sees_every_form_by_week_with_the_share_answered_and_the_median_first_reply(app, admin_client, clock):
    arrange(app, clock)
    page = admin_client.get("/admin/overview").get_data(as_text=True)
    assert '<svg class="chart"' in page and 'id="weekly-chart"' in page and "style=" not in page
    forms = page[page.index('id="overview-forms"') :]
    assert "Contact" in forms and "Quote" in forms
    assert '<td data-label="Inquiries">3</td>' in forms and "33%" in forms  # Contact: three in the year, one answered
    assert "Median time to the first reply: 3 hours." in page  # the first replies took 2 and 4 hours
    weekly = page[page.index('id="weekly"') : page.index('id="overview-forms"')]
    assert '<td data-label="Inquiries">3</td>' in weekly  # this week: two for Contact, one for Quote


def test_a_viewer_sees_only_the_forms_given_to_them(app, login, query, clock):
    quote = arrange(app, clock)
    login("Ada", as_client=app.test_client())  # an owner stays
    viewer = login("Vic", as_client=app.test_client())
    client = app.test_client()
    login(admin=viewer, as_client=client)

    def demote(session):
        roles.give(session, session.get(Admin, viewer.id), AdminRole.VIEWER, [quote])
        session.commit()

    query.using(demote)
    page = client.get("/admin/overview").get_data(as_text=True)
    forms = page[page.index('id="overview-forms"') :]
    assert "Quote" in forms and "Contact" not in forms
    assert "Median time to the first reply: —." in page


def test_owners_land_on_the_overview_and_the_others_on_their_inbox():
    assert web.landing(Admin(role=AdminRole.OWNER)) == "/admin/overview"
    assert web.landing(Admin(role=AdminRole.RESPONDER)) == "/admin/"
    assert web.landing(Admin(role=AdminRole.VIEWER)) == "/admin/"
