"""The alarm when nothing is deleted: /healthz's field, the owners' banner, the figures on /metrics."""

from __future__ import annotations

from datetime import timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import event, select

from app.auth import roles
from app.core import db
from app.models import Admin, AdminRole, CleanupRun, CleanupStatus
from tests.factories import add_inquiries, aged_inquiries
from tests.helpers import settle

LEDGER = select(CleanupRun).order_by(CleanupRun.id)
TOKEN = "metrics-token-for-alarm"


@pytest.fixture
def app_config(app_config):
    app_config["METRICS_TOKEN"] = TOKEN
    return app_config


def healthz(client) -> dict:
    with client.get("/healthz") as response:
        assert response.status_code == 200
        return response.json


def scrape(client) -> dict[str, float]:
    response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    text = response.get_data(as_text=True)
    return {sample.name: sample.value for family in text_string_to_metric_families(text) for sample in family.samples}


def statements_naming_settings(app) -> list[str]:
    seen: list[str] = []

    def record(_conn, _cursor, statement, *_args):
        if "settings" in statement:
            seen.append(statement)

    event.listen(db.engine_of(app), "before_cursor_execute", record)
    return seen


def test_healthz_says_overdue_and_its_response_claims_the_run_that_ends_it(client, app, db_session, clock, query):
    add_inquiries(db_session, aged_inquiries(clock, [183]))
    assert healthz(client)["cleanup"] == "overdue"  # 3 days past 180: far beyond 2 h + budget
    settle(app)
    [run] = query(LEDGER)
    assert (run.trigger, run.status) == ("healthz", CleanupStatus.OK)
    db_session.rollback()  # the test's app context lends its session to the requests: end its snapshot
    assert healthz(client)["cleanup"] == "ok"


def test_expired_data_within_the_allowance_and_held_data_are_not_overdue(client, app, db_session, clock):
    add_inquiries(db_session, aged_inquiries(clock, [180 + 1 / 24]))  # expired an hour ago
    add_inquiries(db_session, aged_inquiries(clock, [900], legal_hold=True))
    assert healthz(client)["cleanup"] == "ok"


def test_a_not_due_healthz_reads_no_settings(client, app):
    healthz(client)
    settle(app)  # the first request of all claimed and ran
    healthz(client)  # the run made the process forget its answer: read again once
    settle(app)
    seen = statements_naming_settings(app)
    healthz(client)
    settle(app)
    assert seen == []


def test_owners_see_a_banner_naming_the_last_error_and_others_do_not(app, client, clock, login):
    moment = clock()
    with app.app_context():  # not the db_session fixture: its app context would be every request's
        session = db.get_session()
        add_inquiries(session, aged_inquiries(clock, [200]))
        session.add(
            CleanupRun(
                trigger="cli",
                started_at=moment,
                finished_at=moment,
                cutoff=moment,
                retention_days=180,
                deleted="{}",
                status=CleanupStatus.ERROR,
                error="OperationalError while deleting from inquiries",
            )
        )
        session.commit()
    login("Ada")
    page = client.get("/admin/forms").get_data(as_text=True)
    assert 'id="cleanup-overdue"' in page
    assert "OperationalError while deleting from inquiries" in page
    viewer = app.test_client()
    made = login("Vic", as_client=viewer)
    with app.app_context():
        session = db.get_session()
        admin = session.get(Admin, made.id)
        assert admin is not None
        roles.give(session, admin, AdminRole.VIEWER, [])
        session.commit()
    assert 'id="cleanup-overdue"' not in viewer.get("/admin/account").get_data(as_text=True)


def test_metrics_show_expired_inquiries_their_wait_and_the_last_success(client, app, db_session, clock):
    add_inquiries(db_session, aged_inquiries(clock, [182, 181, 10]))
    samples = scrape(client)
    assert samples["sundown_cleanup_expired_inquiries"] == 2
    assert samples["sundown_cleanup_expired_oldest_wait_seconds"] == pytest.approx(2 * 86400)
    assert "sundown_cleanup_last_success_age_seconds" not in samples  # no run yet
    with client.get("/healthz"):
        pass
    settle(app)
    clock.advance(minutes=5)
    db_session.rollback()
    samples = scrape(client)
    assert samples["sundown_cleanup_expired_inquiries"] == 0
    assert samples["sundown_cleanup_expired_oldest_wait_seconds"] == 0
    assert samples["sundown_cleanup_last_success_age_seconds"] == pytest.approx(timedelta(minutes=5).total_seconds())
