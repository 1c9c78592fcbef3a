"""Deleted means gone: on SQLite, a deleted inquiry's text and files are in neither the database file nor its WAL.

Each way an inquiry goes (an admin's delete, an erasure, the cleanup of an
expired one) is followed by the bytes of both files, read as they are on
disk. PostgreSQL keeps dead tuples until vacuum: docs/cleanup.md.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from app import cleanup
from app.core import db
from app.inquiries import reindex, search
from app.inquiries.reindex import rebuild_index
from tests.factories import add_file, add_inquiries, inquiry
from tests.helpers import csrf_token, settle

MARKER = "zqmarker7f3a9c1eforgetme"
# The search index holds trigrams, not the text: six characters no other text here uses (CJK
# Extension B, four bytes each in UTF-8), so that the last two characters of each of their
# trigrams are stored verbatim in the index's pages (a term shares only a prefix with the one
# before it) and found there as long as the index keeps any entry of this text.
INDEX_MARKER = "\U00020001\U00020034\U0002007b\U000200a2\U000200d5\U0002010e"
INDEX_NEEDLES = [INDEX_MARKER[i + 1 : i + 3].encode() for i in range(len(INDEX_MARKER) - 2)]
# A file sent with the marked inquiry: 600 KB, three pieces, each on overflow pages of its own.
FILE_MARKER = b"zqfilemarker41c7e0"
MARKED_FILE = FILE_MARKER * (600_000 // len(FILE_MARKER))


@pytest.fixture
def db_kind() -> str:
    """SQLite only: these tests read its files. PostgreSQL's dead tuples and WAL: docs/cleanup.md."""
    return "sqlite"


def database_files(app) -> list[Path]:
    path = Path(make_url(app.config["DATABASE_URL"]).database)
    return [path, path.with_name(path.name + "-wal")]


def holds_marker(app) -> list[str]:
    """The files (database, WAL) in whose bytes the marker or the index's trace of it is found, read as they
    are on disk."""
    needles = [MARKER.encode(), *INDEX_NEEDLES, FILE_MARKER]
    found = []
    for path in database_files(app):
        if path.exists():
            with open(path, "rb") as file:
                data = file.read()
            found += [f"{path.name}: {needle!r}" for needle in needles if needle in data]
    return found


def arrange(app, clock, days_old: float = 1) -> tuple[int, int]:
    """A marked inquiry among a few others; the marked one's id and another's.

    In an app context of its own, popped before the test goes on: a test's
    requests would share an outer context and its session, whose read
    transaction pins the WAL (a server's requests each have their own).
    """
    with app.app_context():
        session = db.get_session()
        ids = add_inquiries(
            session,
            [
                inquiry(
                    clock, days_old, email="marked@example.com", message=f"Please forget {MARKER} soon {INDEX_MARKER}"
                ),
                inquiry(clock, 1, email="other@example.com", message="stays"),
            ],
        )
        add_file(session, ids[0], MARKED_FILE, "marked.txt")
        add_file(session, ids[1], b"a file that stays", "stays.txt")
    return ids[0], ids[1]


def post(client, path, data) -> int:
    """POST as a browser does, and close the response as a server does (work after it starts then)."""
    with client.post(path, data={**data, "csrf_token": csrf_token(client, "/admin/people")}) as response:
        return response.status_code


def test_every_sqlite_connection_has_secure_delete_on(app):
    with db.engine_of(app).connect() as connection:
        assert connection.execute(text("PRAGMA secure_delete")).scalar() == 1


def test_an_admins_delete_leaves_no_trace_in_the_file_or_the_wal(app, admin_client, clock):
    marked, _ = arrange(app, clock)
    assert holds_marker(app)
    assert post(admin_client, "/admin/inquiries/delete", {"ids": [marked], "confirm": "1"}) == 303
    settle(app)
    assert not holds_marker(app)


def test_an_erasure_leaves_no_trace_in_the_file_or_the_wal(app, admin_client, clock):
    arrange(app, clock)
    assert holds_marker(app)
    assert post(admin_client, "/admin/people/erase", {"email": "marked@example.com", "confirm": "1"}) == 303
    settle(app)
    assert not holds_marker(app)


def test_the_cleanup_of_an_expired_inquiry_leaves_no_trace(app, clock):
    arrange(app, clock, days_old=400)
    assert holds_marker(app)
    with app.app_context():
        run = cleanup.run("test", force=True)
    assert run is not None and run.status == "ok"
    assert not holds_marker(app)


def test_a_cleanup_that_rebuilds_the_search_index_leaves_no_trace(app, clock, monkeypatch):
    arrange(app, clock, days_old=400)
    with app.app_context():
        add_inquiries(db.get_session(), [inquiry(clock, 400, message="expired too")])
    rebuilt = []
    monkeypatch.setattr(reindex, "rebuild_index", lambda *args: rebuilt.append(args[1]) or rebuild_index(*args))
    monkeypatch.setattr(search, "forget_deleted", lambda *args: pytest.fail("purged after a fresh rebuild"))
    with app.app_context():
        run = cleanup.run("test", force=True)
    assert run is not None and run.status == "ok"
    assert rebuilt == [True]  # two deleted, one kept: built again, not merged
    assert not holds_marker(app)


