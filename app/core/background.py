"""Work after the response, off the connection: one worker thread per process.

``submit(app, name, job)`` hands ``job`` to this app's runner and returns at
once, so the WSGI server can reuse the connection for the next request
(gunicorn serves a keep-alive connection again only after the response's
close callbacks return). At most one job per name is pending or running in a
process: further handoffs of that name are dropped, since the database (the
cleanup's claim, the outbox's leases) decides across processes anyway.

The thread starts on the first handoff, in the process that serves (after a
fork, never in a gunicorn master under ``--preload``), and ends when it has
nothing left to do; the next handoff starts it again. At interpreter exit
(gunicorn's graceful stop, ``--max-requests``, reload) ``stopping`` is set,
jobs finish their current step and the thread is joined for at most
``STOP_TIMEOUT`` seconds.

``after_response(app, name, due, job)`` is the one way work reaches the
runner: after each request for which ``due()`` gives a reason, once the
response is sent, ``job`` runs on the runner in a fresh app context.
``Memory`` is what a feature's process remembers of when its work can next
be due, so that a request with nothing due does no database work at all.

``activity_of(app)`` counts the requests the process is serving, so a job
can wait for a quiet moment before each step that costs CPU
(``Activity.wait_for_quiet``): work after responses then takes the gaps
between requests rather than time from them. A process's own gap is not
enough when other workers keep every core busy, so a quiet moment also
needs a machine whose CPUs nobody had to wait for (``CpuPressure``).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar, Self, cast

from flask import Flask, current_app, g
from werkzeug.local import LocalProxy

from app.core import clock

log = logging.getLogger(__name__)

EXTENSION = "sundown.background"
ACTIVITY = "sundown.activity"
STOP_TIMEOUT = 20.0  # below gunicorn's default graceful timeout (30 s)
# Seconds with no request in flight, started or ended, that count as a quiet moment. A tenth of a
# second kept a busy server's sends out of its bursts, but a worker paced at 10 requests/s never
# saw one: its notifications waited seconds (docs/notifications.md, "A tenth of a second";
# figures: docs/benchmarks.md, "Figures behind the code").
QUIET_GAP = 0.02
STOP_CHECK = 0.25  # the longest pause between two looks of a job waiting for a quiet moment
CPU_PRESSURE = "/proc/pressure/cpu"  # Linux's pressure stall information for CPUs
# The share of a pause during which some task waited for a CPU that makes the machine busy. Loaded rounds
# of the notification benchmark stay well above it even in their dips, and a higher threshold let more
# passes slip into the rounds (docs/notifications.md, "The machine's quiet"; figures: docs/benchmarks.md,
# "Figures behind the code").
CPU_BUSY_SHARE = 0.25


_RUNNERS: weakref.WeakSet[Runner] = weakref.WeakSet()  # every runner of this process, for fork and exit


class Runner:
    """A one-thread runner with a single slot per job name."""

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.hand_offs: dict[str, Callable] = {}  # the ``after_response`` hooks by job name
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._queue: dict[str, Callable[[], None]] = {}
        self._running: str | None = None
        self._thread: threading.Thread | None = None
        _RUNNERS.add(self)

    def submit(self, name: str, job: Callable[[], None]) -> bool:
        """Queue ``job`` under ``name``; False when one of that name is already pending or running."""
        with self._lock:
            if self.stopping.is_set() or name in self._queue or name == self._running:
                return False
            self._queue[name] = job
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="sundown-background", daemon=True)
                self._thread.start()
        return True

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing is pending or running; False if ``timeout`` passed first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._thread is None, timeout)

    def stop(self, timeout: float = STOP_TIMEOUT) -> bool:
        """Ask jobs to stop after their current step, drop pending ones, and wait for the thread."""
        self.stopping.set()
        with self._lock:
            self._queue.clear()
        return self.wait_idle(timeout)

    def _work(self) -> None:
        while True:
            with self._lock:
                if not self._queue or self.stopping.is_set():
                    self._queue.clear()
                    self._running, self._thread = None, None
                    self._idle.notify_all()
                    return
                name = next(iter(self._queue))
                job = self._queue.pop(name)
                self._running = name
            try:
                job()
            except Exception:  # noqa: BLE001 - a job's failure must not end the runner
                log.exception("background job %s failed", name)
            with self._lock:
                self._running = None

    def forget_parent_process(self) -> None:
        """In a forked child: start afresh, since the parent's thread (and any lock it held) stayed behind."""
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._queue, self._running, self._thread = {}, None, None


