"""This process's memory of the outbox: when it can next have something due.

A request whose process knows nothing is due does no database work at all;
the memory is a shortcut only, the leases in the database decide.
``wakeups`` counts hand-offs, so a pass that was running when a new
inquiry's hand-off was dropped (one job per name) looks once more.
``settings`` holds the notification settings new inquiries are enqueued
under, with when they were read (``app.notify.settings.for_new_inquiries``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.core.background import Memory


@dataclass
class NotifyState(Memory):
    """``next_due_ms``: epoch ms before which nothing can be due (0: look at the next request)."""

    EXTENSION = "sundown.notify"
    wakeups: int = 0
    settings: tuple[datetime, Any] | None = None


install, of, current = NotifyState.install, NotifyState.of, NotifyState.current
