"""A retention counted from closing, and the people's answers found by the inbox search.

A form whose retention counts from closing keeps an inquiry while it is
open or waiting, and counts from the moment it was closed (``closed_at``,
cleared when it is reopened by an admin or by the person's answer): in the
cleanup's cutoffs, the preview, the detail page, People and the privacy page.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update

from app.core.db import get_session
from app.inquiries import retention
from app.models import Form, InboundMessage, Inquiry, InquiryTriage
from tests.conversations.conftest import mail, post
from tests.conversations.test_inbound import tagged
from tests.factories import inquiry
from tests.helpers import csrf_token, editor_post


def set_state(client, inquiry_id: int, state: str) -> None:
    page = f"/admin/inquiries/{inquiry_id}"
    response = client.post(f"{page}/state", data={"csrf_token": csrf_token(client, page), "state": state})
    assert response.status_code == 303


def count_from_closing(app) -> None:
    with app.app_context():
        session = get_session()
        session.execute(update(Form).values(retention_clock=retention.Clock.CLOSED.value))
        session.commit()


def test_a_form_counting_from_closing_keeps_what_is_open_and_counts_from_the_close(
    app, client, added, clock, query, login
):
    [still_open, waiting, closed_long_ago, closed_lately] = added(
        [inquiry(clock, days_old=400, email=f"p{n}@example.com") for n in range(4)]
    )
    count_from_closing(app)
    login()
    clock.advance(days=-190)
    set_state(client, closed_long_ago, "closed")
    set_state(client, waiting, "closed")
    clock.advance(days=180)
    set_state(client, closed_lately, "closed")
    set_state(client, waiting, "waiting")  # reopened: kept again
    clock.advance(days=10)
    [row] = query(select(Inquiry).where(Inquiry.id == closed_lately))
    assert row.closed_at == clock() - timedelta(days=10)
    assert query(select(Inquiry.closed_at).where(Inquiry.id == waiting)) == [None]

    page = client.get(f"/admin/inquiries/{still_open}").get_data(as_text=True)
    assert "Kept until it is closed; its retention counts from then." in page
    page = client.get(f"/admin/inquiries/{closed_lately}").get_data(as_text=True)
    assert "Deleted by the first cleanup after" in page and "Kept until it is closed" not in page
    people = client.get("/admin/people?email=p2@example.com").get_data(as_text=True)
    assert "Past retention: deleted at the next cleanup" in people
    people = client.get("/admin/people?email=p0@example.com").get_data(as_text=True)
    assert "Past retention" not in people
    assert "180 days after we close it" in client.get("/privacy").get_data(as_text=True)
    with app.app_context():
        from app.cleanup import dry_run, run

        assert retention.preview(get_session(), 180).count == 1
        assert retention.preview(get_session(), 5).count == 2
        assert dry_run()["inquiries"][0] == 1
        run("test", force=True)
    assert sorted(query(select(Inquiry.id))) == [still_open, waiting, closed_lately]


def test_the_person_s_answer_reopens_a_closed_inquiry_and_its_retention_waits_again(
    app, client, added, clock, query, login
):
    [row] = added([inquiry(clock, days_old=400)])
    count_from_closing(app)
    login()
    clock.advance(days=-200)
    set_state(client, row, "closed")
    clock.advance(days=200)
    assert post(client, mail(to=tagged(app, row))).json["outcome"] == "thread"
    assert query(select(Inquiry.closed_at)) == [None]
    assert query(select(InquiryTriage.state)) == ["open"]
    with app.app_context():
        from app.cleanup import run

        run("test", force=True)
    assert query(select(Inquiry.id)) == [row]


def test_the_form_page_offers_closing_as_the_clock(app, client, clock, query, login):
    login()
    path = "/admin/forms/new"
    assert 'value="closed"' in client.get(path).get_data(as_text=True)
    fields = [{"type": "text", "key": "name", "label-en": "Name"}]
    response = client.post(path, data=editor_post(client, path, fields, retention_clock="closed"))
    assert response.status_code == 303, response.get_data(as_text=True)
    assert query(select(Form.retention_clock).where(Form.slug == "quote")) == ["closed"]
    response = client.post(path, data=editor_post(client, path, fields, slug="other", retention_clock="never"))
    assert response.status_code == 422 and "Choose when the retention starts." in response.get_data(as_text=True)


def test_the_inbox_search_finds_the_person_s_answers_but_not_held_mail(app, client, added, clock, query, login):
    [answered, other] = added([inquiry(clock, message="About the roof"), inquiry(clock, message="Other")])
    assert post(client, mail(to=tagged(app, answered), body="The Übergröße ladder suits me.")).status_code == 202
    stray = mail(sender="eve@example.net", to=tagged(app, other), body="Cheap ladders for everyone")
    assert post(client, stray).json["outcome"] == "held"
    login()
    for text in ("LADDER suits", "Übergröße"):
        page = client.get("/admin/", query_string={"q": text}).get_data(as_text=True)
        assert f"/admin/inquiries/{answered}" in page and f'/admin/inquiries/{other}"' not in page, text
    page = client.get("/admin/", query_string={"q": "cheap ladders"}).get_data(as_text=True)
    assert f'/admin/inquiries/{other}"' not in page  # held mail names no inquiry until an owner puts it there
    assert query(select(InboundMessage.state).order_by(InboundMessage.id)) == ["thread", "held"]
