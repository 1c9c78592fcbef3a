"""Discord, through a channel webhook: ``POST /api/webhooks/ID/token`` ``{"content": …}``.

Quirks: ``allowed_mentions`` is empty, so an ``@everyone`` someone typed
into the form pings nobody; content is cut to Discord's 2000 characters.
A deleted webhook answers 404 (``Unknown Webhook``), a wrong token 401:
permanent. 429 carries ``Retry-After`` (seconds, possibly fractional).
Success is 204 No Content.
"""

from __future__ import annotations

from app.core.chaturls import Target
from app.models import DeliveryChannel
from app.notify.channels.chat import ChatChannel, Request
from app.notify.message import Notice, chat_lines

LIMIT = 2000


def build(notice: Notice, target: Target) -> Request:
    """The webhook's JSON: the headline in bold, the other lines, the link (Discord previews none: ``<…>``)."""
    headline, *rest = chat_lines(notice)
    content = "\n".join([f"**{headline}**", *rest, f"<{notice.url}>"])
    body = {"content": content[:LIMIT], "allowed_mentions": {"parse": []}}
    body.update(target.extra)  # a bot name, when the URL gives one
    return Request("POST", body)


CHANNEL = ChatChannel(DeliveryChannel.DISCORD, "Discord", build)
