"""Anonymise instead of delete: a form's expired inquiries keep what names nobody and lose the rest, once.

A form whose expiry is ``anonymise`` keeps its inquiries past their
retention for its counts: the cleanup empties what names a person (name,
address, written answers, browser), deletes their files and empties their
thread's text, keeps their form, dates, folder, workflow and the answers of
choice, number, date and consent fields, and marks them, so no later run
does it again. A deleting form's inquiries are deleted as before.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from app import cleanup
from app.cleanup import evidence, ledger
from app.core import db
from app.forms.answers import stored
from app.forms.fields import Choice, Field, dump
from app.inquiries import forecast, retention, search
from app.models import (
    DEFAULT_FORM_ID,
    Attachment,
    AttachmentChunk,
    Form,
    InboundMessage,
    Inquiry,
    InquiryTriage,
    Note,
    Reply,
)
from app.people import lookup
from tests.factories import add_file, add_inquiries, inquiry

FIELDS = (
    Field("name", "text", {"en": "Name"}),
    Field("email", "email", {"en": "Email"}),
    Field(
        "topic", "select", {"en": "Topic"}, choices=(Choice("sales", {"en": "Sales"}), Choice("help", {"en": "Help"}))
    ),
    Field("seats", "number", {"en": "Seats"}),
    Field("start", "date", {"en": "Start"}),
    Field("phone", "tel", {"en": "Phone"}),
    Field("details", "textarea", {"en": "Details"}),
    Field("files", "file", {"en": "Files"}),
    Field("consent", "consent", {"en": "I agree"}),
)
ANSWERS = {
    "name": "Grace Hopper",
    "email": "grace@example.com",
    "topic": "sales",
    "seats": "12",
    "start": "2026-03-01",
    "phone": "+44 20 7946 0000",
    "details": "My flat is at 4 Privet Drive",
    "files": ["scan.pdf"],
    "consent": True,
}
KEPT = {"topic": "sales", "seats": "12", "start": "2026-03-01", "consent": True}


def add_survey(session, clock, expiry: str = "anonymise", days: int = 30) -> int:
    form = Form(
        slug="survey",
        title={"en": "Survey"},
        fields=dump(FIELDS),
        email_field="email",
        retention_days=days,
        expiry_action=expiry,
        created_at=clock(),
        updated_at=clock(),
    )
    session.add(form)
    session.commit()
    return form.id


def answered(clock, form_id: int, days_old: float, **values) -> dict:
    """An inquiry of the survey as intake stores it: its columns and answers."""
    columns = stored(FIELDS, "email", dict(ANSWERS), "en", "en", {"utm": "newsletter-grace"})
    return inquiry(clock, days_old, form_id=form_id, user_agent="Firefox 140", **{**columns, **values})


@pytest.fixture
def survey(app, db_session, clock) -> dict[str, int]:
    """An anonymising survey (30 days) with an expired inquiry (its file, thread and note) and a fresh one, and
    an expired inquiry of Contact, which deletes (the site's 180 days)."""
    form_id = add_survey(db_session, clock)
    old, fresh = add_inquiries(db_session, [answered(clock, form_id, 40), answered(clock, form_id, 10)])
    (contact,) = add_inquiries(db_session, [inquiry(clock, 200, form_id=DEFAULT_FORM_ID, email="old@example.com")])
    add_file(db_session, old, b"scan of a passport" * 1000, "scan.pdf")
    add_file(db_session, fresh, b"a file that stays", "stays.txt")
    db_session.add_all(
        [
            InboundMessage(
                inquiry_id=old,
                state="thread",
                kind="message",
                sender="grace@example.com",
                sender_key="grace@example.com",
                sender_name="Grace Hopper",
                subject="Re: your quote",
                body="Call me on my mobile",
                message_id="<m1@example.com>",
                received_at=clock(),
            ),
            Reply(
                inquiry_id=old,
                kind="reply",
                subject="Your quote",
                body="Dear Grace, here it is",
                locale="en",
                reply_to="grace@example.com",
                message_id="<r1@sundown>",
                status="sent",
                created_at=clock(),
            ),
            Note(inquiry_id=old, admin_name="Ada", body="Grace is a returning customer", created_at=clock()),
            InquiryTriage(inquiry_id=old, state="closed", changed_at=clock()),
        ]
    )
    db_session.commit()
    return {"form": form_id, "old": old, "fresh": fresh, "contact": contact}


def run(app, force: bool = False):
    with app.app_context():
        return cleanup.run("test", force=force)


def test_an_expired_inquiry_keeps_its_choices_numbers_and_dates_and_loses_everything_personal(
    app, survey, clock, query
):
    before = query.rows(select(Inquiry.form_id, Inquiry.created_at, Inquiry.status).where(Inquiry.id == survey["old"]))
    row = run(app)
    assert row.status == "ok"
    (kept,) = query.using(lambda session: [session.get(Inquiry, survey["old"])])
    assert (kept.name, kept.email, kept.email_key, kept.message, kept.user_agent) == ("", "", None, "", None)
    assert kept.anonymised_at == clock()
    assert (
        query.rows(select(Inquiry.form_id, Inquiry.created_at, Inquiry.status).where(Inquiry.id == kept.id)) == before
    )
    values = {entry["key"]: entry.get("value") for entry in kept.answers}
    assert {key: values[key] for key in KEPT} == KEPT
    assert {key: values[key] for key in ("name", "email", "phone", "details", "utm")} == dict.fromkeys(
        ("name", "email", "phone", "details", "utm"), ""
    )
    assert values["files"] == [] and "Grace" not in str(kept.answers) and "Privet" not in str(kept.answers)
    assert next(entry["shown"] for entry in kept.answers if entry["key"] == "topic") == "Sales"
    assert query(select(Attachment.inquiry_id)) == [survey["fresh"]]
    assert query.scalar(select(func.count()).select_from(AttachmentChunk)) == 1
    thread = query.rows(select(InboundMessage.sender, InboundMessage.sender_key, InboundMessage.body))
    assert thread == [("", None, "")]
    assert query.rows(select(Reply.body, Reply.subject, Reply.reply_to, Reply.status)) == [("", "", None, "sent")]
    assert query(select(Note.body)) == [""]
    assert query(select(InquiryTriage.state)) == ["closed"]


def test_the_fresh_inquiry_and_a_deleting_forms_are_as_before(app, survey, query):
    run(app)
    assert set(query(select(Inquiry.id))) == {survey["old"], survey["fresh"]}  # Contact's expired one: deleted
    fresh = query.rows(select(Inquiry.name, Inquiry.email, Inquiry.anonymised_at).where(Inquiry.id == survey["fresh"]))
    assert fresh == [("Grace Hopper", "grace@example.com", None)]


def test_the_ledger_counts_the_anonymised_apart_from_the_deleted(app, survey):
    row = run(app)
    view = ledger.view_of(row)
    assert view.counts["anonymised"] == 1 and view.counts["inquiries"] == 1
    assert view.anonymised == 1 and view.total == sum(view.counts.values()) - 1
    assert cleanup.as_dict(row)["deleted"]["anonymised"] == 1


def test_an_anonymised_inquiry_is_never_anonymised_again(app, survey, clock, query):
    run(app)
    first = clock()
    clock.advance(days=2)
    with app.app_context():
        assert cleanup.dry_run()["anonymised"] == (0, None)
    row = run(app, force=True)
    assert ledger.view_of(row).counts["anonymised"] == 0
    assert query(select(Inquiry.anonymised_at).where(Inquiry.id == survey["old"])) == [first]


def test_anonymised_inquiries_are_kept_when_the_form_turns_to_deleting(app, survey, clock, query):
    """Kept until an admin deletes them (docs/cleanup.md): nothing in them names anyone any more."""
    run(app)
    query.using(lambda session: session.execute(update(Form).values(expiry_action="delete")) and session.commit())
    clock.advance(days=40)
    run(app, force=True)
    assert query(select(Inquiry.id)) == [survey["old"]]  # the other one expired too, and was deleted


def test_anonymised_inquiries_still_count_on_the_admin_pages(app, survey, query):
    """Hidden at once past retention, like any; seen again once nothing in them names anyone."""

    def visible(session):
        return session.scalars(select(Inquiry.id).where(retention.visible_now(session)).order_by(Inquiry.id)).all()

    assert query.using(visible) == [survey["fresh"]]
    run(app)
    assert query.using(visible) == [survey["old"], survey["fresh"]]


def test_people_erasure_and_search_no_longer_find_them(app, survey, query):
    run(app)
    with app.app_context():
        session = db.get_session()
        assert lookup.ids_of(session, "grace@example.com") == [survey["fresh"]]
        found = session.scalars(select(Inquiry.id).where(search.contains(session, "Grace"))).all()
        assert found == [survey["fresh"]]
        assert session.scalars(select(Inquiry.id).where(search.contains(session, "mobile"))).all() == []


def test_spam_of_an_anonymising_form_is_deleted(app, db_session, clock, query):
    form_id = add_survey(db_session, clock)
    add_inquiries(db_session, [answered(clock, form_id, 40, status="spam")])
    run(app)
    assert query(select(Inquiry.id)) == []


def test_held_inquiries_are_left_alone(app, db_session, clock, query):
    form_id = add_survey(db_session, clock)
    add_inquiries(db_session, [answered(clock, form_id, 40, legal_hold=True)])
    run(app)
    assert query.rows(select(Inquiry.name, Inquiry.anonymised_at)) == [("Grace Hopper", None)]


def test_batches_of_fifty_anonymise_every_expired_inquiry_in_one_run(app, db_session, clock, query):
    form_id = add_survey(db_session, clock)
    add_inquiries(db_session, [answered(clock, form_id, 40 + n / 100) for n in range(130)])
    app.config["CLEANUP_BATCH_SIZE"] = 50
    row = run(app)
    assert ledger.view_of(row).counts["anonymised"] == 130
    assert query.scalar(select(func.count()).where(Inquiry.anonymised_at.is_(None))) == 0


def test_the_forecast_counts_what_is_still_to_anonymise_under_its_own_label(app, survey, clock):
    with app.app_context():
        before = forecast.compute(db.get_session(), clock())
    line = before.line(survey["form"], "inbox")
    assert line.action == "anonymise" and line.days[0].inquiries == 1 and line.days[20].inquiries == 1
    assert before.line(DEFAULT_FORM_ID, "inbox").action == "delete"
    run(app)
    with app.app_context():
        after = forecast.compute(db.get_session(), clock() + timedelta(seconds=1))
    assert after.line(survey["form"], "inbox").days[0].inquiries == 0
    assert forecast.from_json(forecast.as_json(after)).line(survey["form"], "inbox").action == "anonymise"


def test_the_retention_report_names_the_forms_expiry_and_counts_each_forms_own_removals(app, survey, clock):
    run(app)
    with app.app_context():
        session = db.get_session()
        today = clock().date()
        period = evidence.Period(today, today)
        data, contact = (
            evidence.as_dict(evidence.build(session, session.get_one(Form, form_id), period), clock())
            for form_id in (survey["form"], DEFAULT_FORM_ID)
        )
    assert data["policy"]["expiry"] == "anonymise"
    # The survey anonymised its one expired inquiry and deleted none; Contact deleted its one.
    assert (data["anonymised_by_cleanup"], data["deleted_by_cleanup"]) == (1, {"inquiries": 0, "spam": 0})
    assert (contact["anonymised_by_cleanup"], contact["deleted_by_cleanup"]) == (0, {"inquiries": 1, "spam": 0})
    assert data["site_wide"] == contact["site_wide"] == ["runs", "failed_runs"]
