"""The inbox workflow: read and unread (each admin's own), answered, the filters, the counts and the reply link."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, unquote, urlsplit

from sqlalchemy import select

from app.admin import inquiries
from app.models import AuditEntry, Inquiry, InquiryView
from tests.admin.test_admin_inbox import FORM_ANSWERS
from tests.factories import add_inquiries, inquiry, numbered_inquiries
from tests.helpers import csrf_token, snapshot

ROW_LINK = re.compile(r'href="/admin/inquiries/(\d+)"')
REPLY = re.compile(r'id="reply" href="([^"]+)"')
UNREAD_ROW = '<tr class="unread">'


def listed_ids(page: str) -> list[int]:
    return [int(found) for found in ROW_LINK.findall(page)]


def arrange(query, rows) -> list[int]:
    """Store ``rows`` in a session of their own: each request then reads in its own, as in production."""
    return query.using(lambda session: add_inquiries(session, rows))


def post(client, path, data=None):
    return client.post(path, data={**(data or {}), "csrf_token": csrf_token(client, "/admin/")})


def state(query, row_id) -> tuple:
    return query.rows(select(Inquiry.answered_at, Inquiry.answered_by).where(Inquiry.id == row_id))[0]


def views(query, row_id) -> dict[int, tuple]:
    """Each admin's row for the inquiry: {admin id: (first opened, last opened, read)}."""
    return {
        admin_id: tuple(rest)
        for admin_id, *rest in query.rows(
            select(
                InquiryView.admin_id, InquiryView.first_opened_at, InquiryView.last_opened_at, InquiryView.read_at
            ).where(InquiryView.inquiry_id == row_id)
        )
    }


def audit(query) -> list[tuple]:
    return query.rows(select(AuditEntry.admin_name, AuditEntry.action, AuditEntry.detail).order_by(AuditEntry.id))


def test_opening_an_inquiry_makes_it_read_for_that_admin_alone(admin_client, clock, query, login, app):
    (row,) = arrange(query, [inquiry(clock)])
    other = app.test_client()
    grace = login("Grace", as_client=other)
    page = admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    assert "Read by you since 2026-06-01 12:00 UTC." in page and "Mark unread" in page
    assert UNREAD_ROW not in admin_client.get("/admin/").get_data(as_text=True)
    inbox = other.get("/admin/").get_data(as_text=True)  # Grace has not read it: still bold and counted for her
    assert inbox.count(UNREAD_ROW) == 1 and 'class="badge unread-count">1<' in inbox
    clock.advance(hours=1)
    assert "Read by you since 2026-06-01 13:00 UTC." in other.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    ada = next(admin_id for admin_id in views(query, row) if admin_id != grace.id)
    noon = clock().replace(hour=12)
    assert views(query, row) == {ada: (noon, noon, noon), grace.id: (clock(), clock(), clock())}
    assert audit(query) == []  # an admin's own reading is not the team's record


def test_opening_an_inquiry_changes_nothing_another_admin_sees(admin_client, clock, query, login, app):
    (row,) = arrange(query, [inquiry(clock)])
    other = app.test_client()
    grace = login("Grace", as_client=other)
    before = snapshot(query, skip=("inquiry_views", "accesses"))
    for _ in range(2):
        assert admin_client.get(f"/admin/inquiries/{row}").status_code == 200
    assert snapshot(query, skip=("inquiry_views", "accesses")) == before
    assert grace.id not in views(query, row) and len(views(query, row)) == 1  # only the opener's own row
    assert other.get("/admin/").get_data(as_text=True).count(UNREAD_ROW) == 1


def test_opening_again_keeps_the_first_opening_and_moves_the_last(admin_client, clock, query):
    (row,) = arrange(query, [inquiry(clock)])
    admin_client.get(f"/admin/inquiries/{row}")
    first = clock()
    clock.advance(minutes=5)
    assert admin_client.get(f"/admin/inquiries/{row}").status_code == 200
    assert list(views(query, row).values()) == [(first, clock(), first)]  # read since the first opening


