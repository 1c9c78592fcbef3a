"""A raw e-mail (RFC 5322 bytes) read defensively into what the thread keeps, or refused as unreadable.

The message is parsed with the ``compat32`` policy, which interprets no
header: each value Sundown uses is decoded here, once, in a known order.
The sender's address is read from the raw ``From`` before any encoded word
is decoded, so ``=?utf-8?q?boss=40example.org?= <eve@evil.example>`` is
Eve's; a ``From`` with more or fewer than one address, or one that is not
a plain ``local@domain``, leaves no sender (the message is then held apart).
Decoded values go through ``header_text``: no control characters, no line
breaks, no encoded word left to decode again.

Bounds, before and while walking the parts (each refusal is ``Unreadable``):
at most ``MAX_PARTS`` parts and ``MAX_DEPTH`` levels of nesting (counted on
the raw bytes first, so a hostile nest never reaches the parser), the text
cut at ``text.TEXT_MAX``, and files through the form files' rules (type by
content among ``SUNDOWN_ATTACHMENT_TYPES``, at most
``SUNDOWN_ATTACHMENT_MAX_BYTES`` each, ``MAX_FILES`` a message): a file
that fails is counted, not kept.

Automatic mail is recognised: a delivery report (``multipart/report``,
``message/delivery-status``, or an empty ``Return-Path`` from a mailer
daemon) is a bounce, with the ``Message-ID`` it reports on; ``Auto-Submitted``
other than ``no``, ``X-Autoreply``, ``X-Autorespond``, a ``Precedence`` of
bulk, junk, list or auto_reply, or ``List-Id`` make an automatic reply.
"""

from __future__ import annotations

import codecs
import email
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.errors import HeaderParseError
from email.header import decode_header, make_header
from email.message import Message
from email.policy import compat32
from email.utils import getaddresses
from io import BytesIO
from typing import cast

from app.attachments import rules
from app.conversations import text as texts
from app.models import MessageKind
from app.replies.message import header_text

