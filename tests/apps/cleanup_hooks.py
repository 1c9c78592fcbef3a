"""A WSGI app whose cleanup first hits a test target: a barrier on a file, or an error.

``CLEANUP_TEST_MODE``: ``barrier`` (touch ``blocked`` in ``CLEANUP_TEST_DIR``,
then wait until ``release`` exists there, or the process is stopping: then
touch ``stopping``) or ``raise``. The target deletes
nothing; the production code is unchanged: the target is added to this app's
registered targets here.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from sqlalchemy import false

from app import create_app
from app.cleanup import state
from app.cleanup.batches import Target
from app.core import background
from app.models import Inquiry

MODE = os.environ["CLEANUP_TEST_MODE"]
DIRECTORY = Path(os.environ["CLEANUP_TEST_DIR"])
BARRIER_TIMEOUT = 60


def held_on_barrier(_moment):
    (DIRECTORY / "blocked").touch()
    deadline = time.monotonic() + BARRIER_TIMEOUT
    while not (DIRECTORY / "release").exists() and time.monotonic() < deadline:
        if background.runner_of(app).stopping.is_set():
            (DIRECTORY / "stopping").touch()
            break
        time.sleep(0.02)
    return false()


def failing(_moment):
    raise RuntimeError("cleanup failure injected by the test app")


app = create_app()
where = held_on_barrier if MODE == "barrier" else failing
state.of(app).targets.insert(0, Target(MODE, Inquiry, where, Inquiry.created_at))
