"""The Spam page: its list and count, "Not spam", "Delete all spam", the export, the spam retention setting."""

from __future__ import annotations

import csv
import io
import re

import pytest
from sqlalchemy import select

from app.models import AuditEntry, Inquiry, InquiryStatus, Setting
from tests.factories import add_inquiries, inquiry
from tests.helpers import csrf_token

ROW_LINK = re.compile(r'href="/admin/inquiries/(\d+)"')
SPAM = InquiryStatus.SPAM


def listed(client, path: str) -> list[int]:
    return [int(found) for found in ROW_LINK.findall(client.get(path).get_data(as_text=True))]


def post(client, path, data):
    return client.post(path, data={**data, "csrf_token": csrf_token(client, "/admin/spam")})


def statuses(query) -> dict[int, str]:
    return dict(query.rows(select(Inquiry.id, Inquiry.status)))


def audit_entries(query) -> list[tuple]:
    """The whole audit log (opening a detail page adds nothing to it: tests/admin/test_admin_workflow.py)."""
    return query.rows(select(AuditEntry.action, AuditEntry.count, AuditEntry.detail).order_by(AuditEntry.id))


def arrange(db_session, clock) -> tuple[list[int], list[int]]:
    inbox = add_inquiries(db_session, [inquiry(clock, name="Ina"), inquiry(clock, name="Ivo")])
    spam = add_inquiries(db_session, [inquiry(clock, name=f"Spammy {i}", status=SPAM) for i in range(3)])
    return inbox, spam


def test_inbox_and_spam_list_only_their_own_and_show_the_spam_count(admin_client, db_session, clock):
    inbox, spam = arrange(db_session, clock)
    assert sorted(listed(admin_client, "/admin/")) == inbox
    assert sorted(listed(admin_client, "/admin/spam")) == spam
    page = admin_client.get("/admin/").get_data(as_text=True)
    assert 'Spam <span class="badge">3</span>' in page
    spam_page = admin_client.get("/admin/spam").get_data(as_text=True)
    assert '<a href="/admin/spam" aria-current="page">' in spam_page
    assert "deleted 30 days after they arrive" in spam_page
    assert admin_client.get("/admin/spam").headers["Cache-Control"] == "no-store"


def test_the_spam_page_needs_a_login(client):
    response = client.get("/admin/spam")
    assert response.status_code == 302 and "/auth/login" in response.headers["Location"]


def test_search_in_spam_searches_spam_only(admin_client, db_session, clock):
    arrange(db_session, clock)
    assert len(listed(admin_client, "/admin/spam?q=Spammy")) == 3
    assert listed(admin_client, "/admin/spam?q=Ina") == []


def test_spam_past_its_retention_is_hidden_at_once(admin_client, db_session, clock):
    (old,) = add_inquiries(db_session, [inquiry(clock, days_old=31, status=SPAM)])
    (recent,) = add_inquiries(db_session, [inquiry(clock, days_old=29, status=SPAM)])
    assert listed(admin_client, "/admin/spam") == [recent]
    assert admin_client.get(f"/admin/inquiries/{old}").status_code == 404


def test_not_spam_moves_the_selected_to_the_inbox_and_audits(admin_client, db_session, clock, query):
    inbox, spam = arrange(db_session, clock)
    response = post(admin_client, "/admin/spam/not-spam", {"ids": [spam[0], spam[1], inbox[0]]})
    assert response.status_code == 303 and response.headers["Location"] == "/admin/spam"
    assert [status for _id, status in sorted(statuses(query).items())] == ["inbox"] * 4 + ["spam"]
    assert sorted(audit_entries(query)) == [("marked_not_spam", 1, f"inquiry #{i}") for i in sorted(spam[:2])]
    assert "Moved 2 inquiries to the inbox." in admin_client.get("/admin/spam").get_data(as_text=True)
    assert sorted(listed(admin_client, "/admin/")) == sorted(inbox + spam[:2])


def test_not_spam_from_the_detail_page_returns_to_it(admin_client, db_session, clock, query):
    _inbox, spam = arrange(db_session, clock)
    page = admin_client.get(f"/admin/inquiries/{spam[0]}").get_data(as_text=True)
    assert "Not spam: move to the inbox" in page and "Back to spam" in page
    response = post(admin_client, "/admin/spam/not-spam", {"ids": [spam[0]], "back": "detail"})
    assert response.headers["Location"] == f"/admin/inquiries/{spam[0]}"
    assert statuses(query)[spam[0]] == "inbox"
    assert audit_entries(query) == [("marked_not_spam", 1, f"inquiry #{spam[0]}")]
    assert "Not spam: move" not in admin_client.get(f"/admin/inquiries/{spam[0]}").get_data(as_text=True)


def test_not_spam_with_nothing_to_move_says_so(admin_client, db_session, clock, query):
    inbox, _spam = arrange(db_session, clock)
    post(admin_client, "/admin/spam/not-spam", {"ids": [inbox[0]]})
    assert "Nothing moved" in admin_client.get("/admin/spam").get_data(as_text=True)
    assert audit_entries(query) == []
    post(admin_client, "/admin/spam/not-spam", {})
    assert "Select at least one inquiry" in admin_client.get("/admin/spam").get_data(as_text=True)


