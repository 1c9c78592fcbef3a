"""An inquiry's conversation as its page shows it: the replies and the person's messages, in order.

Each entry is a reply (an admin's or the acknowledgement, with its outbox
state) or a received message (a person's, an automatic reply, a bounce),
oldest first; a message's text is split into what was written and the
quoted history below it, which the page folds. Files that came by e-mail
are listed under their message, not with the form's files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from app.conversations import store
from app.conversations.text import split_quoted
from app.models import Attachment, InboundMessage

MAIL_FILES = "mail:"


@dataclass(frozen=True)
class Entry:
    """One entry of the thread: ``reply`` (``item`` a ``sending.Shown``) or ``message`` (an ``InboundMessage``)."""

    kind: str
    at: datetime
    item: Any
    written: str = ""
    quoted: str = ""
    files: list[Attachment] = field(default_factory=list)


def form_files(attachments: list[Attachment]) -> list[Attachment]:
    """The files sent with the form (those that came by e-mail left out)."""
    return [each for each in attachments if not each.field_key.startswith(MAIL_FILES)]


def entries(session: Session, inquiry_id: int, replies: list, attachments: list[Attachment]) -> list[Entry]:
    """The replies and received messages of an inquiry, oldest first."""
    by_message: dict[str, list[Attachment]] = {}
    for each in attachments:
        if each.field_key.startswith(MAIL_FILES):
            by_message.setdefault(each.field_key, []).append(each)
    thread = [Entry("reply", shown.reply.created_at, shown) for shown in replies]
    thread += [
        _message(message, by_message.get(store.file_key(message.id), []))
        for message in store.of_inquiry(session, inquiry_id)
    ]
    return sorted(thread, key=lambda entry: entry.at)


def _message(message: InboundMessage, files: list[Attachment]) -> Entry:
    written, quoted = split_quoted(message.body)
    return Entry("message", message.received_at, message, written, quoted, files)
