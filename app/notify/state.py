"""This process's memory for notifications: the settings new inquiries are enqueued under, and when they
were read (``app.notify.settings.for_new_inquiries``).

The outbox's own memory (when something can next be due) is ``app.outbox.state``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from flask import Flask, current_app

EXTENSION = "sundown.notify"


@dataclass
class NotifyState:
    """``settings``: ``(read at, Notifications)``, or None to read them at the next new inquiry."""

    settings: tuple[datetime, Any] | None = None


def install(app: Flask) -> None:
    """Give ``app`` a fresh memory."""
    app.extensions[EXTENSION] = NotifyState()


def current() -> NotifyState:
    """The memory of the current app."""
    return current_app.extensions[EXTENSION]
