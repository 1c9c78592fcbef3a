"""The detail page's facts (deletion date, browser), times in the configured zone, admin error pages."""

from __future__ import annotations

import pytest

from app.core import db
from app.inquiries import retention
from tests.factories import add_inquiries, inquiry

FIREFOX = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0"


@pytest.fixture
def paris(app_config):
    """Show times in Europe/Paris (set before the app is built)."""
    app_config["TIME_ZONE"] = "Europe/Paris"


def page_of(client, row: int) -> str:
    return client.get(f"/admin/inquiries/{row}").get_data(as_text=True)


def test_detail_says_when_the_inquiry_will_be_deleted(paris, admin_client, db_session, clock):
    (row,) = add_inquiries(db_session, [inquiry(clock, days_old=10)])
    # Received 2026-05-22 12:00 UTC, kept 180 days: 2026-11-18 12:00 UTC, 13:00 in Paris (CET).
    assert "Deleted by the first cleanup after 2026-11-18 13:00 CET." in page_of(admin_client, row)


def test_the_deletion_date_follows_the_retention_setting_and_the_folder(admin_client, db_session, clock, app):
    inbox, spam = add_inquiries(db_session, [inquiry(clock, days_old=1), inquiry(clock, days_old=1, status="spam")])
    with app.app_context():
        session = db.get_session()
        retention.save(session, 7, retention.INBOX)
        session.commit()
    assert "after 2026-06-07 12:00 UTC." in page_of(admin_client, inbox)
    assert "after 2026-06-30 12:00 UTC." in page_of(admin_client, spam)  # the spam folder keeps 30 days


def test_a_held_inquiry_says_the_hold_keeps_it(admin_client, db_session, clock):
    (row,) = add_inquiries(db_session, [inquiry(clock, days_old=300, legal_hold=True, hold_reason="Case 7")])
    page = page_of(admin_client, row)
    assert "Kept by a legal hold until it is released." in page and "Deleted by the first cleanup" not in page


def test_the_user_agent_is_a_short_name_with_the_raw_string_behind_a_disclosure(admin_client, db_session, clock):
    (row,) = add_inquiries(db_session, [inquiry(clock, user_agent=FIREFOX)])
    page = page_of(admin_client, row)
    assert '<dd id="browser">Firefox 133 on Windows' in page
    assert f'<details class="raw-agent"><summary>Full user agent</summary><code>{FIREFOX}</code></details>' in page


def test_an_unknown_or_missing_user_agent(admin_client, db_session, clock):
    odd, none = add_inquiries(db_session, [inquiry(clock, user_agent="curl/8.5"), inquiry(clock, user_agent=None)])
    assert '<dd id="browser">Unknown browser' in page_of(admin_client, odd)
    assert 'id="browser"' not in page_of(admin_client, none)


def test_times_on_the_detail_page_are_in_the_configured_zone(paris, admin_client, db_session, clock):
    (row,) = add_inquiries(db_session, [inquiry(clock, days_old=0)])
    page = page_of(admin_client, row)
    assert "2026-06-01 14:00 CEST" in page and "Read by you since 2026-06-01 14:00 CEST." in page
    assert "UTC" not in page.replace("datetime=", "")


def test_the_account_page_shows_times_in_the_configured_zone(paris, admin_client):
    page = admin_client.get("/admin/account").get_data(as_text=True)
    assert "Times are shown in Europe/Paris." in page
    assert "CEST" in page and " UTC<" not in page


def test_a_404_under_admin_uses_the_admin_frame_and_links_to_the_inbox(admin_client):
    response = admin_client.get("/admin/no-such-page")
    page = response.get_data(as_text=True)
    assert response.status_code == 404
    assert 'href="/admin/cleanup"' in page and 'href="/admin/">Back to the inbox</a>' in page
    assert "Back to the start" not in page


def test_a_missing_inquiry_uses_the_admin_frame(admin_client):
    page = admin_client.get("/admin/inquiries/424242").get_data(as_text=True)
    assert "Back to the inbox" in page and "This inquiry does not exist" in page


def test_a_bad_export_range_uses_the_admin_frame(admin_client):
    response = admin_client.get("/admin/export.csv?since=2026-06-02&until=2026-06-01", headers={"Accept": "text/html"})
    page = response.get_data(as_text=True)
    assert response.status_code == 400
    assert "must not be after" in page and "Back to the inbox" in page and "Back to the start" not in page


def test_someone_not_logged_in_is_sent_to_the_login_not_told_what_exists(client):
    response = client.get("/admin/no-such-page")
    assert response.status_code == 302 and response.headers["Location"].startswith("/auth/login")


def test_public_errors_keep_the_public_frame(admin_client):
    page = admin_client.get("/no-such-page").get_data(as_text=True)
    assert "Back to the start" in page and "Back to the inbox" not in page


def test_the_address_link_is_encoded_so_it_adds_no_header(admin_client, db_session, clock):
    [row] = add_inquiries(db_session, [inquiry(clock, email="x?cc=evil@example.com&bcc=more@example.com")])
    page = admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    assert 'href="mailto:x%3Fcc%3Devil@example.com%26bcc%3Dmore@example.com"' in page
    assert 'href="mailto:x?cc=' not in page