MAX_PARTS = 64
MAX_DEPTH = 8
MAX_FILES = 10
_ADDRESS = re.compile(r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")
_MESSAGE_ID = re.compile(r"<[^<>\s]{1,250}>")
_DAEMONS = ("mailer-daemon", "postmaster")
_AUTO_PRECEDENCE = {"bulk", "junk", "list", "auto_reply"}
_RECIPIENT_HEADERS = ("Delivered-To", "X-Original-To", "Envelope-To", "To", "Cc")


class Unreadable(ValueError):
    """A message Sundown will not store; ``args[0]`` says why, for the caller's refusal."""


@dataclass(frozen=True)
class File:
    """A file that passed the form files' rules: its safe name, type by content, bytes."""

    name: str
    content_type: str
    data: bytes


@dataclass
class Parsed:
    """What Sundown keeps of one e-mail, and what it needs to match it."""

    sender: str | None
    sender_name: str
    subject: str
    message_id: str | None
    references: list[str]
    recipients: list[str]
    kind: str = MessageKind.MESSAGE
    reported_ids: list[str] = field(default_factory=list)  # a bounce's original Message-IDs
    status: str | None = None  # a bounce's status code, e.g. 5.1.1
    text: str = ""
    files: list[File] = field(default_factory=list)
    files_refused: int = 0


def parse(raw: bytes, max_file_bytes: int, allowed_types: tuple[str, ...]) -> Parsed:
    """``raw`` as the thread keeps it; ``Unreadable`` when it is empty, too deeply nested or broken."""
    if not raw.strip():
        raise Unreadable("empty")
    if raw.lower().count(b"boundary") > MAX_PARTS:
        raise Unreadable("too many parts")
    try:
        message = email.message_from_bytes(raw, policy=compat32)
        parts = list(_walk(message))
        parsed = _headers(message)
        parsed.kind, parsed.reported_ids, parsed.status = _classify(message, parts)
        parsed.text = texts.clean(_body(parts))
        _files(parts, parsed, max_file_bytes, allowed_types)
    except Unreadable:
        raise
    except (RecursionError, LookupError, ValueError, TypeError, AttributeError, IndexError) as error:
        raise Unreadable(f"unreadable ({type(error).__name__})") from None
    return parsed


def _walk(message: Message) -> Iterator[tuple[Message, int, bool]]:
    """Each part with its depth and whether it sits inside an attached message; bounded, iteratively."""
    stack, seen = [(message, 0, False)], 0
    while stack:
        part, depth, attached = stack.pop()
        seen += 1
        if seen > MAX_PARTS or depth > MAX_DEPTH:
            raise Unreadable("too many parts" if seen > MAX_PARTS else "nested too deeply")
        yield part, depth, attached
        payload = part.get_payload() if part.is_multipart() else None
        if isinstance(payload, list):
            inner = attached or part.get_content_type() == "message/rfc822"
            stack.extend((child, depth + 1, inner) for child in reversed(payload) if isinstance(child, Message))


def decoded(value: str | None, limit: int = 300) -> str:
    """A header's value with its encoded words decoded, fit for display (``header_text``)."""
    if not value:
        return ""
    try:
        value = str(make_header(decode_header(str(value))))
    except (LookupError, ValueError, UnicodeError, HeaderParseError):
        value = str(value)
    return header_text(value, limit)


def _sender(raw_from: str | None) -> tuple[str | None, str]:
    """The one plain address of a raw ``From`` (read before decoding) and its decoded display name."""
    raw_from = str(raw_from or "")
    found = getaddresses([raw_from])
    if len(found) != 1:
        return None, ""
    name, address = found[0]
    address = address.strip()
    if not _ADDRESS.fullmatch(address) or address not in raw_from:
        return None, decoded(name, 100)
    return address, decoded(name, 100)


def _ids(value: str | None) -> list[str]:
    return _MESSAGE_ID.findall(str(value or ""))[:50]


def _headers(message: Message) -> Parsed:
    sender, name = _sender(message.get("From"))
    references = _ids(message.get("In-Reply-To")) + _ids(message.get("References"))
    recipients = [str(value)[:2000] for header in _RECIPIENT_HEADERS for value in message.get_all(header, [])]
    ids = _ids(message.get("Message-ID"))
    return Parsed(
        sender=sender,
        sender_name=name,
        subject=decoded(message.get("Subject")),
        message_id=ids[0] if ids else None,
        references=references,
        recipients=recipients,
    )


def _classify(message: Message, parts) -> tuple[str, list[str], str | None]:
    """The message's kind, and for a bounce the Message-IDs it reports on and its status code."""
    report = message.get_content_type() == "multipart/report" or any(
        part.get_content_type() == "message/delivery-status" for part, _depth, _attached in parts
    )
    daemon = str(message.get("Return-Path", "")).strip() == "<>" and any(
        name in str(message.get("From", "")).lower() for name in _DAEMONS
    )
    if report or daemon:
        return MessageKind.BOUNCE, _reported_ids(parts), _status(parts)
    auto = str(message.get("Auto-Submitted", "no")).strip().lower()
    precedence = str(message.get("Precedence", "")).strip().lower()
    if (
        (auto and auto != "no")
        or precedence in _AUTO_PRECEDENCE
        or any(message.get(name) is not None for name in ("X-Autoreply", "X-Autorespond", "List-Id"))
    ):
        return MessageKind.AUTO_REPLY, [], None
    return MessageKind.MESSAGE, [], None


def _reported_ids(parts) -> list[str]:
    """The ``Message-ID`` of the returned message (``message/rfc822`` or ``text/rfc822-headers``)."""
    found: list[str] = []
    for part, _depth, _attached in parts:
        kind = part.get_content_type()
        if kind == "message/rfc822" and part.is_multipart():
            found += [ident for inner in part.get_payload() for ident in _ids(inner.get("Message-ID"))]
        elif kind == "text/rfc822-headers":
            headers = email.message_from_bytes(part.get_payload(decode=True) or b"", policy=compat32)
            found += _ids(headers.get("Message-ID"))
    return found


def _status(parts) -> str | None:
    """The first ``Status`` of a delivery report (e.g. ``5.1.1``), as a short code."""
    for part, _depth, _attached in parts:
        if part.get_content_type() == "message/delivery-status" and part.is_multipart():
            for block in part.get_payload():
                status = re.match(r"\s*([245]\.\d{1,3}\.\d{1,3})", str(block.get("Status", "")))
                if status:
                    return status.group(1)
    return None


def _text_of(part: Message) -> str:
    payload = cast(bytes, part.get_payload(decode=True) or b"")  # decode=True on a leaf part gives bytes
    charset = part.get_content_charset() or "utf-8"
    try:
        codecs.lookup(charset)
    except LookupError:
        charset = "utf-8"
    return payload.decode(charset, errors="replace")


def _is_file(part: Message) -> bool:
    return part.get_filename() is not None or str(part.get("Content-Disposition", "")).lower().startswith("attachment")


def _body(parts) -> str:
    """The text of the first plain-text body part, else of the first HTML one, reduced to text."""
    bodies = [
        part for part, _depth, attached in parts if not attached and not part.is_multipart() and not _is_file(part)
    ]
    plain = next((part for part in bodies if part.get_content_type() == "text/plain"), None)
    if plain is not None:
        return _text_of(plain)
    html = next((part for part in bodies if part.get_content_type() == "text/html"), None)
    return texts.html_to_text(_text_of(html)) if html is not None else ""


def _files(parts, parsed: Parsed, max_bytes: int, allowed: tuple[str, ...]) -> None:
    """Keep each attached file that passes the rules; count the others."""
    for part, _depth, attached in parts:
        if attached or part.is_multipart() or not _is_file(part):
            continue
        data = part.get_payload(decode=True) or b""
        kind = rules.detect(BytesIO(data)) if len(data) <= max_bytes else None
        if kind is None or kind not in allowed or len(parsed.files) >= MAX_FILES:
            parsed.files_refused += 1
            continue
        parsed.files.append(File(rules.clean_name(decoded(part.get_filename(), 250)), kind, data))