def test_another_site_making_the_browser_load_an_inquiry_records_nothing(admin_client, clock, query):
    (row,) = arrange(query, [inquiry(clock)])
    for site in ("cross-site", "same-site"):
        page = admin_client.get(f"/admin/inquiries/{row}", headers={"Sec-Fetch-Site": site})
        assert page.status_code == 200 and "Unread by you." in page.get_data(as_text=True)
    assert views(query, row) == {}
    admin_client.get(f"/admin/inquiries/{row}", headers={"Sec-Fetch-Site": "same-origin"})
    assert list(views(query, row).values()) == [(clock(), clock(), clock())]


def test_mark_unread_undoes_this_admins_read_and_keeps_the_record_of_opening(admin_client, clock, query):
    (row,) = arrange(query, [inquiry(clock)])
    admin_client.get(f"/admin/inquiries/{row}")
    response = post(admin_client, f"/admin/inquiries/{row}/unread")
    assert (response.status_code, response.headers["Location"]) == (303, "/admin/")
    assert list(views(query, row).values()) == [(clock(), clock(), None)]
    post(admin_client, f"/admin/inquiries/{row}/unread")  # already unread: nothing changes
    assert list(views(query, row).values()) == [(clock(), clock(), None)]
    assert "Mark read" in admin_client.get(
        f"/admin/inquiries/{row}", headers={"Sec-Fetch-Site": "cross-site"}
    ).get_data(as_text=True)
    assert audit(query) == []


def test_mark_read_without_opening_records_no_opening(admin_client, clock, query):
    (row,) = arrange(query, [inquiry(clock)])
    response = post(admin_client, f"/admin/inquiries/{row}/read")
    assert (response.status_code, response.headers["Location"]) == (303, f"/admin/inquiries/{row}")
    assert list(views(query, row).values()) == [(None, None, clock())]
    clock.advance(hours=1)
    post(admin_client, f"/admin/inquiries/{row}/read")  # already read: the time stays
    assert list(views(query, row).values()) == [(None, None, clock().replace(hour=12))]
    assert audit(query) == []


def test_mark_answered_records_who_and_when_and_can_be_undone(admin_client, clock, query):
    (row,) = arrange(query, [inquiry(clock)])
    response = post(admin_client, f"/admin/inquiries/{row}/answered")
    assert (response.status_code, response.headers["Location"]) == (303, f"/admin/inquiries/{row}")
    answered_at, answered_by = state(query, row)
    assert answered_at == clock() and answered_by is not None
    page = admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    assert "Answered by Ada, 2026-06-01 12:00 UTC." in page and "Mark unanswered" in page
    post(admin_client, f"/admin/inquiries/{row}/unanswered")
    assert state(query, row) == (None, None)
    assert [entry[1] for entry in audit(query)] == ["marked_answered", "marked_unanswered"]


def test_state_changes_need_csrf_and_post(admin_client, clock, query):
    (row,) = arrange(query, [inquiry(clock)])
    for action in ("read", "unread", "answered", "unanswered"):
        assert admin_client.post(f"/admin/inquiries/{row}/{action}").status_code == 400
        assert admin_client.get(f"/admin/inquiries/{row}/{action}").status_code == 405
    assert state(query, row) == (None, None) and views(query, row) == {}


def test_state_changes_on_a_missing_or_expired_inquiry_are_404(admin_client, clock, query):
    (old,) = arrange(query, [inquiry(clock, days_old=200)])
    for action in ("read", "unread", "answered", "unanswered"):
        assert post(admin_client, f"/admin/inquiries/{old}/{action}").status_code == 404
        assert post(admin_client, f"/admin/inquiries/999999/{action}").status_code == 404
    assert audit(query) == [] and views(query, old) == {}


