"""Notifications name and count an inquiry's files and never send them.

Every test runs on SQLite and PostgreSQL against the real receivers of conftest.py.
"""

from __future__ import annotations

import base64
import re

import pytest
from sqlalchemy import event, select

from app.core import db
from app.models import Delivery, DeliveryStatus, NotificationSetting
from app.outbox import deliver, store
from tests.factories import add_file, add_inquiries, inquiry

# --- Files: named and counted, never sent ---------------------------------------

SHOT = (b"pixels-of-the-shot " * 700)[: 12 * 1024]  # "12 KB"
LOG = (b"lines-of-the-log\n" * 100_000)[: 1536 * 1024]  # "1.5 MB"


def with_files(db_session, clock, files: list[tuple[bytes, str, str]]) -> int:
    """An inquiry with ``files`` (data, name, type), stored as intake stores them; its id."""
    [inquiry_id] = add_inquiries(db_session, [inquiry(clock, days_old=0.01)])
    for data, name, content_type in files:
        add_file(db_session, inquiry_id, data, name, content_type)
    return inquiry_id


TWO_FILES = [(SHOT, "shot.png", "image/png"), (LOG, "log.txt", "text/plain")]


def include_content_setting(db_session, digest_minutes: int = 0) -> None:
    db_session.add_all(
        [
            NotificationSetting(key="notify_include_content", value="1"),
            NotificationSetting(key="notify_digest_minutes", value=str(digest_minutes)),
        ]
    )
    db_session.commit()


def deliver_now(app, inquiry_ids: list[int], channels: list[str]) -> None:
    with app.app_context():
        with db.transaction() as session:
            store.enqueue(session, inquiry_ids, channels)
        deliver.deliver_due()
        with db.transaction() as session:
            assert set(session.scalars(select(Delivery.status))) == {DeliveryStatus.DONE}


def assert_no_file_bytes(mail, receiver) -> None:
    """Neither the files' bytes nor their base64 are in any e-mail sent or any webhook body."""
    sent = [content for _to, content in mail.envelopes] + [hook.body for hook in receiver.received]
    assert sent
    for data in (SHOT, LOG):
        marker, encoded = data[:16], base64.b64encode(data[:48])
        assert not any(marker in each or encoded in each for each in sent)
    assert not any(message.is_multipart() for message in mail.messages)


def test_without_content_a_notification_counts_the_files_and_names_none(app, db_session, clock, mail, receiver):
    inquiry_id = with_files(db_session, clock, TWO_FILES)
    deliver_now(app, [inquiry_id], ["email", "webhook"])
    body = mail.messages[0].get_payload()
    assert body.splitlines()[1:4] == ["Form: contact", "2 files attached", ""]
    assert "shot.png" not in body and "log.txt" not in body and "KB" not in body
    [hook] = receiver.received
    assert hook.payload["data"] == {
        "id": inquiry_id,
        "received_at": hook.payload["data"]["received_at"],
        "url": f"http://localhost/admin/inquiries/{inquiry_id}",
        "form": "contact",
        "file_count": 2,
    }
    assert b"shot.png" not in hook.body
    assert_no_file_bytes(mail, receiver)


def test_with_content_a_notification_names_each_file_and_its_size_and_links_to_none(
    app, db_session, clock, mail, receiver
):
    include_content_setting(db_session)
    inquiry_id = with_files(db_session, clock, TWO_FILES)
    deliver_now(app, [inquiry_id], ["email", "webhook"])
    lines = mail.messages[0].get_payload().splitlines()
    assert lines[1:4] == ["Form: contact", "Files: shot.png (12 KB), log.txt (1.5 MB)", ""]
    [hook] = receiver.received
    data = hook.payload["data"]
    assert data["file_count"] == 2
    assert data["files"] == [
        {"name": "shot.png", "type": "image/png", "size": 12 * 1024},
        {"name": "log.txt", "type": "text/plain", "size": 1536 * 1024},
    ]
    links = set(re.findall(rb"https?://[^\"]+", hook.body))
    assert links == {f"http://localhost/admin/inquiries/{inquiry_id}".encode()}  # an admin's page, nothing public
    assert_no_file_bytes(mail, receiver)


@pytest.mark.parametrize("content", [False, True], ids=["without-content", "with-content"])
def test_a_digest_tells_each_inquirys_files_read_in_one_query_per_transaction(
    app, db_session, clock, mail, receiver, content
):
    if content:
        include_content_setting(db_session, digest_minutes=10)
    else:
        db_session.add(NotificationSetting(key="notify_digest_minutes", value="10"))
        db_session.commit()
    two = with_files(db_session, clock, TWO_FILES)
    one = with_files(db_session, clock, [(SHOT, "shot.png", "image/png")])
    none = with_files(db_session, clock, [])
    reads: list[str] = []
    event.listen(
        db.engine_of(app),
        "before_cursor_execute",
        lambda _c, _cur, statement, *_a: reads.append(statement) if "FROM attachments" in statement else None,
    )
    deliver_now(app, [two, one, none], ["email"])
    assert len(reads) == 2  # the batch's read, then its digest's companions: however many inquiries
    [message] = mail.messages
    assert message["Subject"] == "3 new inquiries"
    paragraphs = {
        int(re.match(r"New inquiry #(\d+)", each).group(1)): each.splitlines()
        for each in message.get_payload().replace("\r\n", "\n").strip().split("\n\n")
    }
    if content:
        assert paragraphs[two][1] == "Files: shot.png (12 KB), log.txt (1.5 MB)"
        assert paragraphs[one][1] == "Files: shot.png (12 KB)"
    else:
        assert (paragraphs[two][1], paragraphs[one][1]) == ("2 files attached", "1 file attached")
    assert paragraphs[none][1] == f"http://localhost/admin/inquiries/{none}"  # no files: no line for them
    assert_no_file_bytes(mail, receiver)
