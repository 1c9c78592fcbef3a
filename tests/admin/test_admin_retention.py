"""The retention setting: validation, the preview of a shorter retention, confirmation, audit."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import insert, select

from app import cleanup
from app.inquiries import retention
from app.models import AuditEntry, Inquiry, Setting
from tests.factories import add_inquiries, inquiry
from tests.helpers import csrf_token


def stored_retention(db_session) -> str | None:
    db_session.expire_all()
    return db_session.scalar(select(Setting.value).where(Setting.key == "retention_days"))


def post(client, data):
    return client.post("/admin/retention", data={**data, "csrf_token": csrf_token(client, "/admin/retention")})


def test_settings_page_shows_current_retention(admin_client):
    page = admin_client.get("/admin/retention").get_data(as_text=True)
    assert "deleted 180 days after" in page
    assert 'value="180"' in page


@pytest.mark.parametrize("value", ["", "0", "3651", "-5", "12.5", "abc", "1e3", "٣٠", "9" * 5000])
def test_invalid_retention_is_refused_and_nothing_saved(admin_client, db_session, value):
    response = post(admin_client, {"retention_days": value})
    assert response.status_code == 422
    assert "Enter a whole number of days from 1 to 3650." in response.get_data(as_text=True)
    assert stored_retention(db_session) is None
    assert db_session.scalars(select(AuditEntry)).all() == []


@pytest.mark.parametrize("value", ["1", "3650", " 365 "])
def test_longer_or_boundary_retention_saves_at_once(admin_client, db_session, value):
    if value == "1":
        post(admin_client, {"retention_days": "1", "confirm": "1"})
    else:
        assert post(admin_client, {"retention_days": value}).status_code == 303
    assert stored_retention(db_session) == value.strip()


def test_shorter_retention_previews_then_needs_confirmation(admin_client, db_session, clock):
    add_inquiries(
        db_session,
        [
            inquiry(clock, days_old=10),
            inquiry(clock, days_old=45),
            inquiry(clock, days_old=40),
            inquiry(clock, days_old=90, legal_hold=True),
        ],
    )
    page = post(admin_client, {"retention_days": "30"})
    text = page.get_data(as_text=True)
    assert page.status_code == 200
    assert "permanently delete <strong>2</strong>" in text
    assert "the oldest received on 2026-04-17" in text
    assert 'name="confirm" value="1"' in text
    assert stored_retention(db_session) is None

    assert post(admin_client, {"retention_days": "30", "confirm": "1"}).status_code == 303
    assert stored_retention(db_session) == "30"
    entry = db_session.scalars(select(AuditEntry)).one()
    assert (entry.admin_name, entry.action, entry.detail) == ("Ada", "retention_changed", "180 → 30 days")


def test_second_change_updates_the_same_setting(admin_client, db_session):
    post(admin_client, {"retention_days": "200"})
    post(admin_client, {"retention_days": "400"})
    assert stored_retention(db_session) == "400"
    assert len(db_session.scalars(select(Setting).where(Setting.key == "retention_days")).all()) == 1


def test_settings_change_needs_csrf(admin_client, db_session):
    assert admin_client.post("/admin/retention", data={"retention_days": "90", "confirm": "1"}).status_code == 400
    assert stored_retention(db_session) is None


def test_preview_equals_what_the_next_cleanup_deletes(admin_client, db_session, clock):
    add_inquiries(db_session, [inquiry(clock, days_old=days, legal_hold=days == 70) for days in range(0, 100, 5)])
    with admin_client.application.test_request_context():
        shown = retention.preview(db_session, 30)
    post(admin_client, {"retention_days": "30", "confirm": "1"})
    before = set(db_session.scalars(select(Inquiry.id)))
    with admin_client.application.app_context():
        cleanup.run("test", force=True)
    db_session.commit()  # end the snapshot taken before the cleanup
    deleted = before - set(db_session.scalars(select(Inquiry.id)))
    assert shown.count == len(deleted) == 12


def test_a_change_is_saved_though_another_connection_commits_while_the_form_is_handled(
    admin_client, app, query, monkeypatch
):
    """A cleanup run or a delivery pass commits at any moment; a form read before it must still save.

    On SQLite a request whose transaction began as a reader could not write
    after such a commit ("database is locked" at once, a 503).
    """
    from app.core.db import engine_of

    other = threading.Thread(target=_commit_elsewhere, args=(engine_of(app),))
    parse = retention.parse

    def parse_while_another_commits(raw):
        other.start()
        other.join(0.5)  # done at once, unless this request holds the write lock: then after it
        return parse(raw)

    csrf = csrf_token(admin_client, "/admin/retention")
    monkeypatch.setattr(retention, "parse", parse_while_another_commits)
    response = admin_client.post("/admin/retention", data={"retention_days": "400", "csrf_token": csrf})
    other.join(10)
    assert response.status_code == 303
    stored = dict(query.rows(select(Setting.key, Setting.value)))
    assert stored["retention_days"] == "400" and stored["elsewhere"] == "committed"


def _commit_elsewhere(engine) -> None:
    with engine.begin() as connection:
        connection.execute(insert(Setting).values(key="elsewhere", value="committed"))


def test_the_pages_first_address_moved_to_retention(admin_client):
    response = admin_client.get("/admin/settings")
    assert response.status_code == 301 and response.headers["Location"] == "/admin/retention"