class CpuPressure:
    """Whether tasks on this machine waited for a CPU while a job paused (Linux's pressure stall information).

    The kernel counts in ``CPU_PRESSURE`` ("some ... total=<µs>") the time
    during which at least one runnable task waited for a CPU. A job reads it
    before and after each pause (``pause``), so its own work is not counted,
    and the machine is busy when tasks waited for more than
    ``CPU_BUSY_SHARE`` of the pause. A verdict holds for ``STOP_CHECK``;
    after that, or before the first pause, the machine counts as busy until
    a pause has been measured. Where the file cannot be read (another
    system, a kernel without it) the machine never counts as busy, and a
    process's own quiet is all there is.
    """

    def __init__(self, path: str = CPU_PRESSURE) -> None:
        self._path: str | None = path
        self._verdict: tuple[float, bool] | None = None  # time.monotonic() of the last measured pause, busy

    def pause(self, seconds: float) -> None:
        """Sleep ``seconds``, measuring how long tasks waited for a CPU meanwhile."""
        before, start = self._stalled_us(), time.monotonic()
        time.sleep(seconds)
        after, end = self._stalled_us(), time.monotonic()
        if before is not None and after is not None and end > start:
            self._verdict = (end, after - before > CPU_BUSY_SHARE * (end - start) * 1_000_000)

    def busy(self, now: float) -> bool:
        """Whether the last pause, if it ended within ``STOP_CHECK`` of ``now``, found the CPUs contended."""
        if self._path is None:
            return False
        if self._verdict is None or now - self._verdict[0] > STOP_CHECK:
            return True
        return self._verdict[1]

    def _stalled_us(self) -> int | None:
        """The kernel's total of microseconds some task waited for a CPU; None (from then on) if unreadable."""
        if self._path is None:
            return None
        try:
            with open(self._path, "rb") as file:
                return int(file.readline().rsplit(b"total=", 1)[1])
        except (OSError, ValueError, IndexError):
            log.info("no CPU pressure in %s: only requests in flight tell quiet moments", self._path)
            self._path = None
            return None


class Activity:
    """The requests this process is serving now, and when the last one started or ended."""

    def __init__(self, cpu: CpuPressure | None = None) -> None:
        self.cpu = cpu or CpuPressure()
        self._lock = threading.Lock()
        self.in_flight = 0
        self.last_change = 0.0  # time.monotonic() of the last start or end

    def started(self) -> None:
        """A request began (the first ``before_request`` hook)."""
        with self._lock:
            self.in_flight += 1
            self.last_change = time.monotonic()
        g.sundown_counted = True

    def ended(self, _error: BaseException | None = None) -> None:
        """A request's teardown; counted only if its start was (an earlier hook may not have run)."""
        if g.pop("sundown_counted", False):
            with self._lock:
                self.in_flight -= 1
                # The next request on a kept-alive connection comes a round trip after a response.
                self.last_change = time.monotonic()

    def wait_for_quiet(self, deadline: float, should_stop: Callable[[], bool] = lambda: False) -> None:
        """Sleep until a quiet moment (nothing in flight, nothing started or ended for ``QUIET_GAP``, the
        CPUs not busy: ``CpuPressure``), the ``time.monotonic()`` ``deadline`` or ``should_stop``.

        The waiting thread looks after ``QUIET_GAP``, then twice as long
        each time the process is still busy, up to ``STOP_CHECK``: a few
        looks a second under load. Every look takes the GIL from the threads
        serving requests, and on busy cores the looking thread can be
        descheduled holding it. Woken at every request's end instead, it
        looked many times as often while a thread served requests back to
        back (tests/core/test_background.py; figures: docs/benchmarks.md,
        "Figures behind the code"). A quiet moment is seen at most
        ``STOP_CHECK`` after a long burst ends, ``QUIET_GAP`` after a lone
        request.
        """
        pause = QUIET_GAP
        while not should_stop():
            now = time.monotonic()
            if now >= deadline:
                return
            if not self.in_flight and now - self.last_change >= QUIET_GAP and not self.cpu.busy(now):
                return
            self.cpu.pause(min(pause, deadline - now))
            pause = min(2 * pause, STOP_CHECK)


