"""The background runner: hands work off at once, one slot per job name, stops on request."""

from __future__ import annotations

import logging
import os
import threading

import pytest

from app.background import Runner

WAIT = 30  # seconds before a wait gives up (a failure, never a timing assertion)


@pytest.fixture
def runner():
    runner = Runner()
    yield runner
    runner.stop()


def blocked_job(started: threading.Event, release: threading.Event, done: list):
    def job():
        started.set()
        assert release.wait(WAIT)
        done.append("blocked")

    return job


def test_submit_returns_while_the_job_is_still_running(runner):
    started, release, done = threading.Event(), threading.Event(), []
    assert runner.submit("cleanup", blocked_job(started, release, done))
    assert started.wait(WAIT)
    assert done == []  # submit came back; the job is still held
    release.set()
    assert runner.wait_idle(WAIT) and done == ["blocked"]


def test_a_second_handoff_of_the_same_name_is_dropped_while_one_is_pending_or_running(runner):
    started, release, done = threading.Event(), threading.Event(), []
    assert runner.submit("cleanup", blocked_job(started, release, done))
    assert started.wait(WAIT)
    assert not runner.submit("cleanup", lambda: done.append("dropped"))  # running
    assert runner.submit("deliveries", lambda: done.append("deliveries"))
    assert not runner.submit("deliveries", lambda: done.append("dropped"))  # pending
    release.set()
    assert runner.wait_idle(WAIT)
    assert done == ["blocked", "deliveries"]
    assert runner.submit("cleanup", lambda: done.append("again"))  # the slot is free again
    assert runner.wait_idle(WAIT) and done[-1] == "again"


def test_the_thread_ends_when_idle_and_starts_again_on_the_next_handoff(runner):
    names = []
    runner.submit("a", lambda: names.append(threading.current_thread().name))
    assert runner.wait_idle(WAIT)
    assert "sundown-background" not in [thread.name for thread in threading.enumerate()]
    runner.submit("a", lambda: names.append(threading.current_thread().name))
    assert runner.wait_idle(WAIT)
    assert names == ["sundown-background", "sundown-background"]


def test_a_failing_job_is_logged_and_the_runner_goes_on(runner, caplog):
    done = []

    def failing():
        raise RuntimeError("job failure injected by the test")

    with caplog.at_level(logging.ERROR, logger="app.background"):
        runner.submit("failing", failing)
        runner.submit("next", lambda: done.append("next"))
        assert runner.wait_idle(WAIT)
    assert done == ["next"]
    assert "background job failing failed" in caplog.text


def test_stop_tells_the_running_job_drops_pending_ones_and_refuses_new_ones(runner):
    started, seen_stop, done = threading.Event(), threading.Event(), []

    def until_stopped():
        started.set()
        if runner.stopping.wait(WAIT):
            seen_stop.set()

    runner.submit("cleanup", until_stopped)
    runner.submit("deliveries", lambda: done.append("pending"))
    assert started.wait(WAIT)
    assert runner.stop(WAIT)
    assert seen_stop.is_set() and done == []
    assert not runner.submit("cleanup", lambda: done.append("late"))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX only")
def test_a_forked_child_runs_its_own_thread(runner):
    started, release, done = threading.Event(), threading.Event(), []
    runner.submit("cleanup", blocked_job(started, release, done))
    assert started.wait(WAIT)
    pid = os.fork()
    if pid == 0:  # the child: the parent's thread did not come along
        ran = []
        ok = runner.submit("cleanup", lambda: ran.append(1)) and runner.wait_idle(WAIT) and ran == [1]
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    release.set()
    assert os.waitstatus_to_exitcode(status) == 0
    assert runner.wait_idle(WAIT) and done == ["blocked"]


# --- Quiet moments: work after responses takes the gaps between requests -------------


@pytest.fixture
def held_app():
    """A bare app with the runner and request counting, and a route held until ``release`` is set."""
    from flask import Flask

    from app import background

    app = Flask(__name__)
    background.init_app(app)
    entered, release = threading.Event(), threading.Event()

    @app.get("/hold")
    def hold():
        entered.set()
        assert release.wait(WAIT)
        return "held"

    app.extensions["test.hold"] = (entered, release)
    yield app
    release.set()
    background.runner_of(app).stop()


