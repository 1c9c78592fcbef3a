"""A person's export: everything held about one address, as JSON or CSV, streamed page by page.

The JSON shape is stable (``FORMAT``; docs/people.md documents it)::

    {"format": "sundown.person-export.v1", "email": "...", "generated_at": "...Z",
     "inquiries": [{"id": 1, "status": "inbox", "received_at": "...Z", "name": "...",
                    "email": "...", "message": "...", "user_agent": "..." or null,
                    "legal_hold": false, "hold_reason": null, "hold_by": null, "held_at": null,
                    "audit": [{"at": "...Z", "admin": "...", "action": "...", "detail": "..."}],
                    "replies": [{"kind": "reply" or "ack", "at": "...Z", "admin": "..." or null,
                                 "status": "queued", "sent_at": "...Z" or null, "subject": "...", "body": "..."}],
                    "attachments": [{"name": "...", "type": "image/png", "size": 1234,
                                     "path": "files/1/7-photo.png"}],
                    "messages": [{"kind": "message" or "auto_reply" or "bounce", "at": "...Z", "from": "...",
                                  "name": "...", "subject": "...", "body": "...", "files_refused": 0}],
                    "notes": [{"at": "...Z", "admin": "...", "text": "..."}],
                    "accessed": [{"at": "...Z", "admin": "...", "what": "opened"}]}]}

``notes`` are the team's internal notes on the inquiry; ``accessed`` who
opened it, one of its files, or exported it (``app.inquiries.access``:
``opened``, ``file``, ``person_export``). An export by an admin given
some forms holds the inquiries of those forms only.

Each attachment's ``path`` is where the zip export (``app.people.archive``)
holds its bytes: ``files/<inquiry id>/<attachment id>-<name>`` (``file_path``).

The CSV has one row per inquiry (``HEADER``), its audit entries in one cell,
one per line, the e-mails sent to the person (``app.replies``), and the
e-mails received from them into the inquiry's conversation
(``app.conversations``; ``messages``, their files among the attachments),
then the notes and the accesses, every free-text cell neutralised as in
the main export.

Paging follows the inbox's export (``app.admin.export``, with ``app.core.csvstream``): the ids are read
first, in one short transaction; then each page of ``PAGE_SIZE`` is read in
its own short transaction that ends before the page is sent. If a page no
longer finds every id (an erasure or a delete ran meanwhile), the stream
raises ``PersonChanged``: the server then drops the connection and the client
gets a failed download, never a complete-looking half of the data.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from flask import Flask
from sqlalchemy import select

from app.attachments import rules, store
from app.core import clock, db
from app.core.csvstream import PAGE_SIZE, Chunks, neutralise
from app.inquiries import access, triage
from app.models import Access, Admin, Attachment, AuditEntry, InboundMessage, Inquiry, MessageState, Note, Reply
from app.people import lookup

FORMAT = "sundown.person-export.v1"
HEADER = (
    "id",
    "status",
    "received_utc",
    "name",
    "email",
    "message",
    "user_agent",
    "legal_hold",
    "hold_reason",
    "hold_by",
    "held_utc",
    "audit",
    "replies",
    "messages",
    "notes",
    "accessed",
)


class PersonChanged(RuntimeError):
    """The person's inquiries changed while their export streamed; the export stops unfinished."""


@dataclass(frozen=True)
class Item:
    """One inquiry of the person and what goes with it."""

    inquiry: Inquiry
    audit: list[AuditEntry]
    replies: list[dict]
    files: list[Attachment]
    received: list[dict]
    notes: list[Note] = field(default_factory=list)
    accessed: list[Access] = field(default_factory=list)