def init_app(app: Flask) -> None:
    """Give ``app`` its runner, and count its requests in flight."""
    app.extensions[EXTENSION] = Runner()
    activity = app.extensions[ACTIVITY] = Activity()
    app.before_request_funcs.setdefault(None, []).insert(0, activity.started)
    app.teardown_request(activity.ended)


def this_app() -> Flask:
    """The app behind ``current_app``, for work that outlives its context (a thread, a streamed response)."""
    # Flask types current_app as the app itself; it is the proxy, which holds the app.
    return cast("LocalProxy[Flask]", current_app)._get_current_object()


def activity_of(app: Flask) -> Activity:
    """The request counter of ``app``."""
    return app.extensions[ACTIVITY]


def runner_of(app: Flask) -> Runner:
    """The runner of ``app``."""
    return app.extensions[EXTENSION]


def submit(app: Flask, name: str, job: Callable[[], None]) -> bool:
    """Hand ``job`` to the runner of ``app`` (see ``Runner.submit``)."""
    return runner_of(app).submit(name, job)


Job = Callable[[Any, Callable[[], bool]], None]  # job(reason, should_stop)


def after_response(app: Flask, name: str, due: Callable[[], Any], job: Job) -> None:
    """After each response of ``app`` for which ``due()`` gives a reason, run ``job(reason, should_stop)`` off it.

    ``due`` runs at the end of every request, in it (``g`` and the process's
    memory are at hand), so it must be cheap; None means nothing to do. The
    job is handed to the runner in the response's close callback, which
    returns at once, and runs in a fresh app context; ``should_stop`` turns
    true when the process is stopping. A job's failure is logged, never raised.
    """

    def hand_off(response):
        reason = due()
        if reason is not None:
            response.call_on_close(partial(submit, app, name, partial(_in_app_context, app, name, job, reason)))
        return response

    runner_of(app).hand_offs[name] = hand_off
    app.after_request(hand_off)


def _in_app_context(app: Flask, name: str, job: Job, reason: Any) -> None:
    with app.app_context():
        try:
            job(reason, runner_of(app).stopping.is_set)
        except Exception:  # noqa: BLE001 - nobody waits for work after a response; log and move on
            log.exception("%s after a response failed (%s)", name, reason)


@dataclass
class Memory:
    """What a feature's process remembers: ``next_due_ms``, the epoch ms before which nothing can be due.

    A shortcut only (0: ask the database at the next request); the database
    decides. A subclass names its ``EXTENSION`` and adds what else it keeps.
    """

    EXTENSION: ClassVar[str]
    next_due_ms: int = 0

    @classmethod
    def install(cls, app: Flask) -> None:
        """Give ``app`` a fresh memory."""
        app.extensions[cls.EXTENSION] = cls()

    @classmethod
    def of(cls, app: Flask) -> Self:
        """The memory of ``app``."""
        return app.extensions[cls.EXTENSION]

    @classmethod
    def current(cls) -> Self:
        """The memory of the current app."""
        return cls.of(current_app)

    def is_due(self) -> bool:
        """Whether the memory allows that something is due now (the database decides)."""
        return clock.epoch_ms(clock.now()) >= self.next_due_ms


def _after_fork_in_child() -> None:
    for runner in list(_RUNNERS):
        runner.forget_parent_process()


os.register_at_fork(after_in_child=_after_fork_in_child)


@atexit.register
def _stop_all() -> None:
    for runner in list(_RUNNERS):
        if not runner.stop():
            log.warning("background work still running at exit")
