"""This process's memory of the outbox: when it can next have something due, and who sends what.

A request whose process knows nothing is due does no database work at all;
the memory is a shortcut only, the leases in the database decide.
``wakeups`` counts hand-offs, so a pass that was running when a new
delivery's hand-off was dropped (one job per name) looks once more.
``handlers`` are the senders by delivery kind its clients registered
(``app.outbox.handlers``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.core.background import Memory


@dataclass
class OutboxState(Memory):
    """``next_due_ms``: epoch ms before which nothing can be due (0: look at the next request)."""

    EXTENSION = "sundown.outbox"
    wakeups: int = 0
    handlers: dict[str, Any] = field(default_factory=dict)


install, of, current = OutboxState.install, OutboxState.of, OutboxState.current
