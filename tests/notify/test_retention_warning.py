"""A warning before the first deletion: a form about to lose inquiries for the first time is told of a week ahead,
once per change of its retention or clock (app.notify.warning). Every test runs on SQLite and PostgreSQL against
the real SMTP server of conftest.py."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from email.header import decode_header, make_header

import pytest
from flask_babel import gettext as _
from sqlalchemy import delete, select

from app.core import i18n
from app.inquiries import forecast_store
from app.models import Admin, AdminForm, AuditEntry, Delivery, Form, Preference
from tests.factories import add_inquiries, inquiry
from tests.helpers import CSRF_INPUT, settle
from tests.notify.conftest import ADMIN_ADDRESS
from tests.notify.steps import request_after

RITA = "rita@example.org"
WARNINGS = select(Delivery).where(Delivery.kind == "retention").order_by(Delivery.id)
SUMMARIES = select(Delivery).where(Delivery.kind == "retention_week").order_by(Delivery.id)


def store_forecast(app) -> None:
    """The forecast stored now, as the refresh after an admin's response stores it."""
    with app.test_request_context():
        forecast_store.store()


def first_day(app, clock, days_ahead: int) -> str:
    """How the e-mail writes the UTC day ``days_ahead`` after the clock's."""
    day = clock().astimezone(UTC).date() + timedelta(days=days_ahead)
    with app.test_request_context():
        return i18n.local_date(datetime.combine(day, time(12), UTC))


def deleted_in(clock, days: int, retention: int = 180, **values) -> dict:
    """An inquiry received at noon UTC, ``retention`` days before the UTC day ``days`` after the clock's."""
    day = clock().astimezone(UTC).date() + timedelta(days=days - retention)
    return inquiry(clock, created_at=datetime.combine(day, time(12), UTC), **values)


def text(message) -> str:
    return message.get_payload(decode=True).decode()


def subject(message) -> str:
    """The subject as read, its encoded words decoded."""
    return str(make_header(decode_header(message["Subject"])))


def add(query, rows: list[dict]) -> None:
    """Insert ``rows`` in a session of their own (a test's app context would outlive the requests)."""
    query.using(lambda session: add_inquiries(session, rows))


def add_form(query, slug: str, **values) -> int:
    def arrange(session):
        contact = session.get(Form, 1)
        form = Form(slug=slug, title={"en": slug.title()}, fields=contact.fields, email_field=contact.email_field)
        for key, value in values.items():
            setattr(form, key, value)
        session.add(form)
        session.commit()
        return form.id

    return query.using(arrange)


def set_form(query, form_id: int, **values) -> None:
    def arrange(session):
        form = session.get(Form, form_id)
        for key, value in values.items():
            setattr(form, key, value)
        session.commit()

    query.using(arrange)


def test_an_admins_page_refreshes_the_forecast_and_warns_once_with_the_date_and_count(
    app, admin_client, client, clock, query, mail
):
    # Contact keeps 180 days: two inquiries go in four days, the first deletion it makes.
    add(query, [deleted_in(clock, 4), deleted_in(clock, 4), deleted_in(clock, 20)])
    with admin_client.get("/admin/retention") as response:  # closed as a server closes it: the refresh follows
        assert response.status_code == 200
    settle(app)
    assert len(query(WARNINGS)) == 1
    request_after(client)
    [message] = mail.messages
    payload = text(message)
    assert message["Subject"] == "Inquiries will be deleted for the first time"
    when = first_day(app, clock, 4)
    assert f"Contact: 2 inquiries will be deleted on {when}, the first under its retention." in payload
    assert "http://localhost/admin/retention#forecast" in payload
    assert "advance notice, not a hold" in payload
    assert "Ada" not in payload and "Hello" not in payload
    assert message["To"] == f"{ADMIN_ADDRESS}, {RITA}"  # neither an admin given some forms: they hear of all
    assert [row.status for row in query(WARNINGS)] == ["done"]
    store_forecast(app)  # the same policy: told once
    assert len(query(WARNINGS)) == 1


def test_a_deletion_further_than_a_week_waits_and_a_shortened_retention_says_the_real_date(
    app, client, clock, query, mail
):
    add(query, [deleted_in(clock, 19)])  # at 180 days: in 19 days
    store_forecast(app)
    assert query(WARNINGS) == []
    set_form(query, 1, retention_days=150)  # now already past it: the next cleanup, today
    store_forecast(app)
    request_after(client)
    [message] = mail.messages
    assert f"Contact: 1 inquiry will be deleted on {first_day(app, clock, 0)}" in text(message)