def test_a_command_line_erasure_leaves_no_trace(app, runner, clock):
    arrange(app, clock)
    assert holds_marker(app)
    result = runner.invoke(args=["people", "erase", "marked@example.com", "--yes"])
    assert result.exit_code == 0, result.output
    assert not holds_marker(app)


def test_deleting_all_spam_leaves_no_trace(app, admin_client, clock):
    with app.app_context():
        (spam,) = add_inquiries(
            db.get_session(), [inquiry(clock, 1, status="spam", message=f"Buy {MARKER} now {INDEX_MARKER}")]
        )
        add_file(db.get_session(), spam, MARKED_FILE, "offer.txt")
    assert holds_marker(app)
    assert post(admin_client, "/admin/spam/delete-all", {"confirm": "1", "through": str(spam)}) == 303
    settle(app)
    assert not holds_marker(app)


def test_the_check_has_teeth_for_files_a_plain_delete_of_their_pieces_leaves_the_bytes(app, clock):
    arrange(app, clock)
    connection = sqlite3.connect(database_files(app)[0], isolation_level=None)
    try:
        connection.execute("PRAGMA secure_delete=OFF")
        connection.execute("DELETE FROM submissions WHERE message LIKE 'Please forget%'")
        connection.execute("DELETE FROM attachment_chunks")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert connection.execute("SELECT count(*) FROM attachment_chunks").fetchone() == (0,)
        data = database_files(app)[0].read_bytes()
        assert FILE_MARKER in data and MARKER.encode() in data
    finally:
        connection.close()


def test_the_check_has_teeth_a_plain_delete_leaves_the_marker(app, clock):
    """Without secure_delete and the truncating checkpoint, the deleted text is still in the files."""
    marked, _ = arrange(app, clock)
    path = database_files(app)[0]
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("PRAGMA secure_delete=OFF")
        connection.execute("DELETE FROM submissions WHERE id = ?", (marked,))
        assert holds_marker(app)
    finally:
        connection.close()


def _add_message(app, clock, inquiry_id: int | None, state: str) -> int:
    """A person's e-mail holding the marker, in ``inquiry_id``'s thread or held apart."""
    from app.models import InboundMessage

    with app.app_context():
        session = db.get_session()
        message = InboundMessage(
            inquiry_id=inquiry_id,
            state=state,
            kind="message",
            sender="marked@example.com",
            body=f"My answer {MARKER} {INDEX_MARKER}",
            received_at=clock(),
        )
        session.add(message)
        session.commit()
        return message.id


def test_an_owners_delete_of_held_mail_leaves_no_trace(app, admin_client, clock):
    held = _add_message(app, clock, None, "held")
    assert holds_marker(app)
    with admin_client.post(
        f"/admin/held/{held}/delete", data={"csrf_token": csrf_token(admin_client, "/admin/held")}
    ) as response:
        assert response.status_code == 303
    settle(app)
    assert not holds_marker(app)


def test_a_deleted_inquiry_takes_the_answers_in_its_thread_without_a_trace(app, admin_client, clock):
    with app.app_context():
        (kept,) = add_inquiries(db.get_session(), [inquiry(clock, 1, email="other@example.com", message="stays")])
        (gone_one,) = add_inquiries(db.get_session(), [inquiry(clock, 1, email="marked@example.com", message="hi")])
    _add_message(app, clock, gone_one, "thread")
    assert holds_marker(app)
    assert post(admin_client, "/admin/inquiries/delete", {"ids": [gone_one], "confirm": "1"}) == 303
    settle(app)
    assert not holds_marker(app) and kept


def _add_held_file(app, held_id: int, data: bytes) -> None:
    """``data`` as a file of held e-mail ``held_id``, in pieces as the inbound pipeline stores it."""
    from app.attachments.store import CHUNK_SIZE
    from app.models import Attachment, AttachmentChunk

    with app.app_context():
        session = db.get_session()
        file = Attachment(
            held_message_id=held_id, field_key=f"mail:{held_id}", name="plan.txt", content_type="text/plain",
            size=len(data),
        )  # fmt: skip
        session.add(file)
        session.flush()
        for seq, start in enumerate(range(0, len(data), CHUNK_SIZE)):
            session.add(AttachmentChunk(attachment_id=file.id, seq=seq, data=data[start : start + CHUNK_SIZE]))
        session.commit()


def test_an_owners_delete_of_held_mail_takes_its_files_without_a_trace(app, admin_client, clock):
    held = _add_message(app, clock, None, "held")
    _add_held_file(app, held, MARKED_FILE)
    assert any("zqfilemarker" in found for found in holds_marker(app))
    with admin_client.post(
        f"/admin/held/{held}/delete", data={"csrf_token": csrf_token(admin_client, "/admin/held")}
    ) as response:
        assert response.status_code == 303
    settle(app)
    assert not holds_marker(app)


def test_the_cleanup_of_held_mail_takes_its_files_without_a_trace(app, clock):
    held = _add_message(app, clock, None, "held")
    _add_held_file(app, held, MARKED_FILE)
    assert any("zqfilemarker" in found for found in holds_marker(app))
    clock.advance(days=31)
    with app.app_context():
        run = cleanup.run("test", force=True)
    assert run is not None and run.status == "ok" and json.loads(run.deleted)["attachment_chunks"] == 3
    assert not holds_marker(app)
