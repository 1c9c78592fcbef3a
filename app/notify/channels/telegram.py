"""Telegram, through the Bot API: ``POST /bot<token>/sendMessage`` ``{"chat_id", "text"}``.

Quirks: plain text (no ``parse_mode``), so nothing people wrote is read as
markup; link previews off; 4096 characters at most. A revoked bot token
answers 401, a bot blocked or removed from the chat 403, a malformed token
404, an unknown chat 400 (``chat not found``): all permanent, since the same
request can never succeed. 429 carries ``Retry-After``.
"""

from __future__ import annotations

from app.core.chaturls import Target
from app.models import DeliveryChannel
from app.notify.channels.chat import REVOKED, ChatChannel, Request, text_of
from app.notify.message import Notice, chat_lines

LIMIT = 4096


def build(notice: Notice, target: Target) -> Request:
    """``sendMessage``'s JSON to the URL's chat."""
    return Request(
        "POST",
        {
            "chat_id": target.extra["chat_id"],
            "text": text_of(chat_lines(notice), notice.url)[:LIMIT],
            "link_preview_options": {"is_disabled": True},
        },
    )


CHANNEL = ChatChannel(DeliveryChannel.TELEGRAM, "Telegram", build, permanent=REVOKED | {400})
