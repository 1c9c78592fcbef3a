"""After the response, off the connection: the runner sends what is due.

A request that enqueued a delivery asks for a pass (``wake()``); any other
request hands one off only when this process's memory says something may be
due (a retry, or the periodic look at other processes' rows), so retries
are carried by later traffic with no scheduler. The hand-off happens in the
response's close callback and returns at once (``background.after_response``).

A pass works in quiet moments: before each claim and each send it waits until
no request is in flight in the process and no task is kept waiting for the
machine's CPUs (``background.Activity``), for at most
``QUIET_WAIT`` per pass, so a burst of submissions is not slowed by the
notifications it causes; they follow it, at most that much later.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial

from flask import Flask, current_app, g

from app.core import background, clock
from app.outbox import deliver, state

log = logging.getLogger(__name__)

JOB = "outbox"
RETRY_AFTER_ERROR_MS = 60_000  # after a failed pass (the database down), so requests do not hammer it
QUIET_WAIT = 10.0  # seconds a pass waits, in all, for quiet moments before it sends regardless


def init_app(app: Flask) -> None:
    """Look after every request whether a delivery pass is wanted."""
    background.after_response(app, JOB, _wanted, run_passes)


def wake() -> None:
    """Ask for a delivery pass after the current response (a delivery was just enqueued)."""
    g.outbox_wake = True


def look_next_request() -> None:
    """Have the next request of this process hand off a pass: a delivery was enqueued off any request
    (after a response, in the background), where ``wake()`` has no response to follow."""
    state.current().next_due_ms = 0


def _wanted() -> str | None:
    """``woken`` (counted, so that a pass running now looks once more), ``due``, or None."""
    if g.pop("outbox_wake", False):
        state.current().wakeups += 1
        return "woken"
    return "due" if state.current().is_due() else None


def run_passes(_reason: str, should_stop: Callable[[], bool]) -> None:
    """Deliver until no hand-off arrived during the pass; after a failed pass, wait before the next."""
    activity = background.activity_of(current_app)
    memory = state.current()
    while not should_stop():
        seen = memory.wakeups
        quiet = partial(activity.wait_for_quiet, time.monotonic() + QUIET_WAIT, should_stop)
        try:
            deliver.deliver_due(should_stop=should_stop, before_send=quiet)
        except Exception:  # noqa: BLE001 - nobody waits for this pass; look again in a minute
            memory.next_due_ms = clock.epoch_ms(clock.now()) + RETRY_AFTER_ERROR_MS
            log.exception("delivery pass failed")
            return
        if memory.wakeups == seen:
            return
