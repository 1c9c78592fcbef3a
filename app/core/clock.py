"""The app's injectable clock and randomness (``CLOCK``, ``RANDOM_BYTES`` settings)."""

from __future__ import annotations

from datetime import datetime

from flask import current_app


def now() -> datetime:
    """The current time, timezone-aware UTC, from the app's clock."""
    return current_app.config["CLOCK"]()


def epoch_ms(moment: datetime) -> int:
    """``moment`` as whole milliseconds since the Unix epoch."""
    return int(moment.timestamp() * 1000)


def random_bytes(count: int) -> bytes:
    """``count`` unpredictable bytes from the app's randomness source."""
    return current_app.config["RANDOM_BYTES"](count)
