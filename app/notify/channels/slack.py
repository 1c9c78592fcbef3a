"""Slack, through an incoming webhook: ``POST`` ``{"text": …}`` in Slack's mrkdwn.

Quirks: ``&``, ``<`` and ``>`` in what people wrote are escaped, since Slack
reads ``<…>`` as links and mentions (``<!channel>`` would ping everyone).
A revoked or deleted webhook answers 403 ``invalid_token``, 404
``no_service`` or 410 ``channel_is_archived``: permanent. 429 carries
``Retry-After``.
"""

from __future__ import annotations

from app.core.chaturls import Target
from app.models import DeliveryChannel
from app.notify.channels.chat import ChatChannel, Request
from app.notify.message import Notice, chat_lines


def escape(text: str) -> str:
    """``text`` safe in mrkdwn: the three characters Slack's markup gives meaning to."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def build(notice: Notice, target: Target) -> Request:
    """The webhook's JSON: the headline in bold, the other lines, the link."""
    headline, *rest = [escape(line) for line in chat_lines(notice)]
    body = {"text": "\n".join([f"*{headline}*", *rest, f"<{notice.url}>"])}
    body.update(target.extra)  # a channel (#name) and a bot name, when the URL gives them
    return Request("POST", body)


CHANNEL = ChatChannel(DeliveryChannel.SLACK, "Slack", build)
