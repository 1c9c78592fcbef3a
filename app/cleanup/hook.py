"""The after-response trigger: views ask for a cleanup, the runner does it off the connection.

Views call ``trigger(name)``. Once the response has been sent
(``Response.call_on_close``), and only if this process's memory says the
claim may be due, the run is handed to the background runner
(``app.background``) and the close callback returns at once, so the next
request on the same keep-alive connection never waits for it. The claim in
the database decides who runs.

The runner starts the run in the process's first quiet moment
(``background.Activity``), at most ``START_WAIT`` later: the request that
follows the claiming one (a browser following the form's redirect to
``/thanks``, a proxy's next request on the kept-alive connection) arrives
within milliseconds, and is then served before the run starts competing with
it for the CPU and the interpreter.
"""

from __future__ import annotations

import logging
import time
from functools import partial

from flask import Flask, current_app, g

from app import background
from app.cleanup import runs

log = logging.getLogger(__name__)

JOB = "cleanup"
START_WAIT = 1.0  # seconds a run waits, at most, for a quiet moment before it starts


def init_app(app: Flask) -> None:
    """Look for a requested cleanup after every request."""
    app.after_request(_hand_off_after_close)


def trigger(name: str) -> None:
    """Ask for a cleanup after the current response, named ``name`` in the ledger."""
    g.cleanup_trigger = name


def _hand_off_after_close(response):
    name = g.pop("cleanup_trigger", None)
    if name is not None and runs.is_due():
        app = current_app._get_current_object()
        response.call_on_close(partial(background.submit, app, JOB, partial(_run_quietly, app, name)))
    return response


def _run_quietly(app: Flask, name: str) -> None:
    """Run in a fresh app context on the runner; log failures, never raise."""
    stopping = background.runner_of(app).stopping
    background.activity_of(app).wait_for_quiet(time.monotonic() + START_WAIT, stopping.is_set)
    with app.app_context():
        try:
            runs.run_if_due(name, should_stop=stopping.is_set)
        except Exception:  # noqa: BLE001 - nobody is waiting for this run; log and move on
            log.exception("cleanup after %s failed", name)
