"""Run a cleanup that stops forever in its third batch, so a test can SIGKILL it there.

Usage: ``python -m tests.apps.cleanup_crash`` with ``SUNDOWN_*`` settings,
``CLEANUP_TEST_DIR`` (``blocked`` is touched there when the run is held) and
``CLEANUP_TEST_NOW`` (the ISO time of the app's clock).
"""

from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path

from app import cleanup, create_app
from app.cleanup import state
from app.cleanup.batches import Target

BATCH_SIZE = 10
HOLD_AT_BATCH = 3


def stopping_in_batch(target: Target, directory: Path) -> Target:
    """``target``, except that building its third batch blocks until the process is killed."""
    calls = []

    def where(moment):
        calls.append(moment)
        if len(calls) == HOLD_AT_BATCH:
            (directory / "blocked").touch()
            time.sleep(3600)
        return target.where(moment)

    return Target(target.name, target.model, where, target.age)


def main() -> None:
    now = datetime.fromisoformat(os.environ["CLEANUP_TEST_NOW"])
    app = create_app({"CLOCK": lambda: now, "CLEANUP_BATCH_SIZE": BATCH_SIZE, "CLEANUP_YIELD": 0})
    targets = state.of(app).targets
    at = next(i for i, target in enumerate(targets) if target.name == "inquiries")
    targets[at] = stopping_in_batch(targets[at], Path(os.environ["CLEANUP_TEST_DIR"]))
    with app.app_context():
        cleanup.run("crash_test")


if __name__ == "__main__":
    main()
