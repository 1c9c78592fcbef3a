"""Steps the notification tests share."""

from __future__ import annotations

from sqlalchemy import select

from app.models import Delivery
from tests.helpers import settle

DELIVERIES = select(Delivery).order_by(Delivery.id)
CHAT_SERVICES = ("slack", "discord", "msteams", "telegram", "matrix", "ntfy")


def request_after(client) -> None:
    """An ordinary request, closed as a server closes it; waits for the work after it."""
    with client.get("/privacy"):
        pass
    settle(client.application)


def statuses(query) -> list[tuple[str, str, int]]:
    return [(row.channel, row.status, row.attempts) for row in query(DELIVERIES)]
