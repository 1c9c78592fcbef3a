"""Spam weighed from several signals: the text's links and markup, the admins' list of words and domains,
the senders they moved to spam, and the score learned from their moves (app.inquiries.signals, learned)."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.inquiries import learned, signals, spam
from app.models import Inquiry, SpamToken
from tests.helpers import VALID, csrf_token, editor_post

CHECKS = select(Inquiry.status, Inquiry.spam_checks).order_by(Inquiry.id)


@pytest.mark.parametrize(
    ("text", "count", "markup"),
    [
        ("Hello, I have a question about my order.", 0, False),
        ("See www.example.org and https://a.example/x?y=1.", 2, False),
        ('<a href="https://cheap.example">cheap</a>', 1, True),
        ("[url=https://x.example]x[/url]", 1, True),
        ("[click](https://x.example)", 1, True),
    ],
)
def test_links_and_markup_are_found(text, count, markup):
    assert (len(signals.links(text)), signals.has_markup(text)) == (count, markup)


@pytest.mark.parametrize(
    ("text", "sender", "found"),
    [
        ("Best CASINO bonus", "a@example.com", "casino"),
        ("occasional question", "a@example.com", None),  # a word, not a part of one
        ("visit https://shop.spam.example/x", "a@example.com", "spam.example"),
        ("hello", "bot@mail.spam.example", "spam.example"),
        ("格安のカジノです", "a@example.com", "カジノ"),
        ("free money now", "a@example.com", "free money"),
    ],
)
def test_the_admins_list_matches_words_and_domains(text, sender, found):
    entries = signals.parse_words("casino\nspam.example\nカジノ\nFree Money\n\ncasino")
    assert entries == ["casino", "spam.example", "カジノ", "free money"]
    assert signals.listed_match(text, sender, entries) == found


def send(client, **fields):
    return client.post("/api/inquiries", json={**VALID, **fields})


def test_a_listed_word_counts_against_and_the_spam_page_says_why(admin_client, client, query):
    page = admin_client.get("/admin/spam")
    data = {"words": "casino\nspam.example", "csrf_token": csrf_token(admin_client, "/admin/spam")}
    assert page.status_code == 200 and admin_client.post("/admin/spam/words", data=data).status_code == 303
    assert send(client, message="Play casino games today").status_code == 201
    assert send(client, message="A plain question").status_code == 201
    assert query.rows(CHECKS) == [("spam", ["no_solution", "listed_word:casino"]), ("inbox", None)]
    listing = admin_client.get("/admin/spam").get_data(as_text=True)
    assert "a word or domain on your list: casino" in listing and "casino\nspam.example</textarea>" in listing
    first = query(select(Inquiry.id).order_by(Inquiry.id))[0]
    detail = admin_client.get(f"/admin/inquiries/{first}").get_data(as_text=True)
    assert "sent without the browser" in detail and "automatic check (no JavaScript" in detail


def test_admins_moves_teach_the_score_and_mark_senders(admin_client, client, query):
    for number in range(6):
        send(
            client,
            name=f"Bot {number}",
            email=f"bot{number}@bulk.example",
            message=f"Cheap replica watches and pills, discount offer number {number}",
        )
        send(
            client,
            name=f"Person {number}",
            email=f"p{number}@example.com",
            message=f"Could you tell me when my booking {number} is confirmed? Thanks for your help",
        )
    ids = query(select(Inquiry.id).where(Inquiry.name.like("Bot%")))
    data = {"ids": [str(each) for each in ids], "csrf_token": csrf_token(admin_client, "/admin/")}
    assert admin_client.post("/admin/spam/mark", data=data).status_code == 303
    assert set(query(select(Inquiry.status).where(Inquiry.id.in_(ids)))) == {"spam"}
    assert query.count(SpamToken) > 10
    assert query.scalar(select(SpamToken.spam).where(SpamToken.token == learned.TOTAL)) == 6
    people = query(select(Inquiry.id).where(Inquiry.name.like("Person%")))
    # Moved to spam and back: the people's words count on the other side.
    for each in people:
        admin_client.post("/admin/spam/mark", data={"ids": str(each), "csrf_token": data["csrf_token"]})
    admin_client.post(
        "/admin/spam/not-spam", data={"ids": [str(each) for each in people], "csrf_token": data["csrf_token"]}
    )
    send(client, email="new@example.org", message="Replica watches with a discount offer and cheap pills")
    send(client, email="bot1@bulk.example", message="Hello there")
    send(client, email="new2@example.org", message="When is my booking confirmed? Thanks for your help")
    last = query.rows(CHECKS)[-3:]
    assert last[0][0] == "spam" and any(code.startswith("learned:") for code in last[0][1])
    assert last[1] == ("spam", ["no_solution", "marked_sender"])
    assert last[2] == ("inbox", None)


def test_the_inbox_counts_this_weeks_spam_and_the_spam_page_shows_each_forms_retention(admin_client, client):
    fields = [{"type": "textarea", "key": "message", "label-en": "Message", "required": "1"}]
    data = editor_post(
        admin_client, "/admin/forms/new", fields, slug="short", spam_retention_days="14", **{"title-en": "Short form"}
    )
    assert admin_client.post("/admin/forms/new", data=data).status_code == 303
    send(client, message="<a href='https://x.example'>x</a> https://y.example")
    inbox = admin_client.get("/admin/").get_data(as_text=True)
    assert "1 inquiry arrived in spam in the last 7 days." in inbox
    assert "Spam to Short form is deleted after 14 days." in admin_client.get("/admin/spam").get_data(as_text=True)


def test_weights_add_up_as_documented():
    verdict = spam.Verdict(spam.Reason.NO_SOLUTION, checks=("own_page", "links:5", "learned:0.05"))
    assert verdict.score == 1 - 1 + 3 - 1 and not verdict.spam
    assert verdict.against() == ["no_solution", "links:5"]
    assert spam.Verdict(None, "signature", checks=("too_fast",)).spam  # -2 + 6
