"""The background runner: hands work off at once, one slot per job name, stops on request."""

from __future__ import annotations

import logging
import os
import threading

import pytest

from app.core.background import Runner

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

    with caplog.at_level(logging.ERROR, logger="app.core.background"):
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

    from app.core import background

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

    from app.core import background

    activity = background.activity_of(held_app)
    thread, finished = _hold_a_request(held_app)
    assert activity.in_flight == 1
    seen: list[list] = []
    waiter = threading.Thread(
        target=lambda: (activity.wait_for_quiet(time.monotonic() + WAIT), seen.append(list(finished)))
    )
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and seen == []  # still waiting: the request is in flight
    held_app.extensions["test.hold"][1].set()
    thread.join(WAIT)
    waiter.join(WAIT)
    assert seen == [["held"]] and activity.in_flight == 0  # it returned after the request ended


def test_a_wait_for_quiet_gives_up_at_its_deadline_or_when_told_to_stop(held_app):
    import time

    from app.core import background

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

    from app.core import background

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

    from app.core import background

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


# --- The machine's quiet: CPUs nobody waited for -------------------------------------


class StallFile:
    """A file laid out as the kernel's ``/proc/pressure/cpu``, replaced whole at each change (as the
    kernel's reads are whole), its "some" total in microseconds."""

    def __init__(self, path) -> None:
        self.path, self.total = path, 0
        self.write()

    def write(self) -> None:
        part = self.path.with_suffix(".part")
        part.write_text(
            f"some avg10=0.00 avg60=0.00 avg300=0.00 total={self.total}\n"
            "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
        )
        os.replace(part, self.path)

    def add_later(self, seconds: float, microseconds: int) -> threading.Timer:
        """Add ``microseconds`` of waiting ``seconds`` from now."""

        def add() -> None:
            self.total += microseconds
            self.write()

        timer = threading.Timer(seconds, add)
        timer.start()
        return timer


def test_a_pause_finds_the_cpus_busy_when_tasks_waited_for_more_than_the_share(tmp_path):
    import time

    from app.core import background

    stalls = StallFile(tmp_path / "cpu")
    pressure = background.CpuPressure(str(stalls.path))
    assert pressure.busy(time.monotonic())  # nothing measured yet
    added = stalls.add_later(0.01, 10_000_000)  # ten seconds of waiting: more than any pause lasts
    pressure.pause(0.5)
    assert pressure.busy(time.monotonic())
    added.join(WAIT)
    pressure.pause(0.05)  # nobody waited
    assert not pressure.busy(time.monotonic())
    assert pressure.busy(time.monotonic() + background.STOP_CHECK + 0.01)  # a stale verdict counts for nothing
    stalls.add_later(0.01, 1)  # a microsecond: well under the share of any pause
    pressure.pause(0.2)
    assert not pressure.busy(time.monotonic())


def test_without_the_kernels_figures_only_requests_in_flight_count(tmp_path):
    import time

    from app.core import background

    pressure = background.CpuPressure(str(tmp_path / "absent"))
    pressure.pause(0.01)
    assert not pressure.busy(time.monotonic())
    garbled = tmp_path / "garbled"
    garbled.write_text("some avg10=0.00\n")
    pressure = background.CpuPressure(str(garbled))
    pressure.pause(0.01)
    assert not pressure.busy(time.monotonic())


def test_a_wait_for_quiet_lasts_while_tasks_wait_for_the_cpus_and_ends_after(tmp_path):
    import time

    from app.core import background

    stalls = StallFile(tmp_path / "cpu")
    activity = background.Activity(background.CpuPressure(str(stalls.path)))  # no request in flight
    busy_until = time.monotonic() + 0.6

    def keep_the_cpus_contended() -> None:
        while time.monotonic() < busy_until:
            stalls.total += 20_000  # all of the 10 ms: some task waited all along
            stalls.write()
            time.sleep(0.01)

    contender = threading.Thread(target=keep_the_cpus_contended)
    contender.start()
    activity.wait_for_quiet(time.monotonic() + WAIT)
    contender.join(WAIT)
    assert time.monotonic() >= busy_until


def test_the_kernel_reports_cores_given_more_work_than_they_fit():
    """The real ``/proc/pressure/cpu`` under real load: more spinning processes than cores."""
    import subprocess
    import sys
    import time

    from app.core import background

    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * os.cpu_count() + 1)]
    try:
        time.sleep(0.2)  # every spinner is running
        pressure = background.CpuPressure()
        pressure.pause(0.2)
        assert pressure.busy(time.monotonic())
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
