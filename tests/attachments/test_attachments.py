"""Attachments (app/attachments): a form's file field, the limits, the bytes stored in pieces with the inquiry."""

from __future__ import annotations

import io
import struct
import zlib

import pytest
from sqlalchemy import func, select

from app.attachments import rules, store
from app.core import db
from app.models import Attachment, AttachmentChunk, Inquiry
from tests.factories import add_file, add_inquiries, inquiry
from tests.helpers import csrf_token, editor_post, rendered_ago, solution

FIELDS = [
    {"type": "text", "key": "name", "label-en": "Your name", "required": "1"},
    {"type": "email", "key": "email", "label-en": "E-mail", "required": "1"},
    {"type": "textarea", "key": "message", "label-en": "What happened?", "required": "1"},
    {"type": "file", "key": "files", "label-en": "Screenshots or documents", "max": "2"},
]
TEXT = {"name": "Ada", "email": "ada@example.com", "message": "The page breaks, see the screenshot."}


def png(width: int = 2, height: int = 2) -> bytes:
    """A real PNG image, grey pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def create_form(admin_client, fields=FIELDS) -> None:
    response = admin_client.post(
        "/admin/forms/new",
        data=editor_post(admin_client, "/admin/forms/new", fields, slug="support", **{"title-en": "Support"}),
    )
    assert response.status_code == 303, response.get_data(as_text=True)


def page_post(client, files, **text) -> dict:
    """What a browser posts from the page: the text, the files (``(bytes, name)`` pairs), token and solution."""
    return {
        **TEXT,
        **text,
        "csrf_token": csrf_token(client, "/f/support"),
        "rendered": rendered_ago(client.application),
        "altcha": solution(client),
        "files": [(io.BytesIO(data), name) for data, name in files],
    }


def stored_bytes(query, attachment_id: int) -> bytes:
    return b"".join(
        query(
            select(AttachmentChunk.data)
            .where(AttachmentChunk.attachment_id == attachment_id)
            .order_by(AttachmentChunk.seq)
        )
    )


def test_the_page_asks_for_files_with_their_limits_in_a_multipart_form(admin_client, client):
    create_form(admin_client)
    page = client.get("/f/support").get_data(as_text=True)
    assert 'enctype="multipart/form-data"' in page
    assert 'type="file" accept="image/png,image/jpeg,image/gif,image/webp,application/pdf,text/plain" multiple' in page
    assert "Up to 2 files, 10 MB in all: PNG, JPG, GIF, WEBP, PDF, TXT." in page


def test_files_sent_with_the_form_are_stored_in_pieces_with_the_inquiry(admin_client, client, query):
    create_form(admin_client)
    text = ("line of a log file\n" * 22_000).encode()  # 418 KB: two pieces
    response = client.post(
        "/f/support",
        data=page_post(client, [(png(), "../../screen shot\x00.png"), (text, "server.log")]),
        content_type="multipart/form-data",
    )
    assert response.status_code == 303, response.get_data(as_text=True)
    inquiry = query.scalar(select(Inquiry))
    files = query(select(Attachment).order_by(Attachment.id))
    assert [(f.inquiry_id, f.field_key, f.name, f.content_type, f.size) for f in files] == [
        (inquiry.id, "files", "screen shot_.png", "image/png", len(png())),
        (inquiry.id, "files", "server.log", "text/plain", len(text)),
    ]
    assert stored_bytes(query, files[0].id) == png() and stored_bytes(query, files[1].id) == text
    assert query.count(AttachmentChunk) == 1 + 2
    assert {
        "key": "files",
        "type": "file",
        "label": "Screenshots or documents",
        "value": ["screen shot_.png", "server.log"],
    } in inquiry.answers
    assert inquiry.message == TEXT["message"]  # files stay out of the message


def test_files_over_the_size_limit_are_refused_with_the_text_kept_and_nothing_stored(app, admin_client, query):
    app.config["ATTACHMENT_MAX_BYTES"] = 100_000
    create_form(admin_client)
    client = app.test_client()
    response = client.post(
        "/f/support",
        data=page_post(client, [(b"a" * 60_000, "a.txt"), (b"b" * 60_000, "b.txt")]),
        content_type="multipart/form-data",
    )
    page = response.get_data(as_text=True)
    assert response.status_code == 413
    assert "The files are larger than 97.7 KB in all" in page
    assert "your text is kept" in page and TEXT["message"] in page
    assert query.count(Inquiry) == query.count(Attachment) == query.count(AttachmentChunk) == 0


@pytest.mark.parametrize(
    "data, name",
    [
        (b"<html><script>alert(1)</script></html>\x00", "invoice.pdf"),  # neither a PDF nor text (a NUL byte)
        (b"MZ\x90\x00\x03\x00\x00\x00\x04\x00", "photo.png"),  # a Windows program
        (b"\xff\xfe\x00\x00not utf-8 \xc3", "notes.txt"),
    ],
)
def test_a_file_of_a_type_the_form_does_not_take_is_refused_by_its_content(admin_client, client, query, data, name):
    create_form(admin_client)
    response = client.post("/f/support", data=page_post(client, [(data, name)]), content_type="multipart/form-data")
    page = response.get_data(as_text=True)
    assert response.status_code == 415
    assert f"{name} is not a file this form takes. Attach only PNG, JPG, GIF, WEBP, PDF, TXT." in page
    assert TEXT["message"] in page
    assert query.count(Inquiry) == query.count(Attachment) == 0


@pytest.mark.parametrize(
    "data, name, stored",
    [
        (b"<html><script>alert(1)</script></html>", "invoice.pdf", "invoice.pdf.txt"),  # text, whatever its name says
        (b'<script language="VBScript">CreateObject("WScript.Shell")</script>', "x.hta", "x.hta.txt"),
        (b"[InternetShortcut]\r\nURL=file:///c:/windows/system32/calc.exe\r\n", "news.url", "news.url.txt"),
        (b"@echo off\r\ndel /q *\r\n", "run.bat", "run.bat.txt"),
        (b"<svg onload=alert(1)>", "logo.svg", "logo.svg.txt"),
        (b"a note\n", "README", "README.txt"),
        (b"a note\n", "notes.TXT", "notes.TXT"),
        (png(), "photo.jpg", "photo.jpg.png"),
        (png(), "shot.PNG", "shot.PNG"),
    ],
)
def test_a_file_keeps_no_extension_its_content_contradicts(admin_client, client, query, data, name, stored):
    create_form(admin_client)
    response = client.post("/f/support", data=page_post(client, [(data, name)]), content_type="multipart/form-data")
    assert response.status_code == 303
    [(kept, kind)] = query.rows(select(Attachment.name, Attachment.content_type))
    assert kept == stored and kind == ("image/png" if data == png() else "text/plain")
    [answers] = query(select(Inquiry.answers))
    assert [answer["value"] for answer in answers if answer["key"] == "files"] == [[stored]]
    inquiry_id, [file_id] = _only_inquiry_id(admin_client), query(select(Attachment.id))
    download = admin_client.get(f"/admin/inquiries/{inquiry_id}/files/{file_id}")
    assert download.headers["Content-Disposition"].endswith(f"filename*=UTF-8''{stored}")


@pytest.mark.parametrize(
    "name, kind, named",
    [
        ("x" * 200, "text/plain", "x" * 196 + ".txt"),
        ("file", "application/pdf", "file.pdf"),
        ("scan.jpeg", "image/jpeg", "scan.jpeg"),
        ("scan.tiff", "image/jpeg", "scan.tiff.jpg"),
        ("report.pdf", "application/pdf", "report.pdf"),
    ],
)
def test_the_name_of_a_kept_file_ends_in_an_extension_of_its_type(name, kind, named):
    assert rules.named_for(name, kind) == named


def test_more_files_than_the_field_takes_or_an_empty_one_are_refused(admin_client, client, query):
    create_form(admin_client)
    three = [(b"one", "1.txt"), (b"two", "2.txt"), (b"three", "3.txt")]
    response = client.post("/f/support", data=page_post(client, three), content_type="multipart/form-data")
    assert response.status_code == 422
    assert "Attach at most 2 files." in response.get_data(as_text=True)
    response = client.post(
        "/f/support", data=page_post(client, [(b"", "empty.txt")]), content_type="multipart/form-data"
    )
    assert response.status_code == 422
    assert "empty.txt is empty" in response.get_data(as_text=True)
    assert query.count(Inquiry) == 0


def test_no_file_chosen_sends_the_form_without_files(admin_client, client, query):
    create_form(admin_client)
    response = client.post("/f/support", data=page_post(client, [(b"", "")]), content_type="multipart/form-data")
    assert response.status_code == 303
    assert query.count(Inquiry) == 1 and query.count(Attachment) == 0


def test_a_body_far_over_the_limit_is_refused_unread(app, admin_client, query):
    app.config["ATTACHMENT_MAX_BYTES"] = 10_000
    create_form(admin_client)
    client = app.test_client()
    response = client.post(
        "/f/support", data=page_post(client, [(b"x" * 200_000, "big.txt")]), content_type="multipart/form-data"
    )
    assert response.status_code == 413
    assert "your text could not be kept" in response.get_data(as_text=True)
    assert query.count(Inquiry) == 0


def test_a_form_without_a_file_field_takes_no_upload_beyond_the_usual_limit(client, query):
    data = {**TEXT, "csrf_token": csrf_token(client), "files": (io.BytesIO(b"x" * 100_000), "big.txt")}
    response = client.post("/", data=data, content_type="multipart/form-data")
    assert response.status_code == 413
    assert query.count(Attachment) == 0


def test_the_api_takes_files_as_multipart_and_answers_in_json(admin_client, client, query):
    create_form(admin_client)
    data = {**TEXT, "altcha": solution(client), "files": (io.BytesIO(png()), "shot.png")}
    response = client.post("/api/forms/support/inquiries", data=data, content_type="multipart/form-data")
    assert (response.status_code, response.get_json()) == (201, {"ok": True})
    assert query.scalar(select(Attachment.name)) == "shot.png"
    data = {**TEXT, "altcha": solution(client), "files": (io.BytesIO(b"%!PS-Adobe-3.0\x00\x01"), "doc.pdf")}
    response = client.post("/api/forms/support/inquiries", data=data, content_type="multipart/form-data")
    assert response.status_code == 415
    assert "doc.pdf is not a file this form takes" in response.get_json()["errors"]["files"]
    assert query.count(Attachment) == 1


@pytest.mark.parametrize(
    "name, shown",
    [
        ("report.pdf", "report.pdf"),
        ("C:\\Users\\ada\\Desktop\\report.pdf", "report.pdf"),
        ("../../etc/passwd", "passwd"),
        ('a"b<c>|d?.txt', "a_b_c_d_.txt"),
        ("\u202eexe.txt", "exe.txt"),
        ("invoice\u202efdp.txt", "invoicefdp.txt"),
        ("zero\u200bwidth\ufeff.png", "zerowidth.png"),
        ("...", "file"),
        ("x" * 300 + ".pdf", "x" * 196 + ".pdf"),
    ],
)
def test_names_are_kept_for_display_only_and_made_safe(name, shown):
    assert rules.clean_name(name) == shown


def test_a_download_names_its_file_in_ascii_and_in_utf8():
    assert rules.disposition("attachment", "請求書 2026.pdf") == (
        "attachment; filename=\" 2026.pdf\"; filename*=UTF-8''%E8%AB%8B%E6%B1%82%E6%9B%B8%202026.pdf"
    )


def test_pieces_are_read_back_one_query_at_a_time(app, clock, db_session):
    [inquiry_id] = add_inquiries(db_session, [inquiry(clock)])
    data = bytes(range(256)) * 3000
    attachment_id = add_file(db_session, inquiry_id, data, "bytes.bin", "application/octet-stream")
    pieces = list(store.chunks(db.get_engine(), attachment_id))
    assert [len(piece) for piece in pieces] == [store.CHUNK_SIZE, store.CHUNK_SIZE, len(data) - 2 * store.CHUNK_SIZE]
    assert b"".join(pieces) == data
    assert db_session.scalar(select(func.count()).select_from(AttachmentChunk)) == 3


def sent_files(admin_client, client) -> int:
    """An inquiry sent with an image and a text file; its id."""
    create_form(admin_client)
    response = client.post(
        "/f/support",
        data=page_post(client, [(png(), "shot.png"), (b"<b>hi</b>\n", "a.txt")]),
        content_type="multipart/form-data",
    )
    assert response.status_code == 303
    return _only_inquiry_id(admin_client)


def _only_inquiry_id(admin_client) -> int:
    with admin_client.application.app_context():
        return db.get_session().scalar(select(Inquiry.id))


def test_an_admin_downloads_a_file_whole_with_headers_that_keep_it_inert(admin_client, client, query):
    inquiry_id = sent_files(admin_client, client)
    image, text = query(select(Attachment).order_by(Attachment.id))
    response = admin_client.get(f"/admin/inquiries/{inquiry_id}/files/{text.id}")
    assert response.status_code == 200 and response.data == b"<b>hi</b>\n"
    headers = response.headers
    assert headers["Content-Type"].startswith("text/plain")
    assert headers["Content-Disposition"] == "attachment; filename=\"a.txt\"; filename*=UTF-8''a.txt"
    assert headers["Content-Length"] == "10"
    assert headers["Content-Security-Policy"] == "default-src 'none'; sandbox"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Cross-Origin-Resource-Policy"] == "same-origin"
    assert headers["Cache-Control"] == "no-store"
    preview = admin_client.get(f"/admin/inquiries/{inquiry_id}/files/{image.id}/preview")
    assert preview.status_code == 200 and preview.data == png()
    assert preview.headers["Content-Disposition"].startswith("inline;")
    assert admin_client.get(f"/admin/inquiries/{inquiry_id}/files/{text.id}/preview").status_code == 404


def test_the_page_lists_every_file_and_previews_images_only(admin_client, client, query):
    inquiry_id = sent_files(admin_client, client)
    image, text = query(select(Attachment).order_by(Attachment.id))
    page = admin_client.get(f"/admin/inquiries/{inquiry_id}").get_data(as_text=True)
    assert f'src="/admin/inquiries/{inquiry_id}/files/{image.id}/preview"' in page
    assert f'src="/admin/inquiries/{inquiry_id}/files/{text.id}/preview"' not in page
    assert "Download shot.png" in page and "Download a.txt" in page
    assert "10 B, text/plain" in page
    listed = admin_client.get("/admin/").get_data(as_text=True)
    assert '<span class="badge">2 files</span>' in listed


def test_files_are_for_logged_in_admins_and_only_under_their_own_inquiry(admin_client, client, query, app):
    inquiry_id = sent_files(admin_client, client)
    file_id = query.scalar(select(Attachment.id).order_by(Attachment.id))
    anonymous = app.test_client()
    response = anonymous.get(f"/admin/inquiries/{inquiry_id}/files/{file_id}")
    assert response.status_code == 302 and "/login" in response.headers["Location"]
    assert admin_client.get(f"/admin/inquiries/{inquiry_id + 1}/files/{file_id}").status_code == 404
    assert admin_client.get(f"/admin/inquiries/{inquiry_id}/files/{file_id + 99}").status_code == 404


def test_an_admins_delete_takes_the_files_with_the_inquiry(admin_client, client, query):
    inquiry_id = sent_files(admin_client, client)
    token = csrf_token(admin_client, f"/admin/inquiries/{inquiry_id}")
    response = admin_client.post(
        "/admin/inquiries/delete", data={"csrf_token": token, "ids": [str(inquiry_id)], "confirm": "1"}
    )
    assert response.status_code == 303
    assert query.count(Inquiry) == query.count(Attachment) == query.count(AttachmentChunk) == 0
