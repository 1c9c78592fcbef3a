"""Microsoft Teams, through a Power Automate workflow's trigger (or a legacy connector): an Adaptive Card.

Both take ``{"type": "message", "attachments": [{"contentType":
"application/vnd.microsoft.card.adaptive", "content": <card>}]}``; the card
is text blocks (the headline bold) and an ``Action.OpenUrl`` to the inquiry.
Quirks: a workflow answers 202 Accepted; a deleted workflow or a wrong
signature answers 401, 403 or 404: permanent. 429 carries ``Retry-After``.
"""

from __future__ import annotations

from app.core.chaturls import Target
from app.models import DeliveryChannel
from app.notify.channels.chat import ChatChannel, Request
from app.notify.message import Notice, chat_lines

CARD = "application/vnd.microsoft.card.adaptive"


def build(notice: Notice, target: Target) -> Request:
    """The card in a message."""
    headline, *rest = chat_lines(notice)
    blocks = [
        {"type": "TextBlock", "text": headline, "weight": "Bolder", "wrap": True},
        *({"type": "TextBlock", "text": line, "wrap": True} for line in rest),
    ]
    card = {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": blocks,
        "actions": [{"type": "Action.OpenUrl", "title": "Sundown", "url": notice.url}],
    }
    return Request("POST", {"type": "message", "attachments": [{"contentType": CARD, "content": card}]})


CHANNEL = ChatChannel(DeliveryChannel.MSTEAMS, "Microsoft Teams", build)
