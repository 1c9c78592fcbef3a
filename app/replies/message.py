"""The e-mail a person receives: an admin's reply or an acknowledgement, threaded with their inquiry.

``From`` is ``SUNDOWN_MAIL_FROM`` (the relay's domain), ``Reply-To`` the
answering admin's address or the team's (``SUNDOWN_REPLY_TO``). The
inquiry's thread has a stable id, ``<inquiry-N.HASH@domain>``: each e-mail
has its own ``Message-ID`` and names the thread in ``In-Reply-To`` and
``References``, so the person's mail client shows one conversation.

Headers are written by the ``email`` package's default policy, which
encodes non-ASCII text and folds long lines. A line break inside a value is
not a header's end to the policy, but it is to some parsers once an encoded
word is decoded (a name ``x\\r\\nBcc: ...`` became a Bcc there), so every
value a visitor gave (name, address, anything derived from the form) has
its line breaks and control characters removed first (``header_text``).
"""

from __future__ import annotations

import hashlib
import hmac
import unicodedata
from email.headerregistry import Address
from email.message import EmailMessage
from email.policy import default as POLICY  # noqa: N812
from email.utils import format_datetime
from urllib.parse import urlsplit

from flask import current_app

from app.core import clock
from app.inquiries.validation import answerable
from app.models import Inquiry, Reply, ReplyKind

HEADER_MAX = 200  # characters of one visitor-given value in a header


WORD_JOINER = "\u2060"  # invisible: ``=?`` stays readable, but no longer opens an encoded word


def header_text(value: str | None, limit: int = HEADER_MAX) -> str:
    """``value`` fit for a header: control and line-separator characters become spaces, runs of space one,
    an encoded word's opening ``=?`` broken by an invisible word joiner, at most ``limit`` characters.

    The ``email`` package decodes an encoded word it is given (``=?utf-8?q?Eve=0D=0ABcc:...?=``) and then
    writes the CR/LF it held as they are: a header of the attacker's choosing. So none reaches it.
    """
    cleaned = "".join(" " if unicodedata.category(char) in ("Cc", "Zl", "Zp") else char for char in value or "")
    return " ".join(cleaned.split())[:limit].replace("=?", "=" + WORD_JOINER + "?")


def domain() -> str:
    """The domain of the sender's address (``SUNDOWN_MAIL_FROM``), else the origin's host."""
    return sender().rpartition("@")[2]


def sender() -> str:
    """``SUNDOWN_MAIL_FROM``, or ``sundown@`` the origin's host."""
    config = current_app.config
    host = urlsplit(config["ORIGIN"]).hostname or "localhost"
    return config["MAIL_FROM"] or f"sundown@{host}"


def thread_id(inquiry_id: int) -> str:
    """The inquiry's thread: ``<inquiry-N.HASH@domain>``, the same for every e-mail about it.

    The hash (keyed by ``SUNDOWN_SECRET_KEY``) keeps ids of other inquiries from being guessed.
    """
    key = current_app.config["SECRET_KEY"].encode()
    digest = hmac.new(key, f"inquiry-thread:{inquiry_id}".encode(), hashlib.sha256).hexdigest()[:16]
    return f"<inquiry-{inquiry_id}.{digest}@{domain()}>"


def new_message_id() -> str:
    """A fresh ``Message-ID`` from the app's randomness."""
    return f"<reply-{clock.random_bytes(12).hex()}@{domain()}>"


def recipient(inquiry: Inquiry) -> Address:
    """The person as ``To``: their name (cleaned) and address; ValueError for an address no header takes
    (``validation.answerable``, the rule intake accepts an address by)."""
    address = inquiry.email.strip()
    if not answerable(address):
        raise ValueError("unusable address")
    username, _at, host = address.rpartition("@")
    return Address(display_name=header_text(inquiry.name, 100), username=username, domain=host)


def build(reply: Reply, inquiry: Inquiry, now) -> EmailMessage:
    """The e-mail of ``reply`` to the person who wrote ``inquiry``."""
    message = EmailMessage(policy=POLICY)
    message["From"] = sender()
    message["To"] = recipient(inquiry)
    if reply.reply_to:
        message["Reply-To"] = reply.reply_to
    message["Subject"] = header_text(reply.subject, 300)
    message["Date"] = format_datetime(now)
    message["Message-ID"] = reply.message_id
    message["In-Reply-To"] = thread_id(inquiry.id)
    message["References"] = thread_id(inquiry.id)
    if reply.kind == ReplyKind.ACK:
        message["Auto-Submitted"] = "auto-replied"  # RFC 3834: no vacation reply to an automatic one
    message.set_content(reply.body)  # it drops every Content-* header set before it
    message["Content-Language"] = header_text(reply.locale, 16).replace("_", "-")
    _refuse_line_breaks(message)
    return message


def _refuse_line_breaks(message: EmailMessage) -> None:
    """The last guard: a header whose value (as the policy holds it) has a line break is never sent."""
    for name, value in message.items():
        if "\r" in str(value) or "\n" in str(value):
            raise ValueError(f"line break in {name}")
