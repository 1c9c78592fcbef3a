"""People's answers through ``POST /internal/mail``: matched by the signed address or thread id, held apart
otherwise, automatic mail recognised, hostile messages refused or stored safely, never a 500."""

from __future__ import annotations

from sqlalchemy import select

from app.models import Attachment, InboundMessage, Inquiry, Reply
from app.replies.message import thread_id
from tests.conversations.conftest import INBOUND, mail, post
from tests.factories import inquiry


def tagged(app, inquiry_id: int) -> str:
    with app.app_context():
        from app.conversations.references import reply_address

        return reply_address(inquiry_id)


def thread_of(app, inquiry_id: int) -> str:
    with app.app_context():
        return thread_id(inquiry_id)


def test_an_answer_to_the_signed_address_joins_the_thread_and_reopens_the_inquiry(
    app, client, added, clock, query, read_by_an_admin
):
    [row] = added([inquiry(clock, answered_at=clock())])
    read_by_an_admin(row)
    response = post(client, mail(to=tagged(app, row)))
    assert response.status_code == 202, response.get_data(as_text=True)
    assert response.json == {"outcome": "thread", "kind": "message", "inquiry": row}
    [stored] = query(select(InboundMessage))
    assert (stored.inquiry_id, stored.state, stored.sender) == (row, "thread", "ada@example.com")
    assert stored.body == "Thanks, Monday suits me."
    [again] = query(select(Inquiry))
    assert read_by_an_admin.count() == 0 and again.answered_at is None and again.last_message_at == clock()


def test_the_body_is_taken_whatever_the_content_type(app, client, added, clock):
    [row] = added([inquiry(clock)])
    for kind in ("application/x-www-form-urlencoded", "message/rfc822", "text/plain", "multipart/form-data"):
        raw = mail(to=tagged(app, row), Message_ID=f"<{kind.replace('/', '.')}@example.com>")
        assert post(client, raw, content_type=kind).json["outcome"] == "thread"


def test_the_thread_id_in_references_matches_when_the_address_has_no_tag(app, client, added, clock):
    [row] = added([inquiry(clock)])
    raw = mail(In_Reply_To="<reply-1@mail.example.org>", References=thread_of(app, row))
    assert post(client, raw).json == {"outcome": "thread", "kind": "message", "inquiry": row}


def test_a_reply_s_message_id_in_in_reply_to_matches(app, client, added, clock, query):
    [row] = added([inquiry(clock)])
    with app.app_context():
        from app.core import db
        from app.replies import sending

        with db.transaction(write=True) as session:
            sending.queue(session, row, "reply", "Re: Contact", "Hello", "en")
    [sent] = query(select(Reply))
    assert post(client, mail(In_Reply_To=sent.message_id)).json["inquiry"] == row


def test_a_forged_tag_or_thread_id_matches_nothing_and_is_held_apart(app, client, added, clock, query):
    [row] = added([inquiry(clock)])
    forged_address = INBOUND.replace("@", f"+i{row}-0123456789abcdef@")
    forged_thread = thread_of(app, row).replace(".", ".f", 1)[:-2] + ">"
    for raw in (mail(to=forged_address), mail(References=forged_thread), mail()):
        assert post(client, raw).json == {"outcome": "held", "kind": "message", "inquiry": None}
    assert {m.state for m in query(select(InboundMessage))} == {"held"}
    assert query(select(Inquiry))[0].last_message_at is None


def test_another_sender_is_held_apart_but_the_person_s_other_spelling_is_not(app, client, added, clock, query):
    [row] = added([inquiry(clock, email="Grace.Hopper@gmail.com")])
    address = tagged(app, row)
    assert post(client, mail(sender="eve@example.net", to=address)).json["outcome"] == "held"
    assert (
        post(client, mail(sender="gracehopper+news@GoogleMail.com", to=address, Message_ID="<b@example.com>")).json[
            "outcome"
        ]
        == "thread"
    )
    held = query(select(InboundMessage).where(InboundMessage.state == "held"))
    assert [(m.reason, m.inquiry_id) for m in held] == [("other_sender", row)]


def test_the_sender_is_read_before_encoded_words_are_decoded(app, client, added, clock, query):
    [row] = added([inquiry(clock, email="ada@example.com")])
    raw = (
        f"From: =?utf-8?q?ada=40example.com?= <eve@evil.example>\r\nTo: {tagged(app, row)}\r\n"
        f"Subject: =?utf-8?q?Hi=0D=0ABcc:_x@example.net?=\r\n\r\nHello\r\n"
    ).encode()
    assert post(client, raw).json["outcome"] == "held"
    # Two addresses in one From (a decoded name that reads as one): no sender at all.
    assert (
        post(
            client,
            mail(sender="ada@example.com <eve@evil.example>", to=tagged(app, row), Message_ID="<two@example.com>"),
        ).json["outcome"]
        == "held"
    )
    first, second = query(select(InboundMessage).order_by(InboundMessage.id))
    assert first.sender == "eve@evil.example" and first.sender_name == "ada@example.com"
    assert first.subject == "Hi Bcc: x@example.net"  # one line: never a header again
    assert second.sender == ""


