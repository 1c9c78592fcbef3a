"""The cleanup page: last run, ledger, failed runs, "Run cleanup now"."""

from __future__ import annotations

import json
from datetime import timedelta

from sqlalchemy import select

from app.admin.labels import LABELS, label
from app.models import AuditAction, CleanupRun, Inquiry
from tests.factories import add_inquiries, inquiry
from tests.helpers import csrf_token


def add_run(db_session, clock, minutes_ago: int, **values) -> CleanupRun:
    started = clock() - timedelta(minutes=minutes_ago)
    fields = dict(
        trigger="inquiry_form",
        started_at=started,
        finished_at=started + timedelta(seconds=2.5),
        cutoff=started - timedelta(days=180),
        retention_days=180,
        status="ok",
        deleted=json.dumps({"inquiries": 7, "rate_limits": 2}),
    )
    row = CleanupRun(**{**fields, **values})
    db_session.add(row)
    db_session.commit()
    return row


def test_the_cleanup_page_without_runs_says_none_yet(admin_client):
    page = admin_client.get("/admin/cleanup").get_data(as_text=True)
    assert "No cleanup has run yet." in page
    assert "Run cleanup now" in page


def test_the_cleanup_page_shows_the_last_run_and_highlights_failed_ones(admin_client, db_session, clock):
    add_run(db_session, clock, 120)
    add_run(db_session, clock, 5, status="error", error="OperationalError: database is locked")
    page = admin_client.get("/admin/cleanup").get_data(as_text=True)
    assert "inquiries: 7, rate-limit counters: 2" in page
    assert "2.5 s" in page
    assert page.count('class="failed"') == 1
    assert "OperationalError: database is locked" in page
    assert "an inquiry sent by the form" in page and "inquiry_form" not in page


def test_only_what_a_run_deleted_is_listed_and_a_run_that_deleted_nothing_says_so(admin_client, db_session, clock):
    add_run(db_session, clock, 5, deleted=json.dumps({"inquiries": 0, "spam": 3, "rate_limits": 0}))
    add_run(db_session, clock, 60, trigger="admin_inbox", deleted=json.dumps({"inquiries": 0, "spam": 0}))
    page = admin_client.get("/admin/cleanup").get_data(as_text=True)
    assert (
        '<td data-label="Deleted">spam: 3</td>' in page
        and "inquiries: 0" not in page
        and "rate-limit counters: 0" not in page
    )
    assert '<td data-label="Deleted">nothing</td>' in page
    assert "an admin opening the inbox" in page and "admin_inbox" not in page


def test_every_audit_action_and_cleanup_trigger_has_words(app):
    with app.test_request_context():
        for action in AuditAction:
            assert action.value in LABELS and "_" not in label(action), action
        for trigger in ("admin_manual", "admin_inbox", "admin_spam", "inquiry_form", "login_verify", "healthz"):
            assert "_" not in label(trigger) and label(trigger) != trigger


def test_run_cleanup_now_deletes_expired_rows_and_reports(admin_client, db_session, clock):
    fresh, old, held = add_inquiries(
        db_session,
        [
            inquiry(clock, days_old=1),
            inquiry(clock, days_old=200),
            inquiry(clock, days_old=200, legal_hold=True),
        ],
    )
    response = admin_client.post("/admin/cleanup/run", data={"csrf_token": csrf_token(admin_client, "/admin/cleanup")})
    assert response.status_code == 303
    page = admin_client.get("/admin/cleanup").get_data(as_text=True)
    assert "Cleanup finished: deleted" in page
    assert "Run cleanup now, by an admin" in page
    db_session.commit()
    assert sorted(db_session.scalars(select(Inquiry.id))) == sorted([fresh, held])
    run = db_session.scalars(select(CleanupRun).where(CleanupRun.trigger == "admin_manual")).one()
    assert json.loads(run.deleted)["inquiries"] == 1


def test_run_cleanup_now_needs_post_and_csrf(admin_client):
    assert admin_client.get("/admin/cleanup/run").status_code == 405
    assert admin_client.post("/admin/cleanup/run").status_code == 400


def test_a_running_cleanup_shows_its_progress_so_far(admin_client, db_session, clock):
    add_run(db_session, clock, 1, status="running", finished_at=None, deleted=json.dumps({"inquiries": 4000}))
    page = admin_client.get("/admin/cleanup").get_data(as_text=True)
    assert "inquiries: 4000" in page  # counted batch by batch while it runs
    assert '<span class="badge">running</span>' in page


def test_an_abandoned_run_is_shown_as_failed_with_its_reason(admin_client, db_session, clock):
    add_run(db_session, clock, 90, status="abandoned", error="its process ended mid-run")
    page = admin_client.get("/admin/cleanup").get_data(as_text=True)
    assert '<span class="badge error">abandoned</span>' in page
    assert "its process ended mid-run" in page and page.count('class="failed"') == 1
