"""The claim: one conditional upsert decides who runs the cleanup, on both databases, under races."""

from __future__ import annotations

import multiprocessing
import threading

import pytest
from sqlalchemy.orm import Session

from app.cleanup import claim
from app.core.db import make_engine

HOUR_MS = 3_600_000
LEASE_MS = 300_000
T0 = 1_780_000_000_000  # epoch ms, a fixed instant in 2026


def take(engine, now_ms: int, force: bool = False, interval_ms: int = HOUR_MS) -> bool:
    with Session(engine) as session, session.begin():
        return claim.take(session, now_ms, interval_ms, LEASE_MS, force)


def release(engine, claimed_ms: int, counted_from_ms: int) -> bool:
    with Session(engine) as session, session.begin():
        return claim.release(session, claimed_ms, counted_from_ms)


def stored(engine) -> int | None:
    with Session(engine) as session:
        return claim.stored(session)


@pytest.fixture
def engine(database_url):
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


def test_the_first_ever_claim_inserts_the_row_and_wins(engine):
    assert stored(engine) is None
    assert take(engine, T0)
    assert stored(engine) == -T0  # running


def test_a_claim_within_the_interval_is_refused(engine):
    assert take(engine, T0)
    assert release(engine, T0, T0)
    assert not take(engine, T0 + HOUR_MS - 1)
    assert stored(engine) == T0
    assert take(engine, T0 + HOUR_MS)


def test_nobody_claims_while_a_run_holds_its_lease_not_even_force(engine):
    assert take(engine, T0, interval_ms=1000)
    assert not take(engine, T0 + 2000, interval_ms=1000)
    assert not take(engine, T0 + 2000, force=True)
    assert stored(engine) == -T0


def test_force_ignores_the_interval_once_the_run_has_finished(engine):
    assert take(engine, T0)
    release(engine, T0, T0)
    assert take(engine, T0 + 1, force=True)
    assert stored(engine) == -(T0 + 1)


def test_a_dead_run_is_taken_over_after_its_lease(engine):
    assert take(engine, T0)  # never released: its process died
    assert not take(engine, T0 + LEASE_MS - 1, force=True)
    assert take(engine, T0 + LEASE_MS, force=True)


def test_release_by_a_run_that_lost_its_lease_changes_nothing(engine):
    take(engine, T0)
    take(engine, T0 + LEASE_MS, force=True)
    assert not release(engine, T0, T0)
    assert stored(engine) == -(T0 + LEASE_MS)


def test_epoch_milliseconds_do_not_overflow_the_cast(engine):
    far = 4_102_444_800_000  # 2100-01-01, far beyond 32-bit integers
    assert take(engine, far)
    release(engine, far, far)
    assert not take(engine, far + 1)


# --- Races: contenders hit the claim at the same instant, many rounds -------

ROUNDS = 50
THREADS = 32
PROCESSES = 8
ROUND_STEP_MS = 2 * HOUR_MS  # each round is due again, whatever the previous winner did


def _contend(url: str, barrier, rounds: int, results: list | None, queue=None) -> None:
    """One contender: its own engine and connection, then one claim per round at the barrier."""
    engine = make_engine(url, pool_size=1)
    engine.connect().close()  # connect before the race, so the race is the claim alone
    try:
        for round_number in range(rounds):
            barrier.wait(timeout=60)
            won = take(engine, T0 + round_number * ROUND_STEP_MS)
            (queue.put if queue is not None else results.append)((round_number, won))
    finally:
        engine.dispose()


def test_32_threads_and_8_processes_claim_exactly_once_per_round(database_url):
    # A fork server that has imported this module once forks contenders in
    # milliseconds; spawning eight interpreters would dominate the test.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    barrier = context.Barrier(THREADS + PROCESSES)
    queue = context.Queue()
    processes = [
        context.Process(target=_contend, args=(database_url, barrier, ROUNDS, None, queue)) for _ in range(PROCESSES)
    ]
    results: list[tuple[int, bool]] = []
    threads = [threading.Thread(target=_contend, args=(database_url, barrier, ROUNDS, results)) for _ in range(THREADS)]
    for worker in [*processes, *threads]:
        worker.start()
    for _ in range(PROCESSES * ROUNDS):
        results.append(queue.get(timeout=120))
    for worker in [*threads, *processes]:
        worker.join(timeout=60)
    assert all(process.exitcode == 0 for process in processes)
    winners = [sum(won for number, won in results if number == r) for r in range(ROUNDS)]
    assert len(results) == (THREADS + PROCESSES) * ROUNDS
    assert winners == [1] * ROUNDS
