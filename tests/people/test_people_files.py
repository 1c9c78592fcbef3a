"""A person's files in their export: listed in the JSON, their bytes in the zip, nobody else's."""

from __future__ import annotations

import io
import json
import random
import zipfile

import pytest
from sqlalchemy import func, select

from app.attachments.store import CHUNK_SIZE
from app.models import AuditEntry
from app.people import records
from tests.factories import add_file, add_inquiries, inquiry
from tests.helpers import csrf_token

ADA = "ada@example.com"
LARGE = random.Random(15).randbytes(CHUNK_SIZE * 2 + 7)  # three pieces, none like another
ZIP_OVERHEAD = 4096  # an entry's headers and descriptor, beside at most one piece


def arrange(db_session, clock) -> dict[str, int]:
    """Ada's two inquiries (a large photo and a note; no files), Bob's with a photo of the same name."""
    first, second, bare, bob = add_inquiries(
        db_session,
        [
            inquiry(clock, 3, email="Ada@example.com"),
            inquiry(clock, 2, email=ADA),
            inquiry(clock, 1, email=ADA),
            inquiry(clock, 1, email="bob@example.com", name="Bob"),
        ],
    )
    return {
        "first": first,
        "second": second,
        "bare": bare,
        "bob": bob,
        "photo": add_file(db_session, first, LARGE, "photo.png", "image/png"),
        "note": add_file(db_session, second, b"a short note\n", "note.txt", "text/plain"),
        "bobs": add_file(db_session, bob, b"Bob's photo", "photo.png", "image/png"),
    }


def opened(response) -> zipfile.ZipFile:
    archive = zipfile.ZipFile(io.BytesIO(response.get_data()))
    assert archive.testzip() is None  # every entry's CRC matches its bytes
    return archive


def audit_count(db_session) -> int:
    db_session.rollback()  # a fresh snapshot
    return db_session.scalar(select(func.count()).select_from(AuditEntry))


def test_the_zip_holds_person_json_and_each_file_byte_for_byte(admin_client, db_session, clock):
    ids = arrange(db_session, clock)
    response = admin_client.get("/admin/people/export.zip?email=ADA@example.com")
    assert response.status_code == 200 and response.mimetype == "application/zip"
    assert response.headers["Content-Disposition"] == 'attachment; filename="sundown-person-2026-06-01.zip"'
    assert response.headers["Cache-Control"] == "no-store"
    archive = opened(response)
    photo, note = f"files/{ids['first']}/{ids['photo']}-photo.png", f"files/{ids['second']}/{ids['note']}-note.txt"
    assert archive.namelist() == ["person.json", photo, note]
    assert archive.read(photo) == LARGE and archive.read(note) == b"a short note\n"
    exported = admin_client.get("/admin/people/export.json?email=ada@example.com").get_json()
    zipped = json.loads(archive.read("person.json"))
    for each in (*zipped["inquiries"], *exported["inquiries"]):
        each.pop("accessed")  # the second export is one access more
    assert zipped == exported


def test_a_stored_name_whose_extension_the_type_contradicts_is_given_the_types_in_the_zip(
    admin_client, db_session, clock
):
    [first] = add_inquiries(db_session, [inquiry(clock, 1, email=ADA)])
    page = add_file(db_session, first, b"<script>alert(1)</script>", "update.hta", "text/plain")
    archive = opened(admin_client.get("/admin/people/export.zip?email=ada@example.com"))
    assert archive.namelist() == ["person.json", f"files/{first}/{page}-update.hta.txt"]


def test_the_zip_holds_only_that_persons_files(admin_client, db_session, clock):
    ids = arrange(db_session, clock)
    archive = opened(admin_client.get("/admin/people/export.zip?email=ada@example.com"))
    assert not [name for name in archive.namelist() if f"/{ids['bobs']}-" in name or f"/{ids['bob']}/" in name]
    assert all(archive.read(name) != b"Bob's photo" for name in archive.namelist())
    listed = json.loads(archive.read("person.json"))
    assert ids["bob"] not in [each["id"] for each in listed["inquiries"]]