def test_automatic_replies_join_the_thread_but_reopen_nothing(app, client, added, clock, query, read_by_an_admin):
    [row] = added([inquiry(clock, answered_at=clock())])
    read_by_an_admin(row)
    for number, headers in enumerate(
        (
            {"Auto_Submitted": "auto-replied"},
            {"Precedence": "bulk"},
            {"X_Autoreply": "yes"},
            {"List_Id": "<news.example.com>"},
        )
    ):
        raw = mail(to=tagged(app, row), subject="Out of office", Message_ID=f"<auto{number}@example.com>", **headers)
        assert post(client, raw).json == {"outcome": "thread", "kind": "auto_reply", "inquiry": row}
    [still] = query(select(Inquiry))
    assert read_by_an_admin.count() == 1 and still.answered_at is not None and still.last_message_at is None


def dsn(original_id: str, status: str = "5.1.1") -> bytes:
    return (
        f"From: Mail Delivery System <MAILER-DAEMON@mx.example.com>\r\nTo: sundown@mail.example.org\r\n"
        f"Subject: Undelivered Mail Returned to Sender\r\nMessage-ID: <dsn-{status}@mx.example.com>\r\n"
        f'MIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status; boundary="B"\r\n\r\n'
        f"--B\r\nContent-Type: text/plain\r\n\r\nThe mail could not be delivered.\r\n"
        f"--B\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.example.com\r\n\r\n"
        f"Final-Recipient: rfc822; ada@example.com\r\nAction: failed\r\nStatus: {status}\r\n\r\n"
        f"--B\r\nContent-Type: text/rfc822-headers\r\n\r\nFrom: sundown@mail.example.org\r\n"
        f"Message-ID: {original_id}\r\nSubject: Re: Contact\r\n\r\n--B--\r\n"
    ).encode()


def test_a_bounce_marks_its_reply_failed_and_reopens_nothing(app, client, added, clock, query, read_by_an_admin):
    [row] = added([inquiry(clock)])
    read_by_an_admin(row)
    with app.app_context():
        from app.core import db
        from app.replies import sending

        with db.transaction(write=True) as session:
            sending.queue(session, row, "reply", "Re: Contact", "Hello", "en")
    [sent] = query(select(Reply))
    assert post(client, dsn(sent.message_id)).json == {"outcome": "thread", "kind": "bounce", "inquiry": row}
    assert query(select(Reply))[0].status == "failed"
    [stored] = query(select(InboundMessage))
    assert stored.reason == "bounce 5.1.1"
    assert read_by_an_admin.count() == 1
    assert post(client, dsn("<unknown@example.org>", "5.2.2")).json["outcome"] == "held"


def test_a_message_id_seen_before_is_stored_once(app, client, added, clock, query):
    [row] = added([inquiry(clock)])
    raw = mail(to=tagged(app, row), Message_ID="<once@example.com>")
    assert post(client, raw).json["outcome"] == "thread"
    assert post(client, raw).json["outcome"] == "duplicate"
    assert len(query(select(InboundMessage))) == 1


def test_the_token_is_required(client):
    assert client.post("/internal/mail", data=mail()).status_code == 401
    assert post(client, mail(), token="wrong-token-0123456789").status_code == 403


def test_an_html_only_message_is_reduced_to_text_by_the_sanitiser(app, client, added, clock, query):
    [row] = added([inquiry(clock)])
    html = (
        "<html><head><style>p{color:red}</style></head><body><p>Yes <b>please</b> &amp; thanks"
        "<script>alert(1)</script></p><img src=x onerror=alert(2)><blockquote>old text</blockquote></body></html>"
    )
    raw = (
        f"From: ada@example.com\r\nTo: {tagged(app, row)}\r\nSubject: Re\r\nMIME-Version: 1.0\r\n"
        f"Content-Type: text/html; charset=utf-8\r\n\r\n{html}\r\n"
    ).encode()
    assert post(client, raw).json["outcome"] == "thread"
    [stored] = query(select(InboundMessage))
    assert stored.body == "Yes please & thanks\n\n> old text"


