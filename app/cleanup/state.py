"""This process's cleanup state: the targets, and when the claim can next be due."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.cleanup.batches import Target
from app.cleanup.targets import TARGETS
from app.core.background import Memory


@dataclass
class CleanupState(Memory):
    """The targets, and the epoch ms before which the claim cannot be due (0: ask the database)."""

    EXTENSION = "sundown.cleanup"
    targets: list[Target] = field(default_factory=lambda: list(TARGETS))


install, of, current = CleanupState.install, CleanupState.of, CleanupState.current