def test_delete_all_spam_asks_then_deletes_only_what_it_showed(admin_client, db_session, clock, query):
    inbox, spam = arrange(db_session, clock)
    (held,) = add_inquiries(db_session, [inquiry(clock, status=SPAM, legal_hold=True, hold_reason="claim")])
    confirm = post(admin_client, "/admin/spam/delete-all", {})
    page = confirm.get_data(as_text=True)
    assert confirm.status_code == 200 and "Delete all 3 spam inquiries?" in page
    assert f'name="through" value="{spam[-1]}"' in page
    (late,) = add_inquiries(db_session, [inquiry(clock, status=SPAM, name="Arrived meanwhile")])
    done = post(admin_client, "/admin/spam/delete-all", {"confirm": "1", "through": str(spam[-1])})
    assert done.headers["Location"] == "/admin/spam"
    assert sorted(statuses(query)) == sorted(inbox + [held, late])
    assert audit_entries(query) == [("spam_deleted", 3, "1 on legal hold kept")]
    assert "Deleted 3 inquiries from the spam folder. 1 on legal hold kept." in (
        admin_client.get("/admin/spam").get_data(as_text=True)
    )


@pytest.mark.parametrize("through", ["²", "١٢", "", "-1", "9" * 5000])
def test_delete_all_spam_through_what_is_not_a_whole_number_deletes_nothing(
    admin_client, db_session, clock, query, through
):
    inbox, spam = arrange(db_session, clock)
    assert post(admin_client, "/admin/spam/delete-all", {"confirm": "1", "through": through}).status_code == 303
    assert sorted(statuses(query)) == sorted(inbox + spam) and audit_entries(query) == []


def test_delete_all_spam_with_none_says_so_and_needs_csrf(admin_client, db_session, clock, query):
    assert post(admin_client, "/admin/spam/delete-all", {}).status_code == 303
    assert "There is no spam to delete." in admin_client.get("/admin/spam").get_data(as_text=True)
    arrange(db_session, clock)
    assert admin_client.post("/admin/spam/delete-all", data={"confirm": "1", "through": "99"}).status_code == 400
    assert len(statuses(query)) == 5


def test_deleting_selected_spam_returns_to_the_spam_page(admin_client, db_session, clock, query):
    inbox, spam = arrange(db_session, clock)
    confirm = post(admin_client, "/admin/inquiries/delete", {"ids": spam[:2], "folder": "spam"})
    assert 'name="folder" value="spam"' in confirm.get_data(as_text=True)
    done = post(admin_client, "/admin/inquiries/delete", {"ids": spam[:2], "folder": "spam", "confirm": "1"})
    assert done.headers["Location"] == "/admin/spam"
    assert sorted(statuses(query)) == sorted(inbox + spam[2:])


def test_export_is_the_inbox_unless_asked_for_spam(admin_client, db_session, clock):
    arrange(db_session, clock)

    def names(path):
        rows = list(csv.reader(io.StringIO(admin_client.get(path).get_data(as_text=True).lstrip("\ufeff"))))
        return sorted(row[2] for row in rows[1:])

    assert names("/admin/export.csv") == ["Ina", "Ivo"]
    assert names("/admin/export.csv?status=inbox") == ["Ina", "Ivo"]
    assert names("/admin/export.csv?status=spam") == ["Spammy 0", "Spammy 1", "Spammy 2"]
    assert admin_client.get("/admin/export.csv?status=all").status_code == 400


# --- the spam retention ----------------------------------------------------------


def settings_post(client, data):
    return client.post("/admin/retention/spam", data={**data, "csrf_token": csrf_token(client, "/admin/retention")})


def stored(query, key: str) -> str | None:
    return query.scalar(select(Setting.value).where(Setting.key == key))


def test_the_retention_page_shows_both_retentions(admin_client):
    page = admin_client.get("/admin/retention").get_data(as_text=True)
    assert "Inquiries are deleted 180 days after" in page and "Spam is deleted 30 days after" in page
    assert 'id="spam_retention_days" name="spam_retention_days"' in page and 'value="30"' in page


def test_invalid_spam_retention_is_refused_and_nothing_saved(admin_client, query):
    response = settings_post(admin_client, {"spam_retention_days": "0"})
    page = response.get_data(as_text=True)
    assert response.status_code == 422
    assert 'id="spam_retention_days-error">Enter a whole number of days from 1 to 3650.' in page
    assert 'id="retention_days-error"' not in page
    assert stored(query, "spam_retention_days") is None


def test_shorter_spam_retention_previews_spam_only_then_saves_and_audits(admin_client, db_session, clock, query):
    add_inquiries(
        db_session,
        [
            inquiry(clock, days_old=20),
            inquiry(clock, days_old=25, status=SPAM),
            inquiry(clock, days_old=15, status=SPAM),
            inquiry(clock, days_old=5, status=SPAM),
        ],
    )
    preview = settings_post(admin_client, {"spam_retention_days": "10"})
    page = preview.get_data(as_text=True)
    assert "Shorten spam retention to 10 days?" in page
    assert "permanently delete <strong>2</strong> spam inquiries" in page
    assert 'name="spam_retention_days" value="10"' in page and 'action="/admin/retention/spam"' in page
    assert stored(query, "spam_retention_days") is None
    assert settings_post(admin_client, {"spam_retention_days": "10", "confirm": "1"}).status_code == 303
    assert stored(query, "spam_retention_days") == "10"
    assert stored(query, "retention_days") is None
    assert audit_entries(query) == [("spam_retention_changed", 0, "30 → 10 days")]
    assert "Spam retention set to 10 days (was 30)." in admin_client.get("/admin/retention").get_data(as_text=True)


def test_longer_spam_retention_saves_at_once(admin_client, query):
    assert settings_post(admin_client, {"spam_retention_days": "90"}).status_code == 303
    assert stored(query, "spam_retention_days") == "90"
    settings_post(admin_client, {"spam_retention_days": "90"})
    assert "Spam retention unchanged: 90 days." in admin_client.get("/admin/retention").get_data(as_text=True)
