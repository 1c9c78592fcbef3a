"""Each admin's reading of inquiries (``app.inquiries.reads``): the rows go with their inquiry, whatever deletes
it, and with their admin; the unread filter and count find a reader's own unread inquiries by an index."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from app import cleanup
from app.admin import inquiries
from app.models import InquiryView
from tests.factories import add_inquiries, inquiry
from tests.helpers import csrf_token, query_plan


def opened_by(query, client, rows: list[int]) -> None:
    for row in rows:
        assert client.get(f"/admin/inquiries/{row}").status_code == 200
    assert query.count(InquiryView) >= len(rows)


def rows_of(query, ids: list[int]) -> int:
    return query.scalar(select(func.count()).select_from(InquiryView).where(InquiryView.inquiry_id.in_(ids)))


def post(client, path, data) -> int:
    return client.post(path, data={**data, "csrf_token": csrf_token(client, "/admin/people")}).status_code


@pytest.fixture
def arranged(query, clock, admin_client):
    """An inbox inquiry, a spam one and another address's, each opened by the admin."""
    ids = query.using(
        lambda session: add_inquiries(
            session,
            [
                inquiry(clock, email="gone@example.com"),
                inquiry(clock, status="spam", email="spam@example.com"),
                inquiry(clock, email="stays@example.com"),
            ],
        )
    )
    opened_by(query, admin_client, ids)
    return ids


def test_an_admins_delete_takes_the_rows_along(admin_client, query, arranged):
    gone, _spam, stays = arranged
    assert post(admin_client, "/admin/inquiries/delete", {"ids": [gone], "confirm": "1"}) == 303
    assert rows_of(query, [gone]) == 0 and rows_of(query, [stays]) == 1


def test_deleting_all_spam_takes_the_rows_along(admin_client, query, arranged):
    _gone, spam, stays = arranged
    assert post(admin_client, "/admin/spam/delete-all", {"confirm": "1", "through": str(spam)}) == 303
    assert rows_of(query, [spam]) == 0 and rows_of(query, [stays]) == 1


def test_an_erasure_takes_the_rows_along(admin_client, runner, query, arranged):
    gone, spam, stays = arranged
    assert post(admin_client, "/admin/people/erase", {"email": "gone@example.com", "confirm": "1"}) == 303
    result = runner.invoke(args=["people", "erase", "spam@example.com", "--yes"])
    assert result.exit_code == 0, result.output
    assert rows_of(query, [gone, spam]) == 0 and rows_of(query, [stays]) == 1


def test_the_cleanup_takes_the_rows_of_expired_inquiries_along(app, admin_client, query, clock, arranged):
    clock.advance(days=400)
    with app.app_context():
        run = cleanup.run("test", force=True)
    assert run is not None and run.status == "ok"
    assert query.count(InquiryView) == 0


def test_removing_an_admin_takes_their_rows_along(app, admin_client, query, login, arranged):
    other = app.test_client()
    grace = login("Grace", as_client=other)
    opened_by(query, other, arranged)
    assert post(admin_client, f"/admin/admins/{grace.id}/remove", {"confirm": "Grace"}) == 303
    assert query.scalar(select(func.count()).select_from(InquiryView).where(InquiryView.admin_id == grace.id)) == 0
    assert query.count(InquiryView) == 3  # Ada's own stay


def test_a_readers_unread_inquiries_are_found_by_an_index_of_their_rows(db_session, db_kind, clock):
    add_inquiries(db_session, [inquiry(clock)])
    statement = select(func.count()).where(inquiries.listed(db_session, show=inquiries.UNREAD, reader=1))
    plan = query_plan(db_session, statement)
    assert "inquiry_views" in plan and "SCAN inquiry_views" not in plan and "Seq Scan on inquiry_views" not in plan
    if db_kind == "sqlite":  # one lookup by the key per inquiry walked
        assert "SEARCH inquiry_views USING PRIMARY KEY (inquiry_id=? AND admin_id=?)" in plan, plan
    with pytest.raises(ValueError):  # unread means unread by someone
        inquiries.shown(inquiries.UNREAD)
