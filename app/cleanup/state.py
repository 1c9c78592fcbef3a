"""This process's cleanup state: the targets, and when the claim can next be due."""

from __future__ import annotations

from dataclasses import dataclass, field

from flask import Flask, current_app

from app.cleanup.batches import Target
from app.cleanup.targets import TARGETS

EXTENSION = "sundown.cleanup"


@dataclass
class CleanupState:
    """The targets, and the epoch ms before which the claim cannot be due (0: ask the database).

    The memory is a shortcut only: the claim in the database decides.
    """

    targets: list[Target] = field(default_factory=lambda: list(TARGETS))
    next_due_ms: int = 0


def install(app: Flask) -> None:
    """Give ``app`` a fresh state."""
    app.extensions[EXTENSION] = CleanupState()


def of(app: Flask) -> CleanupState:
    """The state of ``app``."""
    return app.extensions[EXTENSION]


def current() -> CleanupState:
    """The state of the current app."""
    return of(current_app)
