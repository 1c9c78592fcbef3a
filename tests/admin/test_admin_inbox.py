"""The admin inbox: login required, keyset pagination, search, detail page, no caching."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from sqlalchemy import select

from app.models import CleanupRun, Inquiry
from tests.factories import add_inquiries, inquiry
from tests.helpers import settle

ROW_LINK = re.compile(r'href="/admin/inquiries/(\d+)"')
NEXT_LINK = re.compile(r'rel="next" href="([^"]+)"')
PREV_LINK = re.compile(r'rel="prev" href="([^"]+)"')


def listed_ids(page: str) -> list[int]:
    return [int(found) for found in ROW_LINK.findall(page)]


def html(response) -> str:
    return response.get_data(as_text=True).replace("&amp;", "&")


def test_inbox_requires_login(client):
    response = client.get("/admin/")
    assert response.status_code == 302
    assert "/auth/login" in response.headers["Location"]


def test_empty_inbox_says_so_and_is_not_cached(admin_client):
    response = admin_client.get("/admin/")
    assert response.status_code == 200
    assert "No inquiries yet" in response.get_data(as_text=True)
    assert response.headers["Cache-Control"] == "no-store"


def test_pages_walk_every_row_once_across_identical_timestamps(admin_client, db_session, clock):
    same = clock() - timedelta(hours=1)
    ids = add_inquiries(db_session, [inquiry(clock, created_at=same, name=f"n{i}") for i in range(120)])
    newer = add_inquiries(db_session, [inquiry(clock, days_old=0, name="newest")])
    expected = newer + sorted(ids, reverse=True)

    seen, pages, url = [], [], "/admin/"
    while url:
        page = html(admin_client.get(url))
        pages.append(listed_ids(page))
        seen += pages[-1]
        found = NEXT_LINK.search(page)
        url = found.group(1) if found else None
    assert [len(p) for p in pages] == [50, 50, 21]
    assert seen == expected

    # Walking back with "Newer" gives the same pages in reverse.
    back = []
    page = html(admin_client.get(NEXT_LINK.search(html(admin_client.get("/admin/"))).group(1)))
    page = html(admin_client.get(NEXT_LINK.search(page).group(1)))
    while True:
        found = PREV_LINK.search(page)
        if not found:
            break
        page = html(admin_client.get(found.group(1)))
        back.append(listed_ids(page))
    assert back == [pages[1], pages[0]]


def test_first_page_has_no_newer_link_and_last_no_older(admin_client, db_session, clock):
    add_inquiries(db_session, [inquiry(clock) for _ in range(3)])
    page = html(admin_client.get("/admin/"))
    assert len(listed_ids(page)) == 3
    assert not NEXT_LINK.search(page) and not PREV_LINK.search(page)


@pytest.fixture
def paris(app_config):
    """Show times in Europe/Paris (set before the app is built)."""
    app_config["TIME_ZONE"] = "Europe/Paris"


def test_rows_show_local_time_first_line_and_hold_badge(paris, admin_client, db_session, clock):
    add_inquiries(db_session, [inquiry(clock, days_old=0, message="\n  First line\nsecond line", legal_hold=True)])
    page = admin_client.get("/admin/").get_data(as_text=True)
    assert "2026-06-01 14:00 CEST" in page
    assert "First line" in page and "second line" not in page
    assert '<span class="badge">Hold</span>' in page


def test_search_matches_name_or_email_substring_case_insensitively(admin_client, db_session, clock):
    ids = add_inquiries(
        db_session,
        [
            inquiry(clock, name="Grace Hopper", email="grace@navy.example"),
            inquiry(clock, name="Alan", email="alan@turing.example"),
            inquiry(clock, name="Edsger", email="ed@HOPPER.example"),
        ],
    )
    page = html(admin_client.get("/admin/?q=hopper"))
    assert sorted(listed_ids(page)) == [ids[0], ids[2]]
    assert listed_ids(html(admin_client.get("/admin/?q=nobody"))) == []
    assert "No inquiries match" in html(admin_client.get("/admin/?q=nobody"))


def test_search_treats_like_wildcards_literally(admin_client, db_session, clock):
    ids = add_inquiries(
        db_session,
        [
            inquiry(clock, name="100% real"),
            inquiry(clock, name="1000 real"),
            inquiry(clock, name="a_b"),
            inquiry(clock, name="axb"),
            inquiry(clock, name="back\\slash"),
        ],
    )
    assert listed_ids(html(admin_client.get("/admin/?q=00%25"))) == [ids[0]]
    assert listed_ids(html(admin_client.get("/admin/?q=a_b"))) == [ids[2]]
    assert listed_ids(html(admin_client.get("/admin/?q=k%5Cs"))) == [ids[4]]


def test_search_is_kept_across_pages(admin_client, db_session, clock):
    add_inquiries(db_session, [inquiry(clock, name=f"match{i}") for i in range(55)])
    add_inquiries(db_session, [inquiry(clock, name="other", days_old=2) for _ in range(10)])
    page = html(admin_client.get("/admin/?q=match"))
    second = html(admin_client.get(NEXT_LINK.search(page).group(1)))
    assert len(listed_ids(second)) == 5


def test_expired_rows_are_hidden_unless_held(admin_client, db_session, clock):
    fresh, old, held = add_inquiries(
        db_session,
        [
            inquiry(clock, days_old=10),
            inquiry(clock, days_old=181),
            inquiry(clock, days_old=181, legal_hold=True),
        ],
    )
    assert sorted(listed_ids(html(admin_client.get("/admin/")))) == sorted([fresh, held])
    assert admin_client.get(f"/admin/inquiries/{old}").status_code == 404
    assert admin_client.get(f"/admin/inquiries/{held}").status_code == 200


def test_detail_shows_whole_message_escaped_with_line_breaks(admin_client, db_session, clock):
    message = "Line one\nLine two <script>alert(1)</script>\n\n  indented"
    (row,) = add_inquiries(db_session, [inquiry(clock, message=message)])
    page = admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    assert (
        '<div class="message-body">Line one\nLine two &lt;script&gt;alert(1)&lt;/script&gt;\n\n  indented</div>' in page
    )
    assert "<script>alert" not in page


def test_unknown_inquiry_is_404_and_bad_cursor_is_400(admin_client):
    assert admin_client.get("/admin/inquiries/999999").status_code == 404
    assert admin_client.get("/admin/?after=not-a-cursor").status_code == 400
    assert admin_client.get("/admin/?before=1.2.3").status_code == 400


@pytest.mark.parametrize("path", ["/admin/", "/admin/retention", "/admin/cleanup"])
def test_admin_pages_have_no_inline_scripts_or_styles(admin_client, path):
    page = admin_client.get(path).get_data(as_text=True)
    assert "<script>" not in page and "style=" not in page and "<style" not in page


def test_opening_the_inbox_triggers_a_cleanup_after_the_response(admin_client, db_session, clock):
    (old,) = add_inquiries(db_session, [inquiry(clock, days_old=200)])
    admin_client.get("/admin/").close()  # the cleanup is handed to the runner when the response is closed
    settle(admin_client.application)
    db_session.commit()
    assert db_session.scalars(select(CleanupRun.trigger)).all() == ["admin_inbox"]
    assert db_session.get(Inquiry, old) is None


FORM_ANSWERS = [
    {"key": "need", "type": "select", "label": "What do you need?", "value": "site", "shown": "A new website"},
    {"key": "details", "type": "textarea", "label": "Details", "value": "\nWe sell bicycles in Lyon\nand more"},
    {"key": "email", "type": "email", "label": "Email", "in": "email"},
]


def test_an_inquiry_without_a_name_opens_by_its_address_or_its_number(admin_client, db_session, clock):
    by_address, by_number = add_inquiries(
        db_session, [inquiry(clock, name="", email="ann@example.com"), inquiry(clock, name="  ", email="")]
    )
    page = html(admin_client.get("/admin/"))
    assert f'href="/admin/inquiries/{by_address}">ann@example.com<span' in page
    assert f'href="/admin/inquiries/{by_number}">Inquiry #{by_number}<span' in page
    detail = html(admin_client.get(f"/admin/inquiries/{by_address}"))
    assert "<h1>Inquiry from ann@example.com" in detail and "to ann@example.com by email" in detail
    assert "Inquiry from <" not in detail and "to  by email" not in detail
    assert f"<h1>Inquiry #{by_number}" in html(admin_client.get(f"/admin/inquiries/{by_number}"))


def test_the_message_column_shows_the_first_long_answer_not_the_first_answer(admin_client, db_session, clock):
    message = "What do you need?: A new website\n\nDetails: We sell bicycles in Lyon"
    add_inquiries(db_session, [inquiry(clock, message=message, answers=FORM_ANSWERS)])
    page = html(admin_client.get("/admin/"))
    assert '<span class="preview">We sell bicycles in Lyon</span>' in page
    assert "What do you need?: A new website" not in page


def test_a_search_under_three_characters_is_explained_on_the_inbox_page(admin_client, db_session, clock):
    (row,) = add_inquiries(db_session, [inquiry(clock)])
    response = admin_client.get("/admin/?q=ab")
    page = html(response)
    assert response.status_code == 400
    assert 'role="search"' in page and 'value="ab"' in page and 'aria-invalid="true"' in page
    assert '<p class="field-error" id="q-error">Search for at least 3 characters.</p>' in page
    assert listed_ids(page) == [row]  # the list stays, unsearched


def test_an_empty_search_points_to_spam_when_spam_has_matches(admin_client, db_session, clock):
    add_inquiries(db_session, [inquiry(clock, name="Spammy Sam", status="spam"), inquiry(clock, name="Other")])
    page = html(admin_client.get("/admin/?q=spammy"))
    assert "No inquiries match “spammy”." in page
    assert '<a href="/admin/spam?q=spammy">Spam has 1 inquiry that matches: see it.</a>' in page
    assert 'id="spam-matches"' not in html(admin_client.get("/admin/?q=nobody"))
    assert listed_ids(html(admin_client.get("/admin/spam?q=spammy"))) != []


@pytest.mark.parametrize(
    ("language", "one", "two"),
    [
        ("en", "1 inquiry matches “match”.", "2 inquiries match “match”."),
        ("ja", "1 件の問い合わせが「match」に一致します。", "2 件の問い合わせが「match」に一致します。"),
        ("zh-CN", "1 条咨询与“match”匹配。", "2 条咨询与“match”匹配。"),
    ],
)
def test_the_count_of_matches_is_in_the_languages_plural(admin_client, db_session, clock, language, one, two):
    add_inquiries(db_session, [inquiry(clock, name="match one"), inquiry(clock, name="other")])
    headers = {"Accept-Language": language}
    assert one in html(admin_client.get("/admin/?q=match", headers=headers))
    add_inquiries(db_session, [inquiry(clock, name="match two")])
    assert two in html(admin_client.get("/admin/?q=match", headers=headers))