def test_files_follow_the_form_files_rules(app, client, added, clock, query):
    [row] = added([inquiry(clock)])
    from email.message import EmailMessage

    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "ada@example.com", tagged(app, row), "Files"
    message.set_content("Two files.")
    message.add_attachment(
        b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n",
        maintype="application",
        subtype="pdf",
        filename="../../etc/plan.pdf",
    )
    message.add_attachment(
        b"MZ\x90\x00" + b"\x00" * 200, maintype="application", subtype="octet-stream", filename="invoice.exe"
    )
    assert post(client, message.as_bytes()).json["outcome"] == "thread"
    [stored] = query(select(InboundMessage))
    [kept] = query(select(Attachment))
    assert (kept.name, kept.content_type, kept.field_key, kept.inquiry_id) == (
        "plan.pdf",
        "application/pdf",
        f"mail:{stored.id}",
        row,
    )
    assert stored.files_refused == 1


def nested(depth: int) -> bytes:
    head = "From: ada@example.com\r\nSubject: deep\r\nMIME-Version: 1.0\r\n"
    body = ""
    for level in range(depth):
        body += f'Content-Type: multipart/mixed; boundary="b{level}"\r\n\r\n--b{level}\r\n'
    body += "Content-Type: text/plain\r\n\r\nbottom\r\n"
    for level in reversed(range(depth)):
        body += f"--b{level}--\r\n"
    return (head + body).encode()


def test_hostile_messages_are_refused_with_a_clear_4xx_never_a_500(app, client, added, clock, query):
    [row] = added([inquiry(clock)])
    many = (
        "From: ada@example.com\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n"
        + "--x\r\nContent-Type: text/plain\r\n\r\npart\r\n" * 200
        + "--x--\r\n"
    ).encode()
    for raw in (nested(3000), nested(12), many, b"", b"\r\n\r\n"):
        response = post(client, raw)
        assert response.status_code == 422, response.get_data(as_text=True)
        assert "refused" in response.json["error"]
    app.config["INBOUND_MAX_BYTES"] = 70_000
    assert post(client, mail(body="x" * 80_000)).status_code == 413
    assert query(select(InboundMessage)) == []


def test_broken_encodings_are_stored_safely(app, client, added, clock, query):
    [row] = added([inquiry(clock)])
    raw = (
        f"From: ada@example.com\r\nTo: {tagged(app, row)}\r\nSubject: =?x-unknown?b?!!!?=\r\n"
        "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=x-no-such-charset\r\n"
        "Content-Transfer-Encoding: base64\r\n\r\n@@not base64@@\r\n"
        "\x00\x1b[31m\u202eevil\r\n"
    ).encode("utf-8", "surrogateescape")
    assert post(client, raw + b"\xff\xfe").status_code == 202
    [stored] = query(select(InboundMessage))
    assert "\x00" not in stored.body and "\x1b" not in stored.body and "\u202e" not in stored.body


def test_too_many_messages_are_refused_with_429(app, client):
    app.config["INBOUND_RATE_LIMITS"] = "2/60"
    statuses = [post(client, mail(Message_ID=f"<r{n}@example.com>")).status_code for n in range(3)]
    assert statuses == [202, 202, 429]


def test_the_thread_shows_replies_and_answers_in_order_as_text_with_the_quote_folded(app, client, added, clock, login):
    [row] = added([inquiry(clock, days_old=2)])
    with app.app_context():
        from app.core import db
        from app.replies import sending

        with db.transaction(write=True) as session:
            sending.queue(session, row, "reply", "Re: Contact", "Does Monday suit you?", "en")
    clock.advance(hours=1)
    body = "<b>Yes</b>, Monday.\n\nOn Mon, Sundown wrote:\n> Does Monday suit you?"
    assert post(client, mail(to=tagged(app, row), body=body, sender="Ada <ada@example.com>")).status_code == 202
    login()
    page = client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    assert page.index("Does Monday suit you?") < page.index("Answer from Ada")
    assert "&lt;b&gt;Yes&lt;/b&gt;, Monday." in page and "<b>Yes</b>" not in page  # text, never markup
    assert '<details class="quoted"><summary>' in page and "&gt; Does Monday suit you?</div></details>" in page


def test_owners_see_held_mail_and_put_it_into_the_inquiry_it_named(app, client, added, clock, query, login):
    [row] = added([inquiry(clock, email="ada@example.com")])
    assert post(client, mail(sender="ada@work.example", to=tagged(app, row))).json["outcome"] == "held"
    login()
    page = client.get("/admin/held").get_data(as_text=True)
    assert "ada@work.example" in page and f"Put it in inquiry #{row}" in page
    [held] = query(select(InboundMessage))
    from tests.helpers import csrf_token

    token = csrf_token(client, "/admin/held")
    assert client.post(f"/admin/held/{held.id}/thread", data={"csrf_token": token}).status_code == 303
    assert query(select(InboundMessage.state)) == ["thread"] and query(select(Inquiry))[0].last_message_at
    assert client.post(f"/admin/held/{held.id}/delete", data={"csrf_token": token}).status_code == 404


