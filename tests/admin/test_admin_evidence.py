"""The retention report: a form's policy, holds, oldest inquiry, runs and deletions for a period; page, CSV, JSON."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

from sqlalchemy import select

from app.core import db
from app.inquiries import tally
from app.models import DEFAULT_FORM_ID, CleanupRun, Form, Inquiry, TallyKind
from app.people import erasure
from tests.factories import add_inquiries, aged_inquiries, inquiry
from tests.helpers import csrf_token


def arrange(app, clock) -> None:
    now = clock()
    with app.app_context():  # not the db_session fixture: its app context would be every request's
        session = db.get_session()
        add_inquiries(session, aged_inquiries(clock, [40, 3]))
        add_inquiries(session, aged_inquiries(clock, [500], legal_hold=True, held_at=now - timedelta(days=12)))
        for status, deleted, days_ago in (
            ("ok", {"inquiries": 4, "spam": 1}, 2),
            ("error", {}, 1),
            ("ok", {"inquiries": 9}, 60),
        ):
            moment = now - timedelta(days=days_ago)
            run = CleanupRun(
                trigger="cli",
                started_at=moment,
                finished_at=moment,
                cutoff=moment,
                retention_days=180,
                deleted=json.dumps(deleted),
                status=status,
                error="OperationalError while deleting from inquiries" if status == "error" else None,
            )
            session.add(run)
            session.flush()
            for target, count in deleted.items():  # as the run's batches count them: all of Contact's
                tally.add_batch(session.connection(), run.id, moment, target, {DEFAULT_FORM_ID: count})
        tally.add_batch(session.connection(), run.id, now, "inquiries", {999: 5})  # another form's
        tally.add(session, TallyKind.DELETED, {DEFAULT_FORM_ID: 2}, now - timedelta(days=5))
        tally.add(session, TallyKind.ERASED, {DEFAULT_FORM_ID: 3}, now - timedelta(days=4))
        tally.add(session, TallyKind.ERASED, {999: 7}, now)  # another form's
        session.commit()


def test_the_json_report_gathers_the_period_s_figures(app, admin_client, clock):
    arrange(app, clock)
    response = admin_client.get(f"/admin/retention/report.json?form={DEFAULT_FORM_ID}")
    assert response.status_code == 200
    report = response.json
    assert report["policy"] == {
        "retention_days": 180,
        "spam_retention_days": 30,
        "clock": "received",
        "expiry": "delete",
    }
    assert report["anonymised_by_cleanup"] == 0
    assert (report["runs"], report["failed_runs"]) == (2, 1)  # the run 60 days ago is outside the 30 days
    assert report["deleted_by_cleanup"] == {"inquiries": 4, "spam": 1}
    assert (report["deleted_by_admins"], report["erased"]) == (2, 3)  # the erasure of another form's is not counted
    assert [hold["held_days"] for hold in report["holds"]] == [12]
    assert report["oldest_inquiry_at"].startswith((clock() - timedelta(days=500)).date().isoformat())


def test_a_chosen_period_counts_only_its_days(app, admin_client, clock):
    arrange(app, clock)
    day = (clock() - timedelta(days=60)).date().isoformat()
    report = admin_client.get(f"/admin/retention/report.json?form={DEFAULT_FORM_ID}&from={day}&to={day}").json
    assert (report["runs"], report["deleted_by_cleanup"]["inquiries"], report["deleted_by_admins"]) == (1, 9, 0)


def test_the_csv_has_one_figure_a_row_and_the_page_shows_them(app, admin_client, clock):
    arrange(app, clock)
    response = admin_client.get(f"/admin/retention/report.csv?form={DEFAULT_FORM_ID}")
    assert response.status_code == 200 and response.mimetype == "text/csv"
    rows = dict(csv.reader(io.StringIO(response.get_data(as_text=True).lstrip("\ufeff"))))
    assert (rows["runs"], rows["failed_runs"], rows["deleted_by_cleanup_inquiries"], rows["erased"]) == (
        "2",
        "1",
        "4",
        "3",
    )
    page = admin_client.get(f"/admin/retention/report?form={DEFAULT_FORM_ID}")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert 'id="report-figures"' in text and "Days held" in text


def test_bad_input_is_a_422_with_a_message(admin_client):
    assert admin_client.get("/admin/retention/report.json?form=9999").json == {"error": "There is no such form."}
    bad = admin_client.get(f"/admin/retention/report.json?form={DEFAULT_FORM_ID}&from=yesterday")
    assert bad.status_code == 422 and "YYYY-MM-DD" in bad.json["error"]
    backwards = admin_client.get(f"/admin/retention/report.csv?form={DEFAULT_FORM_ID}&from=2026-05-02&to=2026-05-01")
    assert backwards.status_code == 422
    assert admin_client.get("/admin/retention/report.json").status_code == 422
    assert admin_client.get("/admin/retention/report?from=nope").status_code == 422


def test_the_report_carries_no_personal_data(app, admin_client, clock):
    arrange(app, clock)
    body = json.dumps(admin_client.get(f"/admin/retention/report.json?form={DEFAULT_FORM_ID}").json)
    assert "ada@example.com" not in body and "Hello" not in body


def test_admins_deletions_and_erasures_count_for_the_forms_of_the_inquiries_they_removed(
    app, admin_client, db_session, clock
):
    contact = db_session.get_one(Form, DEFAULT_FORM_ID)
    other = Form(slug="other", title={"en": "Other"}, fields=contact.fields, email_field=contact.email_field)
    db_session.add(other)
    db_session.commit()
    chosen = add_inquiries(db_session, [inquiry(clock, 2), inquiry(clock, 2, form_id=other.id)])
    add_inquiries(db_session, [inquiry(clock, 1, status="spam", form_id=other.id) for _ in range(3)])
    add_inquiries(db_session, [inquiry(clock, 1, email="bo@example.com", form_id=form) for form in (1, 1, other.id)])
    token = csrf_token(admin_client, "/admin/")
    admin_client.post("/admin/inquiries/delete", data={"ids": chosen, "confirm": "1", "csrf_token": token})
    admin_client.post("/admin/spam/delete-all", data={"confirm": "1", "through": "999", "csrf_token": token})
    with app.app_context():
        assert erasure.erase("bo@example.com", "Ada").erased == 3
    db_session.rollback()
    assert db_session.scalars(select(Inquiry.id)).all() == []

    def figures(form_id: int) -> tuple:
        report = admin_client.get(f"/admin/retention/report.json?form={form_id}").json
        return report["deleted_by_admins"], report["erased"], report["site_wide"]

    assert figures(DEFAULT_FORM_ID) == (1, 2, ["runs", "failed_runs"])
    assert figures(other.id) == (1 + 3, 1, ["runs", "failed_runs"])
    page = admin_client.get(f"/admin/retention/report?form={other.id}").get_data(as_text=True)
    assert "Deleted by admins" in page and "all forms" not in page.replace("Cleanup runs (all forms)", "")
