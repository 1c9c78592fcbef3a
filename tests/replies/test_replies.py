"""Replies from the inbox: composed on the detail page, sent through the outbox to a real SMTP server
(aiosmtpd with STARTTLS and AUTH), threaded, safe from header injection, deleted with their inquiry."""

from __future__ import annotations

import email
import re
from datetime import UTC, datetime
from email.policy import default as default_policy

import pytest
from sqlalchemy import select, update

from app.core.db import get_session
from app.models import Admin, AuditEntry, Delivery, Inquiry, Preference, Reply, ReplyKind
from app.replies import message, sending
from devtools.receivers import Certificate, MailServer
from tests.conftest import FakeClock
from tests.factories import add_inquiries, inquiry
from tests.helpers import VALID, csrf_token, settle, solution

TEAM = "team@example.org"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime.now(UTC).replace(microsecond=0))


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> Certificate:
    return Certificate.make(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def mail(certificate):
    server = MailServer(certificate).start()
    yield server
    server.stop()


@pytest.fixture
def app_config(app_config, mail, certificate) -> dict:
    return {
        **app_config,
        "SMTP_URL": mail.url,
        "SMTP_CA_FILE": str(certificate.cert),
        "MAIL_FROM": "sundown@mail.example.org",
        "NOTIFY_EMAILS": ["admin@example.org"],
        "REPLY_TO": TEAM,
        "DELIVERY_RETRY_BASE": 60,
    }


@pytest.fixture
def added(app):
    """``added(rows)``: insert inquiries in an app context of their own (requests then get fresh sessions)."""

    def add(rows):
        with app.app_context():
            return add_inquiries(get_session(), rows)

    return add


def reply(client, inquiry_id: int, body: str = "Thank you, we will call you.", subject: str = "Re: Contact", **extra):
    """Post the composer of ``inquiry_id`` and wait for the work after the response."""
    token = csrf_token(client, f"/admin/inquiries/{inquiry_id}")
    with client.post(
        f"/admin/inquiries/{inquiry_id}/reply", data={"csrf_token": token, "subject": subject, "body": body, **extra}
    ) as response:
        status, page = response.status_code, response.get_data(as_text=True)
    settle(client.application)
    return status, page


def test_a_reply_reaches_the_person_threaded_and_marks_the_inquiry_answered(added, admin_client, clock, query, mail):
    [row] = added([inquiry(clock, name="Grace Hopper", email="grace@example.com", message="Can I visit on Monday?")])
    page = admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    assert 'id="reply-body"' in page and "&gt; Can I visit on Monday?" in page  # the message quoted
    assert 'value="Re: Contact"' in page

    status, _page = reply(admin_client, row)
    assert status == 303
    [(recipients, raw)] = mail.envelopes
    assert recipients == ["grace@example.com"]  # the person, never the site's recipients
    message = email.message_from_bytes(raw, policy=default_policy)
    assert message["To"] == "Grace Hopper <grace@example.com>"
    assert message["From"] == "sundown@mail.example.org"
    assert message["Reply-To"] == TEAM  # Ada has no address of her own: the team's
    assert message["Subject"] == "Re: Contact"
    thread = message["In-Reply-To"]
    assert re.fullmatch(rf"<inquiry-{row}\.[0-9a-f]{{16}}@mail\.example\.org>", thread)
    assert message["References"] == thread
    stored = query.rows(select(Reply.message_id, Reply.status, Reply.kind, Reply.sent_at))
    assert [(m, s, k) for m, s, k, _at in stored] == [(message["Message-ID"], "sent", "reply")]
    assert message["Message-ID"] != thread
    assert message.get_content().startswith("Thank you, we will call you.")

    answered_at, answered_by = query.rows(select(Inquiry.answered_at, Inquiry.answered_by))[0]
    assert answered_at is not None and answered_by == query.scalar(select(Admin.id))
    assert "reply_sent" in query(select(AuditEntry.action))
    page = admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    assert 'data-state="sent"' in page and "Reply by Ada" in page and "Thank you, we will call you." in page


def test_a_second_reply_is_its_own_message_in_the_same_thread_and_uses_the_admins_address(
    added, admin_client, clock, query, mail
):
    [row] = added([inquiry(clock)])
    token = csrf_token(admin_client, "/admin/account")
    assert (
        admin_client.post(
            "/admin/account/email", data={"csrf_token": token, "email": "ada@team.example.org"}
        ).status_code
        == 303
    )
    reply(admin_client, row, body="First")
    reply(admin_client, row, body="Second")
    first, second = (email.message_from_bytes(raw, policy=default_policy) for _to, raw in mail.envelopes)
    assert first["In-Reply-To"] == second["In-Reply-To"] == second["References"]
    assert first["Message-ID"] != second["Message-ID"]
    assert second["Reply-To"] == "ada@team.example.org"


def test_the_composer_names_the_address_answers_come_back_to(added, admin_client, clock, query, mail):
    [row] = added([inquiry(clock, email="grace@example.com")])
    page = admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    assert "their answer comes back to team@example.org." in page
    token = csrf_token(admin_client, "/admin/account")
    admin_client.post("/admin/account/email", data={"csrf_token": token, "email": "ada@team.example.org"})
    page = admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    assert "their answer comes back to ada@team.example.org." in page
    reply(admin_client, row)
    [(_to, raw)] = mail.envelopes
    assert email.message_from_bytes(raw, policy=default_policy)["Reply-To"] == "ada@team.example.org"


@pytest.fixture
def no_team_address(app_config):
    """No ``SUNDOWN_REPLY_TO`` (set before the app is built)."""
    app_config["REPLY_TO"] = None


def test_without_any_address_for_answers_the_composer_says_where_they_go(
    no_team_address, added, admin_client, clock, mail
):
    [row] = added([inquiry(clock, email="grace@example.com")])
    page = admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    assert "from sundown@mail.example.org; their answer goes there too, as no address for answers is set." in page
    assert 'href="/admin/account#admin-email">Set your address for answers</a>' in page
    assert "comes back to your address" not in page
    reply(admin_client, row)
    [(_to, raw)] = mail.envelopes
    assert email.message_from_bytes(raw, policy=default_policy)["Reply-To"] is None


def test_the_account_page_refuses_an_address_that_is_not_one(admin_client, query):
    token = csrf_token(admin_client, "/admin/account")
    response = admin_client.post("/admin/account/email", data={"csrf_token": token, "email": "not an address"})
    assert response.status_code == 422
    assert "Enter an e-mail address" in response.get_data(as_text=True)
    assert query(select(Admin.email)) == [None]


FORGED_NAMES = [
    "Eve\r\nBcc: victim@example.net",
    "Eve\nBcc: victim@example.net",
    "=?utf-8?q?Eve=0D=0ABcc:_victim@example.net?=",
    "Ève \u2028Bcc: victim@example.net",
    "Eve\x01\x1b[31m\x7f" + "é" * 90,  # a name (100 at most) of one long encoded line
]


@pytest.mark.parametrize("name", FORGED_NAMES)
def test_no_name_or_subject_a_visitor_gave_forges_a_header(added, admin_client, clock, mail, name):
    [row] = added([inquiry(clock, name=name, email="eve@example.com")])
    status, _page = reply(admin_client, row, subject=f"Re: {name}"[:150])
    assert status == 303
    [(recipients, raw)] = mail.envelopes
    assert recipients == ["eve@example.com"]
    for policy in (default_policy, email.policy.compat32):
        message = email.message_from_bytes(raw, policy=policy)
        assert message["Bcc"] is None and message["Cc"] is None
        assert (
            [address.addr_spec for address in message["To"].addresses] == ["eve@example.com"]
            if policy is default_policy
            else True
        )
    header_block = raw.split(b"\r\n\r\n", 1)[0]
    assert not re.search(rb"^(Bcc|Cc):", header_block, re.MULTILINE | re.IGNORECASE)
    assert all(len(line) <= 998 for line in header_block.split(b"\r\n"))
    assert all(byte < 128 for byte in header_block)  # non-ASCII arrives encoded
    decoded = email.message_from_bytes(raw, policy=default_policy)
    assert "\n" not in str(decoded["To"]) and "\r" not in str(decoded["Subject"])


def test_an_address_with_a_line_break_is_never_used_and_fails_at_once(added, admin_client, app, clock, query, mail):
    """No retry can make the address usable: the outcome is permanent, so the reply fails at its first attempt
    instead of retrying for a day."""
    [row] = added([inquiry(clock, email="eve@example.com\r\nBcc: victim@example.net")])
    reply(admin_client, row)
    assert mail.envelopes == []
    assert query.rows(select(Delivery.status, Delivery.attempts, Delivery.last_error)) == [
        ("failed", 1, "the address cannot be used in an e-mail")
    ]
    assert query(select(Reply.status)) == ["failed"]
    clock.advance(hours=1)
    assert "0 attempted" in app.test_cli_runner().invoke(args=["deliver"]).output
    page = admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    assert 'data-state="failed"' in page and "the address cannot be used in an e-mail" in page


UNANSWERABLE = ["eve=?utf-8?q?x?=1@example.org", "=?utf-8?b?ZXZl?=@example.org", "a=?b@example.org"]
ODD_BUT_ANSWERABLE = ["o'hara+tag@example.org", "x=y?z@example.org", "a.b-c_d~e@sub.example.org"]


@pytest.mark.parametrize("address", UNANSWERABLE)
def test_intake_refuses_an_address_no_reply_could_be_sent_to(client, query, address):
    response = client.post("/api/inquiries", json={**VALID, "email": address, "altcha": solution(client)})
    assert response.status_code == 422 and list(response.get_json()["errors"]) == ["email"]
    assert query.count(Inquiry) == 0
    with pytest.raises(ValueError):  # the rule replies are built by says the same
        message.recipient(Inquiry(name="Eve", email=address))


def test_every_address_intake_takes_gets_its_reply(client, admin_client, query, mail):
    for address in ODD_BUT_ANSWERABLE:
        with client.post("/api/inquiries", json={**VALID, "email": address, "altcha": solution(client)}) as response:
            assert response.status_code == 201
    for row in query(select(Inquiry.id).order_by(Inquiry.id)):
        token = csrf_token(admin_client, f"/admin/inquiries/{row}")
        with admin_client.post(
            f"/admin/inquiries/{row}/reply", data={"csrf_token": token, "subject": "Re: Contact", "body": "Thanks."}
        ) as response:
            assert response.status_code == 303
    settle(admin_client.application)  # the notifications and the replies, sent together
    answered = sorted(recipients for recipients, _raw in mail.envelopes if recipients != ["admin@example.org"])
    assert answered == sorted([address] for address in ODD_BUT_ANSWERABLE)
    assert query(select(Reply.status)) == ["sent"] * len(ODD_BUT_ANSWERABLE)


def test_the_composer_refuses_an_empty_reply_and_keeps_what_was_written(added, admin_client, clock, query):
    [row] = added([inquiry(clock)])
    status, page = reply(admin_client, row, body="  \n ", subject="Kept subject")
    assert status == 422 and "Write a reply." in page and 'value="Kept subject"' in page
    status, page = reply(admin_client, row, subject="\r\n")
    assert status == 422 and "Write a subject." in page
    status, page = reply(admin_client, row, body="x" * 20_001)
    assert status == 422 and "The reply is too long" in page
    assert query.count(Reply) == 0 and query.count(Delivery) == 0


def test_a_reply_without_a_csrf_token_is_refused(added, admin_client, clock, query):
    [row] = added([inquiry(clock)])
    response = admin_client.post(f"/admin/inquiries/{row}/reply", data={"subject": "Re", "body": "Hi"})
    assert response.status_code == 400
    assert query.count(Reply) == 0


def test_spam_is_not_answered_from_the_inbox(added, admin_client, clock, query):
    [row] = added([inquiry(clock, status="spam")])
    assert "Move this inquiry to the inbox to reply to it." in admin_client.get(f"/admin/inquiries/{row}").get_data(
        as_text=True
    )
    status, page = reply(admin_client, row)
    assert status == 400 and "spam folder" in page
    assert query.count(Reply) == 0


@pytest.fixture
def no_smtp(app_config):
    app_config.update(SMTP_URL=None, SMTP_CA_FILE=None)


def test_without_smtp_the_composer_says_so_and_the_mailto_button_stays(no_smtp, added, admin_client, clock, query):
    [row] = added([inquiry(clock)])
    page = admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    assert "need an e-mail server (SUNDOWN_SMTP_URL)" in page and 'id="reply-body"' not in page
    assert 'id="reply" href="mailto:ada@example.com?' in page
    status, _page = reply(admin_client, row)
    assert status == 400 and query.count(Reply) == 0


def test_a_failing_relay_shows_retrying_with_the_error_then_sent(added, admin_client, clock, query, mail, app):
    [row] = added([inquiry(clock)])
    mail.stop()
    reply(admin_client, row)
    page = admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    assert 'data-state="retrying"' in page and "Last error: SMTP" in page
    mail.start()
    clock.advance(minutes=5)
    assert "1 attempted: 1 delivered" in app.test_cli_runner().invoke(args=["deliver"]).output
    assert query(select(Reply.status)) == ["sent"]
    assert len(mail.envelopes) == 1


def reply_states(client, row: int, **headers) -> dict:
    response = client.get(f"/admin/inquiries/{row}/replies.json", headers=headers)
    assert response.status_code == 200 and response.headers["Cache-Control"] == "no-store"
    return response.get_json()


def test_the_reply_states_follow_the_outbox_from_queued_through_retrying_to_sent(
    added, admin_client, clock, query, mail, app
):
    [row] = added([inquiry(clock)])
    assert reply_states(admin_client, row) == {"replies": [], "waiting": False}
    with app.test_request_context():  # queued as the composer queues it, before the outbox is woken
        session = get_session()
        queued = sending.queue(session, row, ReplyKind.REPLY, "Re: Contact", "Soon.", "en")
        session.commit()
    page = admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    assert f'data-reply-states="/admin/inquiries/{row}/replies.json"' in page and "/static/replies.js" in page
    said = {"id": queued, "state": "queued", "words": "Queued", "announce": "Queued: Re: Contact", "error": None}
    assert reply_states(admin_client, row) == {"replies": [said], "waiting": True}

    mail.stop()
    app.test_cli_runner().invoke(args=["deliver"])
    [retrying] = reply_states(admin_client, row)["replies"]
    assert retrying["state"] == "retrying" and retrying["words"] == "Retrying"
    assert retrying["error"].startswith("Last error: SMTP")

    mail.start()
    clock.advance(minutes=5)
    assert "1 attempted: 1 delivered" in app.test_cli_runner().invoke(args=["deliver"]).output
    states = reply_states(admin_client, row, **{"Accept-Language": "ja"})
    assert states["waiting"] is False
    assert [(r["state"], r["words"], r["error"]) for r in states["replies"]] == [("sent", "送信済み", None)]
    page = admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    assert '<span class="badge reply-state ok" data-state="sent">Sent</span>' in page  # as before the script


def test_the_reply_states_are_refused_to_those_who_may_not_open_the_inquiry(added, admin_client, app, clock, login):
    [row] = added([inquiry(clock)])
    reply(admin_client, row)
    stranger = app.test_client()
    assert stranger.get(f"/admin/inquiries/{row}/replies.json").status_code in (302, 303, 401)
    assert admin_client.get(f"/admin/inquiries/{row + 1}/replies.json").status_code == 404


def test_a_reply_that_fails_every_attempt_says_failed_even_after_its_outbox_row_is_gone(
    added, login, admin_client, clock, query, mail, app
):
    [row] = added([inquiry(clock)])
    mail.mailbox.refused.add("ada@example.com")
    reply(admin_client, row)
    runner = app.test_cli_runner()
    for _ in range(12):
        clock.advance(hours=3)
        runner.invoke(args=["deliver"])
    assert query(select(Reply.status)) == ["failed"]
    query.using(lambda session: (session.execute(update(Reply).values(delivery_id=None)), session.commit()))
    login("Bea")  # Ada's login has idled out meanwhile
    page = admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    assert 'data-state="failed"' in page


def test_replies_never_go_in_the_digest_and_the_site_recipients_get_none(added, admin_client, clock, query, mail):
    query.using(lambda session: (session.add(Preference(key="notify_digest_minutes", value="60")), session.commit()))
    [row] = added([inquiry(clock)])
    reply(admin_client, row)
    assert [to for to, _raw in mail.envelopes] == [["ada@example.com"]]


def test_a_deleted_inquiry_takes_its_replies_and_their_outbox_rows(added, admin_client, clock, query, mail):
    [row] = added([inquiry(clock)])
    mail.stop()
    reply(admin_client, row)
    assert query.count(Reply) == 1
    token = csrf_token(admin_client, f"/admin/inquiries/{row}")
    admin_client.post("/admin/inquiries/delete", data={"csrf_token": token, "ids": [row], "confirm": "1"})
    assert query.count(Reply) == 0 and query.count(Delivery) == 0


# --- Acknowledgements ------------------------------------------------------------


def acknowledging(app, include_message: bool = False, texts: dict | None = None, quote_new: bool = False) -> None:
    """Turn the site's form's acknowledgement on."""
    from app.models import Form

    with app.app_context():
        session = get_session()
        session.execute(
            update(Form).values(
                ack_enabled=True, ack_include_message=include_message, ack_texts=texts, ack_quote_new=quote_new
            )
        )
        session.commit()


def send_inquiry(client, address: str = "grace@example.com", solved: bool = True, locale: str = "en", **extra):
    from tests.helpers import VALID, solution

    body = {**VALID, "email": address, "altcha": solution(client) if solved else "x", **extra}
    with client.post("/api/inquiries", json=body, headers={"Accept-Language": locale}) as response:
        status = response.status_code
    settle(client.application)
    return status


def test_acknowledgements_are_off_by_default(client, query, mail):
    assert send_inquiry(client) == 201
    assert query.count(Reply) == 0
    assert [to for to, _raw in mail.envelopes] == [["admin@example.org"]]  # the notification only


def test_an_acknowledgement_reaches_the_person_in_their_language_with_the_placeholders_filled(app, client, query, mail):
    acknowledging(
        app, include_message=True, texts={"en": "Dear {name}, got it ({form}, {date}). {other}"}, quote_new=True
    )
    assert send_inquiry(client, locale="ja") == 201
    [ack] = [
        email.message_from_bytes(raw, policy=default_policy)
        for to, raw in mail.envelopes
        if to == ["grace@example.com"]
    ]
    assert ack["Auto-Submitted"] == "auto-replied" and ack["Content-Language"] == "ja"
    body = ack.get_content()
    assert "Ada Lovelace" in body and "{name}" not in body  # the shipped text (ja: translated)
    assert "> I have a question." in body
    assert ack["In-Reply-To"].startswith("<inquiry-")
    assert query(select(Reply.kind)) == ["ack"] and query(select(Reply.status)) == ["sent"]
    assert send_inquiry(client, address="bea@example.com") == 201  # in English: the admin's own text
    [english] = [
        email.message_from_bytes(raw, policy=default_policy) for to, raw in mail.envelopes if to == ["bea@example.com"]
    ]
    assert (
        english.get_content().startswith("Dear Ada Lovelace, got it (Contact, ") and "{other}" in english.get_content()
    )


def test_spam_and_the_honeypot_get_no_acknowledgement(app, client, query, mail):
    acknowledging(app)
    links = "Cheap offers: https://a.example https://b.example https://c.example"
    assert send_inquiry(client, solved=False, message=links) == 201  # no proof-of-work and links: the spam folder
    assert send_inquiry(client, website="http://spam.example") == 201  # the honeypot
    assert query.count(Reply) == 0
    assert mail.envelopes == []


def test_one_acknowledgement_per_address_an_hour_and_a_global_hourly_cap(app_config, make_app, query, clock):
    app = make_app({**app_config, "ACK_HOURLY_CAP": 2})
    client = app.test_client()
    acknowledging(app)
    from app.core import metrics

    before = {outcome: metrics.ACKNOWLEDGEMENTS.labels(outcome)._value.get() for outcome in metrics.ACK_OUTCOMES}
    for address in ("grace@example.com", "GRACE@example.com", "bea@example.com", "cy@example.com"):
        assert send_inquiry(client, address=address) == 201
    after = {outcome: metrics.ACKNOWLEDGEMENTS.labels(outcome)._value.get() for outcome in metrics.ACK_OUTCOMES}
    assert {outcome: after[outcome] - before[outcome] for outcome in after} == {
        "queued": 2,
        "address_capped": 1,
        "client_capped": 0,
        "hourly_capped": 1,
    }
    with app.app_context():
        assert len(list(get_session().scalars(select(Reply.id)))) == 2
    clock.advance(hours=1, seconds=1)
    assert send_inquiry(client, address="grace@example.com") == 201
    with app.app_context():
        assert len(list(get_session().scalars(select(Reply.id)))) == 3


def test_the_address_cap_keys_the_mailbox_and_a_per_client_cap_joins_it(app_config, make_app, query):
    app = make_app({**app_config, "ACK_PER_CLIENT_LIMITS": "2/3600"})
    client = app.test_client()
    acknowledging(app)
    for address in ("Grace.Hopper@gmail.com", "gracehopper+x@googlemail.com", "GRACE.HOPPER+y@GMAIL.com"):
        assert send_inquiry(client, address=address) == 201
    assert query.count(Reply) == 1  # one mailbox, however it is spelt
    for address in ("a@example.com", "b@example.com", "c@example.com"):
        assert send_inquiry(client, address=address) == 201
    assert query.count(Reply) == 2  # the client's second: its third address is capped


def test_the_message_is_quoted_only_to_an_address_that_has_written_before(app, client, query, mail):
    from app.models import InboundMessage

    acknowledging(app, include_message=True)
    assert send_inquiry(client, address="stranger@example.com") == 201
    [first] = [raw for to, raw in mail.envelopes if to == ["stranger@example.com"]]
    assert b"I have a question" not in first  # a stranger's address never gets the visitor's text
    with app.app_context():
        session = get_session()
        session.add(
            InboundMessage(
                inquiry_id=1,
                state="thread",
                kind="message",
                sender="Grace@Example.com",
                sender_key="grace@example.com",
                sender_name="",
                subject="",
                body="Hi",
                files_refused=0,
                received_at=datetime.now(UTC),
            )
        )
        session.commit()
    assert send_inquiry(client, address="grace+forms@example.com") == 201
    [second] = [
        email.message_from_bytes(raw, policy=default_policy)
        for to, raw in mail.envelopes
        if to == ["grace+forms@example.com"]
    ]
    assert "> I have a question." in second.get_content()


# --- Replies are part of the inquiry's data ----------------------------------------


def test_the_inbox_search_finds_an_inquiry_by_its_reply_text(added, admin_client, clock, query, mail):
    [answered, other] = added([inquiry(clock, message="About the roof"), inquiry(clock, message="Other")])
    reply(admin_client, answered, body="We can come on Thursday with the Ladder Übertruck.")
    for text in ("thursday with", "Übertruck"):
        page = admin_client.get("/admin/", query_string={"q": text}).get_data(as_text=True)
        assert f"/admin/inquiries/{answered}" in page and f'/admin/inquiries/{other}"' not in page, text


def test_the_csv_export_counts_the_replies_and_gives_the_last_ones_time(added, admin_client, clock, mail):
    import csv
    import io

    [row] = added([inquiry(clock)])
    reply(admin_client, row, body="One")
    clock.advance(minutes=1)
    reply(admin_client, row, body="Two")
    header, values = csv.reader(io.StringIO(admin_client.get("/admin/export.csv").get_data(as_text=True)[1:]))
    found = dict(zip(header, values, strict=True))
    assert (found["replies"], found["last_reply_utc"]) == ("2", clock().strftime("%Y-%m-%d %H:%M:%S"))


def test_the_people_export_holds_the_replies(added, admin_client, clock, mail):
    [row] = added([inquiry(clock)])
    reply(admin_client, row, body="Our answer")
    document = admin_client.get("/admin/people/export.json?email=ada@example.com").get_json()
    [sent] = document["inquiries"][0]["replies"]
    assert (sent["kind"], sent["admin"], sent["status"], sent["body"]) == ("reply", "Ada", "sent", "Our answer")


def test_an_erasure_takes_the_replies_and_a_legal_hold_keeps_them(added, admin_client, clock, query, mail):
    [held, free] = added([inquiry(clock, legal_hold=True, hold_reason="Claim"), inquiry(clock)])
    reply(admin_client, held, body="Held answer")
    reply(admin_client, free, body="Free answer")
    token = csrf_token(admin_client, "/admin/people?email=ada@example.com")
    response = admin_client.post(
        "/admin/people/erase", data={"csrf_token": token, "email": "ada@example.com", "confirm": "1"}
    )
    assert response.status_code in (200, 303), response.get_data(as_text=True)[:500]
    assert query(select(Reply.body)) == ["Held answer"]


def test_the_cleanup_takes_the_replies_of_the_inquiries_it_deletes(added, admin_client, clock, query, mail, app):
    [row] = added([inquiry(clock, days_old=100)])
    reply(admin_client, row)
    clock.advance(days=100)
    app.test_cli_runner().invoke(args=["cleanup"])
    assert query.count(Inquiry) == 0 and query.count(Reply) == 0