def test_a_lengthened_retention_is_recorded_quietly_and_shortening_it_warns_again(app, client, clock, query, mail):
    add(query, [deleted_in(clock, 2)])
    store_forecast(app)
    request_after(client)
    set_form(query, 1, retention_days=365)
    store_forecast(app)
    assert len(query(WARNINGS)) == 1
    set_form(query, 1, retention_days=179)  # shorter than the last one recorded (365): warned again
    store_forecast(app)
    assert len(query(WARNINGS)) == 2
    request_after(client)
    assert len(mail.messages) == 2


@pytest.fixture
def app_config(app_config) -> dict:
    return {**app_config, "NOTIFY_EMAILS": [ADMIN_ADDRESS, RITA]}


def test_a_scoped_admins_address_hears_only_of_their_forms(app, client, clock, query, mail):
    quote = add_form(query, "quote", retention_days=10)

    def arrange(session):
        rita = Admin(name="Rita", user_handle=b"Rita" * 8, role="responder", email=RITA)
        session.add(rita)
        session.flush()
        session.add(AdminForm(admin_id=rita.id, form_id=quote))
        session.commit()

    query.using(arrange)
    add(query, [deleted_in(clock, 3), deleted_in(clock, 5, 10, form_id=quote)])
    store_forecast(app)
    request_after(client)
    by_recipient = {message["To"]: text(message) for message in mail.messages}
    assert set(by_recipient) == {ADMIN_ADDRESS, RITA}
    assert "Contact:" in by_recipient[ADMIN_ADDRESS] and "Quote:" in by_recipient[ADMIN_ADDRESS]
    assert "Quote:" in by_recipient[RITA] and "Contact:" not in by_recipient[RITA]


def test_past_the_hourly_cap_nothing_is_warned_nor_recorded(app, client, clock, query, mail):
    app.config["NOTIFY_HOURLY_CAP"] = 0
    add(query, [deleted_in(clock, 3)])
    store_forecast(app)
    assert query(WARNINGS) == []
    app.config["NOTIFY_HOURLY_CAP"] = 100
    store_forecast(app)
    assert len(query(WARNINGS)) == 1


def test_the_weekly_summary_an_owner_chose_goes_once_a_week_with_each_forms_counts(
    app, admin_client, client, clock, query, mail
):
    add(query, [deleted_in(clock, 3), deleted_in(clock, 6, 30, status="spam"), deleted_in(clock, 9)])
    store_forecast(app)  # the first deletion's warning; no summary chosen yet
    request_after(client)
    assert [message["Subject"] for message in mail.messages] == ["Inquiries will be deleted for the first time"]
    with admin_client.get("/admin/retention") as page:
        token = CSRF_INPUT.search(page.text).group(1)
    settle(app)
    data = {"csrf_token": token, "weekly_summary": "1"}
    assert admin_client.post("/admin/retention/summary", data=data).status_code == 303
    assert 'id="weekly_summary" name="weekly_summary" value="1" checked' in admin_client.get("/admin/retention").text
    [entry] = query(select(AuditEntry))
    assert (entry.action, entry.detail) == ("notifications_changed", "weekly retention summary: on")
    store_forecast(app)
    store_forecast(app)  # the same week: once
    request_after(client)
    assert len(query(SUMMARIES)) == 1
    summary = mail.messages[-1]
    assert summary["Subject"] == "What the cleanup deletes in the next seven days"
    assert "Contact: 1 inquiry will be deleted in the next seven days. And 1 in spam." in text(summary)
    clock.moment += timedelta(days=7)
    store_forecast(app)
    assert len(query(SUMMARIES)) == 2
    query.using(lambda session: (session.execute(delete(Preference)), session.commit()))  # turned off
    clock.moment += timedelta(days=7)
    store_forecast(app)
    assert len(query(SUMMARIES)) == 2