def test_answered_by_survives_the_admin_being_removed(admin_client, clock, query, login, app):
    from app.models import Admin

    (row,) = arrange(query, [inquiry(clock)])
    other = app.test_client()
    grace = login("Grace", as_client=other)
    post(other, f"/admin/inquiries/{row}/answered")
    query.using(
        lambda session: (session.execute(Admin.__table__.delete().where(Admin.id == grace.id)), session.commit())
    )
    assert state(query, row) == (clock(), None)  # ON DELETE SET NULL: the answer stays, its author goes
    assert "Answered by a removed admin" in admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)


def test_unread_rows_are_bold_and_counted_in_the_navigation(admin_client, clock, query):
    first, second, _third = arrange(query, [inquiry(clock, name=f"P{i}") for i in range(3)])
    page = admin_client.get("/admin/").get_data(as_text=True)
    assert page.count('<tr class="unread">') == 3
    assert 'class="badge unread-count">3<span class="visually-hidden"> unread</span>' in page
    admin_client.get(f"/admin/inquiries/{first}")
    page = admin_client.get("/admin/retention").get_data(as_text=True)  # every admin page shows the count
    assert 'class="badge unread-count">2<' in page
    post(admin_client, f"/admin/inquiries/{first}/unread")
    assert 'unread-count">3<' in admin_client.get("/admin/").get_data(as_text=True)


def test_spam_and_expired_inquiries_are_not_counted_unread(admin_client, clock, query):
    arrange(query, [inquiry(clock), inquiry(clock, status="spam"), inquiry(clock, days_old=200)])
    assert 'unread-count">1<' in admin_client.get("/admin/").get_data(as_text=True)


def test_filters_show_unread_or_unanswered_and_keep_the_search(admin_client, clock, query):
    read, answered, fresh = arrange(query, [inquiry(clock, name=f"Kim {i}") for i in range(3)])
    admin_client.get(f"/admin/inquiries/{read}")
    admin_client.get(f"/admin/inquiries/{answered}")
    post(admin_client, f"/admin/inquiries/{answered}/answered")
    assert listed_ids(admin_client.get("/admin/?show=unread").get_data(as_text=True)) == [fresh]
    assert sorted(listed_ids(admin_client.get("/admin/?show=unanswered").get_data(as_text=True))) == [read, fresh]
    page = admin_client.get("/admin/?show=unanswered&q=Kim%202").get_data(as_text=True)
    assert listed_ids(page) == [fresh] and "1 inquiry matches “Kim 2”." in page
    assert admin_client.get("/admin/?show=everything").status_code == 400


def test_filters_are_kept_across_pages(admin_client, clock, query):
    arrange(query, numbered_inquiries(clock, 60))
    page = admin_client.get("/admin/?show=unread").get_data(as_text=True).replace("&amp;", "&")
    older = re.search(r'rel="next" href="([^"]+)"', page).group(1)
    assert "show=unread" in older
    assert len(listed_ids(admin_client.get(older).get_data(as_text=True))) == 10


def test_the_list_says_how_many_match(admin_client, clock, query):
    arrange(query, numbered_inquiries(clock, 60))
    assert "60 inquiries." in admin_client.get("/admin/").get_data(as_text=True)
    assert "11 inquiries match “Name 1”." in admin_client.get("/admin/?q=Name+1").get_data(as_text=True)
    assert "1 inquiry matches “p7@”." in admin_client.get("/admin/?q=p7@").get_data(as_text=True)


def test_a_count_past_the_limit_says_more_than(admin_client, clock, monkeypatch, query):
    monkeypatch.setattr(inquiries, "COUNT_LIMIT", 5)
    arrange(query, numbered_inquiries(clock, 7))
    page = admin_client.get("/admin/").get_data(as_text=True)
    assert "More than 5 inquiries." in page and 'unread-count">5+<' in page