def pages(app: Flask, address: str, forms: lookup.Forms = None) -> Iterator[list[Item]]:
    """The person's inquiries (of the forms ``forms``; None: every form) with their audit entries, replies,
    files, received messages, notes and accesses, ``PAGE_SIZE`` at a time, oldest first."""
    with app.app_context(), db.transaction() as session:
        ids = lookup.ids_of(session, address, forms)
    for start in range(0, len(ids), PAGE_SIZE):
        wanted = ids[start : start + PAGE_SIZE]
        with app.app_context(), db.transaction() as session:
            found = {row.id: row for row in session.scalars(select(Inquiry).where(Inquiry.id.in_(wanted)))}
            if len(found) != len(wanted):
                raise PersonChanged(f"{len(wanted) - len(found)} inquiries went while the export streamed")
            audit = lookup.audit_of(session, wanted)
            replies = _replies_of(session, wanted)
            files = store.of_inquiries(session, wanted)
            received = _messages_of(session, wanted)
            notes = triage.notes_of(session, wanted)
            accessed = access.of_inquiries(session, wanted)
        yield [
            Item(
                found[inquiry_id],
                audit[inquiry_id],
                replies.get(inquiry_id, []),
                files.get(inquiry_id, []),
                received.get(inquiry_id, []),
                notes.get(inquiry_id, []),
                accessed.get(inquiry_id, []),
            )
            for inquiry_id in wanted
        ]


def _replies_of(session, ids: list[int]) -> dict[int, list[dict]]:
    """The replies and acknowledgements sent about each of ``ids``, oldest first, in the export's shape."""
    rows = session.execute(
        select(Reply, Admin.name)
        .outerjoin(Admin, Admin.id == Reply.admin_id)
        .where(Reply.inquiry_id.in_(ids))
        .order_by(Reply.created_at, Reply.id)
    ).all()
    found: dict[int, list[dict]] = {}
    for reply, admin in rows:
        found.setdefault(reply.inquiry_id, []).append(
            {
                "kind": reply.kind,
                "at": iso(reply.created_at),
                "admin": admin,
                "status": reply.status,
                "sent_at": iso(reply.sent_at),
                "subject": reply.subject,
                "body": reply.body,
            }
        )
    return found


def _messages_of(session, ids: list[int]) -> dict[int, list[dict]]:
    """The e-mails received into each of ``ids``'s conversation, oldest first, in the export's shape (held
    mail belongs to no inquiry until an owner puts it into one)."""
    found: dict[int, list[dict]] = {}
    for each in session.scalars(
        select(InboundMessage)
        .where(InboundMessage.inquiry_id.in_(ids), InboundMessage.state == MessageState.THREAD)
        .order_by(InboundMessage.received_at, InboundMessage.id)
    ):
        found.setdefault(each.inquiry_id, []).append(
            {
                "kind": each.kind,
                "at": iso(each.received_at),
                "from": each.sender,
                "name": each.sender_name,
                "subject": each.subject,
                "body": each.body,
                "files_refused": each.files_refused,
            }
        )
    return found


def stream_json(app: Flask, address: str, forms: lookup.Forms = None) -> Iterator[bytes]:
    """The JSON export of ``address`` (see the module docstring), in chunks."""
    for chunk, _files in json_parts(app, address, forms):
        yield chunk


def json_parts(app: Flask, address: str, forms: lookup.Forms = None) -> Iterator[tuple[bytes, list[Attachment]]]:
    """The JSON export in chunks, each with the files its records list (the zip export adds their bytes)."""
    with app.app_context():
        generated_at = clock.now()
    head = {"format": FORMAT, "email": address, "generated_at": iso(generated_at)}
    yield (json.dumps(head, ensure_ascii=False)[:-1] + ', "inquiries": [').encode("utf-8"), []
    separator = "\n"
    for page in pages(app, address, forms):
        for item in page:
            record = as_record(item.inquiry, item.audit, item.replies, item.files, item.received) | extras(item)
            yield (separator + json.dumps(record, ensure_ascii=False)).encode("utf-8"), item.files
            separator = ",\n"
    yield b"\n]}\n", []