def test_the_cleanup_deletes_held_mail_after_its_time_and_threads_with_their_inquiry(app, client, added, clock, query):
    [old, kept] = added([inquiry(clock, days_old=400), inquiry(clock, days_old=1)])
    for row in (old, kept):
        assert post(client, mail(to=tagged(app, row), Message_ID=f"<t{row}@example.com>")).status_code == 202
    assert post(client, mail(Message_ID="<stray@example.com>")).json["outcome"] == "held"
    clock.advance(days=31)
    with app.app_context():
        from app.cleanup import run

        run("test", force=True)
    assert [(m.inquiry_id, m.state) for m in query(select(InboundMessage))] == [(kept, "thread")]


def test_a_form_counting_from_the_last_message_keeps_a_conversation_going_on(app, client, added, clock, query, login):
    from sqlalchemy import update

    from app.models import Form

    [quiet, talking, other] = added(
        [inquiry(clock, days_old=200), inquiry(clock, days_old=200), inquiry(clock, days_old=200)]
    )
    with app.app_context():
        from app.core.db import get_session

        session = get_session()
        session.execute(update(Form).values(retention_clock="last_message"))
        session.commit()
    clock.advance(days=-10)
    assert post(client, mail(to=tagged(app, talking))).json["outcome"] == "thread"
    clock.advance(days=10)
    login()
    page = client.get(f"/admin/inquiries/{talking}").get_data(as_text=True)
    assert "Past retention" not in page
    with app.app_context():
        from app.cleanup import dry_run, run

        assert dry_run()["inquiries"][0] == 2
        run("test", force=True)
    assert [row.id for row in query(select(Inquiry))] == [talking]
    assert query(select(InboundMessage.inquiry_id)) == [talking]
    privacy = client.get("/privacy").get_data(as_text=True)
    assert "180 days after the last message between us" in privacy


def test_the_people_export_holds_the_messages_received_but_not_held_mail(app, client, added, clock, login):
    [row] = added([inquiry(clock, email="ada@example.com")])
    assert post(client, mail(to=tagged(app, row), body="=1+1 Monday suits me.")).json["outcome"] == "thread"
    assert post(client, mail(sender="eve@evil.example", to=tagged(app, row), body="Not Ada")).json["outcome"] == "held"
    login()
    document = client.get("/admin/people/export.json?email=ada@example.com").get_json()
    [record] = document["inquiries"]
    at = clock().strftime("%Y-%m-%dT%H:%M:%SZ")
    assert record["messages"] == [
        {
            "kind": "message",
            "at": at,
            "from": "ada@example.com",
            "name": "Ada",
            "subject": "Re: Contact",
            "body": "=1+1 Monday suits me.",
            "files_refused": 0,
        }
    ]
    csv_text = client.get("/admin/people/export.csv?email=ada@example.com").get_data(as_text=True)
    assert f"{at} message ada@example.com" in csv_text and "=1+1 Monday suits me." in csv_text
    assert "Not Ada" not in csv_text


def test_received_and_refused_mail_is_counted_on_metrics(app_config, make_app, added, clock):
    from tests.core.test_metrics import TOKEN, scrape, value

    app = make_app({**app_config, "METRICS_TOKEN": TOKEN, "INBOUND_MAX_BYTES": 70_000, "INBOUND_RATE_LIMITS": "5/3600"})
    client = app.test_client()
    with app.app_context():
        from app.core.db import get_session
        from tests.factories import add_inquiries

        [row] = add_inquiries(get_session(), [inquiry(clock)])
    before = scrape(client)
    assert post(client, mail(to=tagged(app, row), Message_ID="<m1@example.com>")).json["outcome"] == "thread"
    assert post(client, mail(to=tagged(app, row), Message_ID="<m1@example.com>")).json["outcome"] == "duplicate"
    assert post(client, mail(sender="eve@example.net", to=tagged(app, row))).json["outcome"] == "held"
    assert post(client, mail(body="x" * 80_000)).status_code == 413
    assert post(client, b"").status_code == 422
    assert post(client, mail()).status_code == 429
    after = scrape(client)

    def grew(name: str, **labels) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    for outcome in ("thread", "duplicate", "held"):
        assert grew("sundown_inbound_messages_total", outcome=outcome) == 1, outcome
    for reason in ("too_large", "unreadable", "rate_limited"):
        assert grew("sundown_inbound_refused_total", reason=reason) == 1, reason
