"""Each form's own retention: one claim deletes every form's expired inquiries, at cutoffs fixed at the claim."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from app import cleanup
from app.cleanup.batches import Moment
from app.cleanup.targets import TARGETS
from app.forms.fields import CONTACT_FIELDS, dump
from app.inquiries import retention
from app.models import DEFAULT_FORM_ID, CleanupRun, Form, Inquiry, InquiryStatus
from tests.factories import add_inquiries, inquiry
from tests.helpers import query_plan

SPAM = InquiryStatus.SPAM.value


def add_form(session, clock, slug: str, retention_days: int | None = None, spam_days: int | None = None) -> int:
    form = Form(
        slug=slug,
        title={"en": slug.title()},
        description={},
        fields=dump(CONTACT_FIELDS),
        email_field="email",
        enabled=True,
        retention_days=retention_days,
        spam_retention_days=spam_days,
        created_at=clock(),
        updated_at=clock(),
    )
    session.add(form)
    session.commit()
    return form.id


@pytest.fixture
def forms(db_session, clock) -> dict[str, int]:
    """Contact (the site's 180 days), jobs (30 days, spam 2) and support (2 years)."""
    return {
        "contact": DEFAULT_FORM_ID,
        "jobs": add_form(db_session, clock, "jobs", 30, 2),
        "support": add_form(db_session, clock, "support", 730),
    }


def aged(clock, forms, plan: dict[str, list[float]], **values) -> list[dict]:
    return [
        inquiry(clock, days_old=days, form_id=forms[slug], name=f"{slug} {days}", **values)
        for slug, ages in plan.items()
        for days in ages
    ]


PLAN = {"contact": [10, 179, 181, 400], "jobs": [10, 29, 31, 181], "support": [29, 181, 729, 731]}
KEPT = {"contact 10", "contact 179", "jobs 10", "jobs 29", "support 29", "support 181", "support 729"}


def test_one_run_deletes_each_forms_expired_inquiries_at_its_own_cutoff(app, db_session, clock, forms, query):
    add_inquiries(db_session, aged(clock, forms, PLAN))
    with app.app_context():
        dry = cleanup.dry_run()
        run = cleanup.run("test")
    assert set(query(select(Inquiry.name))) == KEPT
    assert dry["inquiries"][0] == run.remaining + 5 == 5
    assert (run.retention_days, run.form_retention_days) == (180, {str(forms["jobs"]): 30, str(forms["support"]): 730})
    assert cleanup.as_dict(run)["form_retention_days"] == run.form_retention_days


def test_admin_pages_hide_what_each_form_has_outlived_at_once(app, db_session, clock, forms):
    add_inquiries(db_session, aged(clock, forms, PLAN) + aged(clock, forms, {"contact": [500]}, legal_hold=True))
    with app.test_request_context():
        shown = set(db_session.scalars(select(Inquiry.name).where(retention.visible_now(db_session))))
    assert shown == KEPT | {"contact 500"}  # a legal hold keeps it, whatever the form


def test_the_ledger_keeps_the_cutoffs_of_the_claim_when_a_form_changes_during_the_run(
    app, db_session, clock, forms, query
):
    add_inquiries(db_session, aged(clock, forms, {"jobs": [31, 60]}))
    row = CleanupRun(
        trigger="test",
        started_at=clock(),
        cutoff=clock() - timedelta(days=180),
        retention_days=180,
        form_retention_days={str(forms["jobs"]): 45},
        deleted="{}",
        remaining=0,
        status="running",
    )
    db_session.execute(update(Form).where(Form.id == forms["jobs"]).values(retention_days=10))
    db_session.commit()
    cutoffs = cleanup.runs.recorded_cutoffs(row)
    assert cutoffs.for_form(forms["jobs"]) == clock() - timedelta(days=45)  # as recorded, not today's 10
    assert cutoffs.for_form(forms["support"]) == cutoffs.for_form(DEFAULT_FORM_ID) == clock() - timedelta(days=180)
    with app.app_context():
        cleanup.run("test")
    assert query(select(Inquiry.name)) == []  # the next run uses the form's 10 days


def test_spam_is_deleted_at_each_forms_spam_cutoff(app, db_session, clock, forms, query):
    add_inquiries(db_session, aged(clock, forms, {"contact": [3, 31], "jobs": [1, 3]}, status=SPAM))
    with app.app_context():
        cleanup.run("test")
    assert set(query(select(Inquiry.name))) == {"contact 3", "jobs 1"}


def test_the_detail_page_and_the_privacy_page_tell_each_forms_retention(admin_client, client, db_session, clock, forms):
    [row] = add_inquiries(db_session, aged(clock, forms, {"jobs": [10]}))
    page = admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    due = clock() - timedelta(days=10) + timedelta(days=30)
    assert "Deleted by the first cleanup after" in page and "Jobs (jobs)" in page
    assert due.strftime("%Y-%m-%d") in page
    privacy = client.get("/privacy").get_data(as_text=True)
    assert "Jobs: 30 days (spam: 2 days)" in privacy and "Support: 730 days" in privacy


def test_a_shorter_site_retention_previews_only_the_forms_that_follow_it(app, db_session, clock, forms):
    add_inquiries(db_session, aged(clock, forms, {"contact": [40], "jobs": [20], "support": [40]}))
    with app.test_request_context():
        preview = retention.preview(db_session, 30)
    assert preview.count == 1  # contact's 40-day-old one; support keeps its own 730 days


def test_a_batch_with_forms_of_their_own_retention_walks_an_index_in_age_order(app, db_session, clock, forms):
    [target] = [each for each in TARGETS if each.name == "inquiries"]
    with app.app_context():
        cutoffs = retention.cutoffs_at(db_session, clock())
    condition = target.where(Moment(clock(), cutoffs))
    plan = query_plan(db_session, select(Inquiry.id).where(condition).order_by(Inquiry.created_at).limit(500))
    oldest = query_plan(db_session, select(func.min(Inquiry.created_at)).where(condition))
    # The index of the rows not anonymised (migration 0024) has the same columns as the folder's, fewer rows.
    by_index = ("ix_submissions_status", "ix_submissions_not_anonymised")
    assert any(name in plan for name in by_index) and any(name in oldest for name in by_index)
    assert "SCAN submissions" not in plan and "Seq Scan" not in plan


def test_the_retention_page_and_the_dry_run_name_the_forms_with_their_own_time(admin_client, runner, forms):
    page = admin_client.get("/admin/retention").get_data(as_text=True)
    assert "Jobs</a>: 30 days, spam: 2 days" in page and "Support</a>: 730 days" in page
    output = runner.invoke(args=["cleanup", "--dry-run"]).output
    assert "form jobs: keeps inquiries 30 days, spam 2 days" in output
    assert "form support: keeps inquiries 730 days, spam the site default days" in output