def as_record(
    inquiry: Inquiry,
    audit: list[AuditEntry],
    replies: list[dict] | None = None,
    files: list[Attachment] | None = None,
    received: list[dict] | None = None,
) -> dict:
    """One inquiry, its audit entries, its replies, its files and the e-mails received into its conversation
    in the export's JSON shape."""
    return {
        "id": inquiry.id,
        "status": inquiry.status,
        "received_at": iso(inquiry.created_at),
        "name": inquiry.name,
        "email": inquiry.email,
        "message": inquiry.message,
        "user_agent": inquiry.user_agent,
        "legal_hold": bool(inquiry.legal_hold),
        "hold_reason": inquiry.hold_reason,
        "hold_by": inquiry.hold_by,
        "held_at": iso(inquiry.held_at),
        "audit": [
            {"at": iso(entry.created_at), "admin": entry.admin_name, "action": entry.action, "detail": entry.detail}
            for entry in audit
        ],
        "replies": replies or [],
        "attachments": [
            {"name": each.name, "type": each.content_type, "size": each.size, "path": file_path(each)}
            for each in files or []
        ],
        "messages": received or [],
    }


def extras(item: Item) -> dict:
    """An inquiry's notes and accesses in the export's JSON shape."""
    return {
        "notes": [{"at": iso(note.created_at), "admin": note.admin_name, "text": note.body} for note in item.notes],
        "accessed": [{"at": iso(row.created_at), "admin": row.admin_name, "what": row.kind} for row in item.accessed],
    }


def file_path(attachment: Attachment) -> str:
    """Where the zip export holds ``attachment``: ``files/<inquiry id>/<attachment id>-<name>``.

    The stored name is already clean; it is cleaned again (``rules.clean_name``:
    no folder, no leading dot, never empty, its extension the type's), so that
    no path in the zip can leave its folder or open as another type, whatever
    a row holds.
    """
    name = rules.named_for(rules.clean_name(attachment.name), attachment.content_type)
    return f"files/{attachment.inquiry_id}/{attachment.id}-{name}"


def stream_csv(app: Flask, address: str, forms: lookup.Forms = None) -> Iterator[bytes]:
    """The CSV export of ``address``: the BOM and header, then one chunk per page."""
    chunks = Chunks(HEADER)
    yield chunks.take()
    for page in pages(app, address, forms):
        chunks.writer.writerows(
            as_row(item.inquiry, item.audit, item.replies, item.received) + _extra_cells(item) for item in page
        )
        yield chunks.take()


def _extra_cells(item: Item) -> tuple:
    notes = triage.notes_text(item.notes)
    accessed = "\n".join(f"{_utc_text(row.created_at)} {row.admin_name}: {row.kind}" for row in item.accessed)
    return neutralise(notes), neutralise(accessed)


def as_row(
    inquiry: Inquiry, audit: list[AuditEntry], replies: list[dict] | None = None, received: list[dict] | None = None
) -> tuple:
    """One inquiry as a CSV record, every free-text cell neutralised against formulas."""
    sent = "\n\n".join(
        f"{each['at']} {each['kind']} {each['status']} {each['admin'] or ''}\n{each['subject']}\n{each['body']}"
        for each in replies or []
    )
    answers = "\n\n".join(
        f"{each['at']} {each['kind']} {each['from']}\n{each['subject']}\n{each['body']}" for each in received or []
    )
    entries = "\n".join(
        f"{_utc_text(entry.created_at)} {entry.admin_name}: {entry.action} ({entry.detail})" for entry in audit
    )
    return (
        inquiry.id,
        inquiry.status,
        _utc_text(inquiry.created_at),
        neutralise(inquiry.name),
        neutralise(inquiry.email),
        neutralise(inquiry.message),
        neutralise(inquiry.user_agent),
        "yes" if inquiry.legal_hold else "no",
        neutralise(inquiry.hold_reason),
        neutralise(inquiry.hold_by),
        _utc_text(inquiry.held_at),
        neutralise(entries),
        neutralise(sent),
        neutralise(answers),
    )


def iso(moment: datetime | None) -> str | None:
    """``moment`` as ISO 8601 in UTC with a ``Z``, to the second; None stays None."""
    if moment is None:
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _utc_text(moment: datetime | None) -> str:
    return "" if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
