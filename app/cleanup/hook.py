"""The after-response trigger: views ask for a cleanup, the runner does it off the connection.

Views call ``trigger(name)``. Once the response has been sent, and only if
this process's memory says the claim may be due, the run is handed to the
background runner (``background.after_response``), so the next request on
the same keep-alive connection never waits for it. The claim in the database
decides who runs.

The runner starts the run in the process's first quiet moment
(``background.Activity``), at most ``START_WAIT`` later: the request that
follows the claiming one (a browser following the form's redirect to
``/thanks``, a proxy's next request on the kept-alive connection) arrives
within milliseconds, and is then served before the run starts competing with
it for the CPU and the interpreter.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from flask import Flask, current_app, g

from app.cleanup import runs
from app.core import background

JOB = "cleanup"
START_WAIT = 1.0  # seconds a run waits, at most, for a quiet moment before it starts


def init_app(app: Flask) -> None:
    """Look for a requested cleanup after every request."""
    background.after_response(app, JOB, _requested_and_due, _run_when_quiet)


def trigger(name: str) -> None:
    """Ask for a cleanup after the current response, named ``name`` in the ledger."""
    g.cleanup_trigger = name


def _requested_and_due() -> str | None:
    name = g.pop("cleanup_trigger", None)
    return name if name is not None and runs.is_due() else None


def _run_when_quiet(name: str, should_stop: Callable[[], bool]) -> None:
    background.activity_of(current_app).wait_for_quiet(time.monotonic() + START_WAIT, should_stop)
    runs.run_if_due(name, should_stop=should_stop)
