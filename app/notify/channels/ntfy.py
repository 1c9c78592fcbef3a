"""ntfy, through its JSON publishing: ``POST /`` ``{"topic", "title", "message", "click"}``.

A server of one's own (``ntfy://host/topic``) or ntfy.sh (``ntfy://topic``);
an access token (``?token=tk_…``) or a user and password go in
``Authorization``. Quirks: ``click`` opens the inquiry when the notification
is tapped; a wrong token answers 401, a topic the account may not write 403:
permanent. 429 (a visitor's rate limit) carries ``Retry-After``.
"""

from __future__ import annotations

from app.core.chaturls import Target
from app.models import DeliveryChannel
from app.notify.channels.chat import ChatChannel, Request
from app.notify.message import Notice, chat_lines


def build(notice: Notice, target: Target) -> Request:
    """The JSON message to the URL's topic: the headline as its title."""
    headline, *rest = chat_lines(notice)
    return Request(
        "POST",
        {
            "topic": target.extra["topic"],
            "title": headline,
            "message": "\n".join(rest) or headline,
            "click": notice.url,
            "tags": ["inbox_tray"],
        },
    )


CHANNEL = ChatChannel(DeliveryChannel.NTFY, "ntfy", build)