def test_the_name_is_the_link_and_says_whose_inquiry_and_when(admin_client, clock, query):
    (row,) = arrange(query, [inquiry(clock, name="Hedy Lamarr", days_old=0)])
    page = admin_client.get("/admin/").get_data(as_text=True)
    assert (
        f'<a href="/admin/inquiries/{row}">Hedy Lamarr<span class="visually-hidden">, '
        "unread inquiry received 2026-06-01 12:00 UTC</span></a>"
    ) in page


def test_select_all_works_without_scripts(admin_client, clock, query):
    arrange(query, numbered_inquiries(clock, 3))
    page = admin_client.get("/admin/").get_data(as_text=True)
    assert 'data-select-all-link href="/admin/?select=all"' in page and " checked" not in page
    assert admin_client.get("/admin/?select=all").get_data(as_text=True).count(" checked aria-label") == 3


def test_reply_is_a_mailto_link_with_the_subject_and_the_message_quoted(admin_client, clock, query):
    message = "Hello & welcome?\nLine 2: 100% sure, a+b=c #1\n\nÜmlaut"
    (row,) = arrange(query, [inquiry(clock, name="Zoë", email="zoe+tag@example.com", message=message)])
    page = admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    link = REPLY.search(page).group(1).replace("&amp;", "&")
    assert link.startswith("mailto:zoe%2Btag@example.com?subject=Re%3A%20Hello%20%26%20welcome%3F&body=")
    assert " " not in link and "+" not in link and "\n" not in link  # RFC 6068: every space and break encoded
    parts = urlsplit(link)
    assert unquote(parts.path) == "zoe+tag@example.com"
    fields = parse_qs(parts.query.replace("+", "%2B"))
    assert fields["subject"] == ["Re: Hello & welcome?"]
    assert fields["body"] == [
        "\r\n\r\nOn 2026-05-31 12:00 UTC, Zoë wrote:\r\n> Hello & welcome?\r\n"
        "> Line 2: 100% sure, a+b=c #1\r\n> \r\n> Ümlaut"
    ]


def test_a_long_message_is_quoted_in_part(admin_client, clock, query):
    (row,) = arrange(query, [inquiry(clock, message="word " * 2000)])
    link = REPLY.search(admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)).group(1)
    assert len(link) < 6000 and "%5B%E2%80%A6%5D" in link  # "[…]" marks the cut


def test_reply_link_subject_is_the_first_long_answer_of_a_form_with_several(admin_client, clock, query):
    message = "What do you need?: A new website\n\nDetails: We sell bicycles in Lyon"
    (row,) = arrange(query, [inquiry(clock, name="", email="ann@example.com", message=message, answers=FORM_ANSWERS)])
    link = REPLY.search(admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)).group(1)
    fields = parse_qs(urlsplit(link.replace("&amp;", "&")).query)
    assert fields["subject"] == ["Re: We sell bicycles in Lyon"]
    assert "ann@example.com wrote:" in fields["body"][0]


def test_reply_link_subject_is_the_first_line_shortened():
    from app.admin.workflow import _topic

    assert _topic("\n\n  Short  \nmore") == "Short"
    assert _topic("x" * 100) == "x" * 59 + "…"


def test_admins_and_tabs_opening_an_inquiry_at_once_write_one_row_each(app, clock, query, login):
    from tests.auth.test_auth_races import race

    (row,) = arrange(query, [inquiry(clock)])
    clients = []
    for index in range(3):
        clients.append(app.test_client())
        login(f"Admin {index}", as_client=clients[-1])
    tabs = [app.test_client() for _ in range(3)]
    grace = login("Grace", as_client=tabs[0])
    for tab in tabs[1:]:
        login(admin=grace, as_client=tab)
    statuses = race(*(lambda client=client: client.get(f"/admin/inquiries/{row}") for client in clients + tabs))
    assert statuses == [200] * 6
    assert len(views(query, row)) == 4 and set(views(query, row).values()) == {(clock(), clock(), clock())}
    assert audit(query) == []
