"""Matrix, through the client-server API: ``PUT /_matrix/client/v3/rooms/<room>/send/m.room.message/<txn>``.

The transaction ID is the delivery's idempotency key, so a retry of a
message the homeserver already took is not shown twice (Matrix drops a
repeated transaction of the same access token). The body is ``m.text``
with an HTML ``formatted_body`` (the headline bold, every line escaped).
Quirks: an expired or revoked token answers 401 ``M_UNKNOWN_TOKEN``, an
account not in the room 403 ``M_FORBIDDEN``: permanent. 429
``M_LIMIT_EXCEEDED`` carries ``Retry-After`` on current homeservers.
"""

from __future__ import annotations

from html import escape
from urllib.parse import quote

from app.core.chaturls import Target
from app.models import DeliveryChannel
from app.notify.channels.chat import ChatChannel, Request, text_of
from app.notify.message import Notice, chat_lines


def build(notice: Notice, target: Target) -> Request:
    """The room message, under the delivery's transaction ID."""
    lines = chat_lines(notice)
    html = "<br>".join(
        [
            f"<strong>{escape(lines[0])}</strong>",
            *(escape(line) for line in lines[1:]),
            f'<a href="{escape(notice.url)}">{escape(notice.url)}</a>',
        ]
    )
    body = {
        "msgtype": "m.text",
        "body": text_of(lines, notice.url),
        "format": "org.matrix.custom.html",
        "formatted_body": html,
    }
    return Request("PUT", body, path=quote(notice.delivery.idempotency_key, safe=""))


CHANNEL = ChatChannel(DeliveryChannel.MATRIX, "Matrix", build)