def test_the_json_export_lists_each_inquirys_files_with_their_path_in_the_zip(admin_client, db_session, clock):
    ids = arrange(db_session, clock)
    document = admin_client.get("/admin/people/export.json?email=ada@example.com").get_json()
    by_id = {each["id"]: each["attachments"] for each in document["inquiries"]}
    assert by_id == {
        ids["first"]: [
            {
                "name": "photo.png",
                "type": "image/png",
                "size": len(LARGE),
                "path": f"files/{ids['first']}/{ids['photo']}-photo.png",
            }
        ],
        ids["second"]: [
            {
                "name": "note.txt",
                "type": "text/plain",
                "size": 13,
                "path": f"files/{ids['second']}/{ids['note']}-note.txt",
            }
        ],
        ids["bare"]: [],
    }


def test_the_zip_streams_a_piece_at_a_time(admin_client, db_session, clock):
    arrange(db_session, clock)
    response = admin_client.get("/admin/people/export.zip?email=ada@example.com", buffered=False)
    chunks = list(response.response)
    response.close()
    assert len(chunks) > 3 and all(chunks)  # never an empty chunk: it would end a chunked body
    assert max(len(chunk) for chunk in chunks) <= CHUNK_SIZE + ZIP_OVERHEAD
    assert b"".join(chunks).count(LARGE[:CHUNK_SIZE]) == 1


def test_a_name_that_would_leave_its_folder_stays_inside_it(admin_client, db_session, clock):
    """Names are cleaned when a file is received; the zip cleans them again, whatever a row holds."""
    [inquiry_id] = add_inquiries(db_session, [inquiry(clock, email=ADA)])
    dots = add_file(db_session, inquiry_id, b"dots", "..")
    climb = add_file(db_session, inquiry_id, b"climb", "../../etc/passwd")
    archive = opened(admin_client.get("/admin/people/export.zip?email=ada@example.com"))
    assert archive.namelist() == [
        "person.json",
        f"files/{inquiry_id}/{dots}-file.txt",
        f"files/{inquiry_id}/{climb}-passwd.txt",
    ]
    assert not [name for name in archive.namelist() if ".." in name.split("/") or name.startswith("/")]


def test_the_zip_export_writes_the_audit_entries_the_other_exports_write(admin_client, db_session, clock):
    arrange(db_session, clock)
    written = {}
    for extension in ("json", "csv", "zip"):
        before = audit_count(db_session)
        assert admin_client.get(f"/admin/people/export.{extension}?email=ada@example.com").status_code == 200
        written[extension] = audit_count(db_session) - before
    assert written["zip"] == written["json"] == written["csv"]


def test_logged_out_the_zip_sends_to_the_login_page(client, db_session, clock):
    arrange(db_session, clock)
    response = client.get("/admin/people/export.zip?email=ada@example.com", headers={"Accept": "text/html"})
    assert response.status_code == 302 and response.headers["Location"].startswith("/auth/login")


def test_the_zip_refuses_an_invalid_address_with_400(admin_client):
    assert admin_client.get("/admin/people/export.zip?email=x").status_code == 400
    assert admin_client.get("/admin/people/export.zip").status_code == 400


def test_the_people_page_offers_the_zip_beside_the_exports(admin_client, db_session, clock):
    arrange(db_session, clock)
    html = admin_client.get("/admin/people?email=ada@example.com").get_data(as_text=True)
    assert 'href="/admin/people/export.zip?email=ada@example.com"' in html
    assert "The ZIP holds the JSON export and the files sent with these inquiries." in html


def test_an_erasure_while_a_file_streams_stops_the_zip(admin_client, db_session, clock):
    """The file's remaining pieces go with its inquiry: the download fails, it never ends short and whole."""
    arrange(db_session, clock)
    response = admin_client.get("/admin/people/export.zip?email=ada@example.com", buffered=False)
    chunks = iter(response.response)
    assert any(LARGE[:CHUNK_SIZE] in chunk for chunk in chunks)  # the photo's first piece is out
    token = csrf_token(admin_client, "/admin/people")
    erased = admin_client.post("/admin/people/erase", data={"email": ADA, "confirm": "1", "csrf_token": token})
    assert erased.status_code == 303
    with pytest.raises(records.PersonChanged):
        list(chunks)
    response.close()
