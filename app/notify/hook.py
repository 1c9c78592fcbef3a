"""After the response, off the connection: the runner sends what is due.

A request that saved an inquiry asks for a pass (``wake()``); any other
request hands one off only when this process's memory says something may be
due (a retry, or the periodic look at other processes' rows), so retries
are carried by later traffic with no scheduler. The hand-off happens in the
response's close callback and returns at once (``app.background``).

A pass works in quiet moments: before each claim and each send it waits until
no request is in flight in the process and no task is kept waiting for the
machine's CPUs (``background.Activity``), for at most
``QUIET_WAIT`` per pass, so a burst of submissions is not slowed by the
notifications it causes; they follow it, at most that much later.
"""

from __future__ import annotations

import logging
import time
from functools import partial

from flask import Flask, current_app, g

from app import background, clock
from app.notify import deliver, state

log = logging.getLogger(__name__)

JOB = "notify"
RETRY_AFTER_ERROR_MS = 60_000  # after a failed pass (the database down), so requests do not hammer it
QUIET_WAIT = 10.0  # seconds a pass waits, in all, for quiet moments before it sends regardless


def init_app(app: Flask) -> None:
    """Look after every request whether a delivery pass is wanted."""
    app.after_request(_hand_off_after_close)


def wake() -> None:
    """Ask for a delivery pass after the current response (a delivery was just enqueued)."""
    g.notify_wake = True


def is_due() -> bool:
    """Whether this process's memory allows that a delivery is due (the database decides)."""
    return clock.epoch_ms(clock.now()) >= state.current().next_due_ms


def _hand_off_after_close(response):
    woken = g.pop("notify_wake", False)
    if woken or is_due():
        app = current_app._get_current_object()
        response.call_on_close(partial(_submit, app, woken))
    return response


def _submit(app: Flask, woken: bool) -> None:
    """Hand a pass to the runner; a wake-up during a running pass makes that pass look once more."""
    if woken:
        state.of(app).wakeups += 1
    background.submit(app, JOB, partial(run_passes, app))


def run_passes(app: Flask) -> None:
    """Deliver in a fresh app context until no hand-off arrived during the pass; log failures, never raise."""
    stopping = background.runner_of(app).stopping
    activity = background.activity_of(app)
    notify_state = state.of(app)
    with app.app_context():
        while not stopping.is_set():
            seen = notify_state.wakeups
            quiet = partial(activity.wait_for_quiet, time.monotonic() + QUIET_WAIT, stopping.is_set)
            try:
                deliver.deliver_due(should_stop=stopping.is_set, before_send=quiet)
            except Exception:  # noqa: BLE001 - nobody waits for this pass; look again in a minute
                notify_state.next_due_ms = clock.epoch_ms(clock.now()) + RETRY_AFTER_ERROR_MS
                log.exception("delivery pass failed")
                return
            if notify_state.wakeups == seen:
                return