def test_a_changed_clock_warns_again_with_its_own_first_date(app, client, clock, query, mail):
    recent = clock() - timedelta(days=10)
    set_form(query, 1, retention_clock="last_message")
    add(query, [deleted_in(clock, 3), deleted_in(clock, -20, last_message_at=recent)])  # the second: answered lately
    store_forecast(app)
    request_after(client)
    set_form(query, 1, retention_clock="received")  # the answered one is past 180 days since receipt
    store_forecast(app)
    request_after(client)
    first, second = (text(message) for message in mail.messages)
    assert f"Contact: 1 inquiry will be deleted on {first_day(app, clock, 3)}" in first
    assert f"Contact: 1 inquiry will be deleted on {first_day(app, clock, 0)}" in second


def test_a_form_that_anonymises_is_warned_of_its_first_anonymisation(app, admin_client, client, clock, query, mail):
    survey = add_form(query, "survey", retention_days=30, expiry_action="anonymise")
    add(query, [deleted_in(clock, 3, retention=30, form_id=survey)])
    store_forecast(app)
    request_after(client)
    [message] = mail.messages
    payload = text(message)
    assert (
        f"Survey: 1 inquiry will be anonymised on {first_day(app, clock, 3)}, the first under its retention." in payload
    )
    assert "Survey: 1 inquiry will be deleted" not in payload
    assert message["Subject"] == "Inquiries will be anonymised for the first time"
    assert "The cleanup will start anonymising inquiries of these forms:" in payload
    assert "the cleanup anonymises on these dates" in payload and "deletes on these dates" not in payload


def test_a_warning_of_forms_that_delete_and_anonymise_names_both_and_each_address_what_it_hears_of(
    app, client, clock, query, mail
):
    survey = add_form(query, "survey", retention_days=30, expiry_action="anonymise")

    def arrange(session):
        rita = Admin(name="Rita", user_handle=b"Rita" * 8, role="responder", email=RITA)
        session.add(rita)
        session.flush()
        session.add(AdminForm(admin_id=rita.id, form_id=survey))
        session.commit()

    query.using(arrange)
    add(query, [deleted_in(clock, 3), deleted_in(clock, 5, retention=30, form_id=survey)])
    store_forecast(app)
    request_after(client)
    by_recipient = {message["To"]: message for message in mail.messages}
    both, survey_only = by_recipient[ADMIN_ADDRESS], by_recipient[RITA]
    assert both["Subject"] == "Inquiries will be deleted or anonymised for the first time"
    assert "The cleanup will start deleting or anonymising inquiries of these forms:" in text(both)
    assert "the cleanup deletes or anonymises on these dates" in text(both)
    assert survey_only["Subject"] == "Inquiries will be anonymised for the first time"  # Rita hears of Survey only


def test_a_warning_of_forms_that_anonymise_is_in_the_notification_language(app_config, make_app, clock, query, mail):
    japanese = make_app({**app_config, "DEFAULT_LOCALE": "ja"})
    survey = add_form(query, "survey", retention_days=30, expiry_action="anonymise")
    add(query, [deleted_in(clock, 3, retention=30, form_id=survey)])
    store_forecast(japanese)
    request_after(japanese.test_client())
    [message] = mail.messages
    with japanese.test_request_context():
        assert (
            subject(message)
            == _("Inquiries will be anonymised for the first time")
            != ("Inquiries will be anonymised for the first time")
        )
        assert _("The cleanup will start anonymising inquiries of these forms:") in text(message)


def test_the_weekly_summary_says_of_each_form_whether_it_deletes_or_anonymises(app, client, clock, query, mail):
    survey = add_form(query, "survey", retention_days=30, expiry_action="anonymise", spam_retention_days=30)
    add(
        query,
        [
            deleted_in(clock, 3),
            deleted_in(clock, 4, retention=30, form_id=survey),
            deleted_in(clock, 5, retention=30, form_id=survey, status="spam"),
        ],
    )
    store_forecast(app)  # the warnings first (no summary chosen yet)
    request_after(client)
    query.using(lambda session: (session.add(Preference(key="retention_weekly_summary", value="1")), session.commit()))
    store_forecast(app)
    request_after(client)
    [summary] = [message for message in mail.messages if "seven days" in message["Subject"]]
    payload = text(summary)
    assert summary["Subject"] == "What the cleanup deletes or anonymises in the next seven days"
    assert "Deleted or anonymised by the cleanup in the next seven days:" in payload
    assert "Contact: 1 inquiry will be deleted in the next seven days." in payload
    assert "Survey: 1 inquiry will be anonymised in the next seven days. And 1 in spam will be deleted." in payload
