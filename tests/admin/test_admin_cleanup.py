"""The cleanup page: last run, ledger, failed runs, "Run cleanup now"."""

from __future__ import annotations

import json
from datetime import timedelta

from sqlalchemy import select

from app.models import CleanupRun, Inquiry
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
    assert "inquiry_form" in page


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
    assert "admin_manual" in page
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