def _hold_a_request(app) -> tuple[threading.Thread, list]:
    entered, _release = app.extensions["test.hold"]
    finished: list[str] = []
    thread = threading.Thread(target=lambda: finished.append(app.test_client().get("/hold").get_data(as_text=True)))
    thread.start()
    assert entered.wait(WAIT)
    return thread, finished


def test_a_wait_for_quiet_lasts_while_a_request_is_in_flight_and_ends_after_it(held_app):
    import time

    from app import background

    activity = background.activity_of(held_app)
    thread, finished = _hold_a_request(held_app)
    assert activity.in_flight == 1
    seen: list[list] = []
    waiter = threading.Thread(target=lambda: (activity.wait_for_quiet(time.monotonic() + WAIT),
                                              seen.append(list(finished))))
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and seen == []  # still waiting: the request is in flight
    held_app.extensions["test.hold"][1].set()
    thread.join(WAIT)
    waiter.join(WAIT)
    assert seen == [["held"]] and activity.in_flight == 0  # it returned after the request ended


def test_a_wait_for_quiet_gives_up_at_its_deadline_or_when_told_to_stop(held_app):
    import time

    from app import background

    activity = background.activity_of(held_app)
    thread, finished = _hold_a_request(held_app)
    activity.wait_for_quiet(time.monotonic() + 0.1)
    stop = threading.Event()
    threading.Timer(0.1, stop.set).start()
    activity.wait_for_quiet(time.monotonic() + WAIT, stop.is_set)
    assert finished == [] and activity.in_flight == 1  # both returned with the request still held
    held_app.extensions["test.hold"][1].set()
    thread.join(WAIT)


def test_a_quiet_moment_begins_a_gap_after_the_last_request_ended_not_after_it_started(held_app):
    import time

    from app import background

    activity = background.activity_of(held_app)
    thread, _finished = _hold_a_request(held_app)
    time.sleep(2 * background.QUIET_GAP)  # the request started longer ago than the gap
    held_app.extensions["test.hold"][1].set()
    thread.join(WAIT)
    activity.wait_for_quiet(time.monotonic() + WAIT)
    # The next request on a kept-alive connection comes a round trip after the response: leave it room.
    assert activity.in_flight == 0 and time.monotonic() - activity.last_change >= background.QUIET_GAP


def test_a_job_waiting_for_quiet_looks_a_few_times_a_second_however_many_requests_end(held_app):
    """Every look takes the GIL from the threads serving requests: a busy process is looked at after
    ``QUIET_GAP``, then twice as long each time, up to ``STOP_CHECK``, not at every request's end."""
    import time

    from app import background

    @held_app.get("/quick")
    def quick():
        return "ok"

    class Counted(background.Activity):
        """Counts the waiting thread's looks at the requests in flight."""

        looks = 0

        @property
        def in_flight(self) -> int:
            if threading.current_thread().name == "waiter":
                Counted.looks += 1
            return self._in_flight

        @in_flight.setter
        def in_flight(self, value: int) -> None:
            self._in_flight = value

    activity = background.activity_of(held_app)
    activity._in_flight = vars(activity).pop("in_flight")
    activity.__class__ = Counted
    busy_until = time.monotonic() + 1.5
    served: list[int] = []

    def serve_back_to_back() -> None:
        client = held_app.test_client()
        while time.monotonic() < busy_until:
            served.append(client.get("/quick").status_code)

    server = threading.Thread(target=serve_back_to_back)
    server.start()
    while not served:
        time.sleep(0.001)
    waiter = threading.Thread(target=activity.wait_for_quiet, args=(time.monotonic() + 1.0,), name="waiter")
    waiter.start()
    waiter.join(WAIT)
    server.join(WAIT)
    assert len(served) > 100  # each of them ended, and the process was busy all along
    assert Counted.looks <= 2 * (1 + 1.0 / background.STOP_CHECK) + 2
