"""A held e-mail keeps its files: stored under the form files' rules, listed and downloaded on /admin/held,
moved to the inquiry when an owner puts the e-mail into its thread, deleted with it (by an owner or the
cleanup). The file and WAL side of a deletion on SQLite: tests/inquiries/test_gone.py."""

from __future__ import annotations

from email.message import EmailMessage

from sqlalchemy import select

from app.models import Attachment, AttachmentChunk, InboundMessage
from tests.conversations.conftest import post
from tests.conversations.test_inbound import tagged
from tests.factories import add_file, inquiry
from tests.helpers import csrf_token

PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n" + b"% filler\n" * 40_000  # 360 KB: two pieces
EXE = b"MZ\x90\x00" + b"\x00" * 200


def with_files(sender: str, to: str, *files: tuple[bytes, str, str, str], message_id: str = "<f@example.com>"):
    """An e-mail from ``sender`` to ``to`` carrying ``files`` (bytes, main type, subtype, file name)."""
    message = EmailMessage()
    message["From"], message["To"], message["Subject"], message["Message-ID"] = sender, to, "Files", message_id
    message.set_content("The plan, attached.")
    for data, maintype, subtype, name in files:
        message.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    return message.as_bytes()


def stored_bytes(query, attachment_id: int) -> bytes:
    pieces = query(select(AttachmentChunk).where(AttachmentChunk.attachment_id == attachment_id))
    return b"".join(bytes(piece.data) for piece in sorted(pieces, key=lambda piece: piece.seq))


def held_from_work(app, client, added, clock):
    """An inquiry from ada@example.com and Ada's answer from her work address with a PDF and a program."""
    [row] = added([inquiry(clock, email="ada@example.com")])
    raw = with_files(
        "ada@work.example",
        tagged(app, row),
        (PDF, "application", "pdf", "../plan.pdf"),
        (EXE, "application", "octet-stream", "invoice.exe"),
    )
    assert post(client, raw).json["outcome"] == "held"
    return row


def test_a_held_message_keeps_its_files_by_the_form_files_rules_and_owners_download_them(
    app, client, added, clock, query, login
):
    row = held_from_work(app, client, added, clock)
    [held] = query(select(InboundMessage))
    [kept] = query(select(Attachment))
    assert (kept.held_message_id, kept.inquiry_id, kept.field_key) == (held.id, None, f"mail:{held.id}")
    assert (kept.name, kept.content_type, kept.size) == ("plan.pdf", "application/pdf", len(PDF))
    assert stored_bytes(query, kept.id) == PDF and held.files_refused == 1  # the program is not kept
    login()
    page = client.get("/admin/held").get_data(as_text=True)
    link = f"/admin/held/{held.id}/files/{kept.id}"
    assert link in page and "Download plan.pdf" in page and "1 file was not kept" in page
    response = client.get(link)
    assert response.status_code == 200 and response.get_data() == PDF
    assert response.headers["Content-Disposition"].startswith("attachment")
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert client.get(f"/admin/held/{held.id + 1}/files/{kept.id}").status_code == 404
    assert client.get(f"/admin/inquiries/{row}/files/{kept.id}").status_code == 404  # not the inquiry's yet
    assert f"/files/{kept.id}" not in client.get(f"/admin/inquiries/{row}").get_data(as_text=True)


def test_mail_that_matched_nothing_keeps_its_files_and_oversized_ones_are_refused(app, client, clock, query):
    app.config["ATTACHMENT_MAX_BYTES"] = 100_000
    small = PDF[:50_000]
    raw = with_files(
        "eve@example.net",
        "replies@mail.example.org",
        (small, "application", "pdf", "small.pdf"),
        (PDF, "application", "pdf", "large.pdf"),
        (EXE, "application", "pdf", "disguised.pdf"),  # the type is read from the bytes, never the name
    )
    assert post(client, raw).json == {"outcome": "held", "kind": "message", "inquiry": None}
    [held] = query(select(InboundMessage))
    [kept] = query(select(Attachment))
    assert (kept.name, kept.held_message_id, held.files_refused) == ("small.pdf", held.id, 2)
    assert stored_bytes(query, kept.id) == small


def test_putting_a_held_message_into_the_thread_moves_its_files_to_the_inquiry(app, client, added, clock, query, login):
    row = held_from_work(app, client, added, clock)
    [held] = query(select(InboundMessage))
    [kept] = query(select(Attachment))
    login()
    token = csrf_token(client, "/admin/held")
    assert client.post(f"/admin/held/{held.id}/thread", data={"csrf_token": token}).status_code == 303
    [moved] = query(select(Attachment))
    assert (moved.id, moved.inquiry_id, moved.held_message_id) == (kept.id, row, None)
    page = client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    thread = page[page.index(f'id="message-{held.id}"') :]
    assert f"/admin/inquiries/{row}/files/{kept.id}" in thread[: thread.index("</li>\n")]  # under its message
    assert client.get(f"/admin/inquiries/{row}/files/{kept.id}").get_data() == PDF
    assert client.get(f"/admin/held/{held.id}/files/{kept.id}").status_code == 404


def test_deleting_held_mail_deletes_its_files_and_their_pieces(app, client, added, clock, query, login):
    row = held_from_work(app, client, added, clock)
    with app.app_context():
        from app.core.db import get_session

        add_file(get_session(), row, b"the inquiry's own file")
    [held] = query(select(InboundMessage))
    login()
    token = csrf_token(client, "/admin/held")
    assert client.post(f"/admin/held/{held.id}/delete", data={"csrf_token": token}).status_code == 303
    assert [file.name for file in query(select(Attachment))] == ["note.txt"]
    assert query.count(AttachmentChunk) == 1


def test_the_cleanup_deletes_held_mail_past_its_time_its_files_pieces_first(app, client, added, clock, query):
    row = held_from_work(app, client, added, clock)
    with app.app_context():
        from app.core.db import get_session

        add_file(get_session(), row, b"the inquiry's own file")
    clock.advance(days=29)
    with app.app_context():
        from app.cleanup import dry_run, run

        assert dry_run()["attachment_chunks"][0] == 0
        clock.advance(days=2)
        assert dry_run()["attachment_chunks"][0] == 2  # the PDF's two pieces, not the inquiry's file
        finished = run("test", force=True)
    assert finished.status == "ok"
    assert query(select(InboundMessage)) == []
    assert [file.inquiry_id for file in query(select(Attachment))] == [row]
    assert query.count(AttachmentChunk) == 1


def test_an_erasure_of_the_inquiry_a_held_message_named_takes_the_message_and_its_files(
    app, client, added, clock, query, login
):
    held_from_work(app, client, added, clock)
    login()
    token = csrf_token(client, "/admin/people")
    response = client.post(
        "/admin/people/erase", data={"email": "ada@example.com", "confirm": "1", "csrf_token": token}
    )
    assert response.status_code == 303
    assert query(select(InboundMessage)) == [] and query(select(Attachment)) == []
    assert query.count(AttachmentChunk) == 0
