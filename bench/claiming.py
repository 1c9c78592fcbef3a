"""What the request after a claiming one meets: the next request on the claiming keep-alive connection.

Each round, ``claiming_rows`` realistic expired rows are put back (the same
rows every round, from a stash), and the claim is set to fall due at a
moment in the round. Every worker is warmed (each learns that moment), then
three requests follow, each a submission and then ``GET /thanks`` on that
submission's fresh keep-alive connection (what a browser following the
redirect does):

1. ordinary (a), at least ``pause`` after the warm-up;
2. ordinary (b), ``pause`` after (a), about half a pause before the claim is due;
3. the claiming one, ``pause`` after (b) (or the few milliseconds more until
   the claim is due): its run starts in the worker's runner.

A round in which (b) came late enough to claim (a very slow (a) on a busy
machine) is done again.
A round ends when its run, and the purge of the search index after it (the
ledger's ``forgotten_at``), have ended: the next round's rows go back, and
its requests are measured, with nothing of the last run still writing.

The figure is the median over rounds of (3)'s follow-up ÷ (2)'s; the A/A
control is (1)'s ÷ (2)'s. Directly and through Caddy (which keeps upstream
connections alive), on both databases. The run gets an hour of time budget
so that it deletes all of each round's rows.

Control: ``inline`` (the run inside the close callback) must fail the figure.
"""

from __future__ import annotations

import time
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime

from bench.backlog import deleted_inquiries
from bench.client import Connection, warm_every_worker
from bench.context import wait_until
from bench.databases import epoch_of, realistic_rows
from bench.report import Control, Figure
from bench.servers import caddy, serve
from bench.stats import Ratio, ratios

KINDS = ("sqlite", "postgresql")
INTERVAL = 1  # seconds: every worker's memory of the last round has passed when the next begins
WARM_MARGIN = 1.5  # a round allows the warm-up this many times as long as the first one took, plus 0.2 s
A_TAKES = 0.02  # seconds (a) takes, about: (b) then comes half a pause before the due moment
SETTLE = 0.3  # seconds to look again for a second run
RUN_SETTINGS = {"cleanup_interval": INTERVAL, "cleanup_time_budget": 3600, "cleanup_lease": 7200}


def run(ctx) -> None:
    """Both databases, direct and through Caddy; then the inline control."""
    control = Control("cleanup run inline, on the connection", "inline")
    for kind in KINDS:
        database = ctx.database(kind, "claiming")
        database.make_stash(realistic_rows(ctx.sizes["claiming_rows"], seed=3))
        for via in ("direct", "Caddy"):
            followup(ctx, database, "shipped", via, ctx.sizes["claiming_rounds"])
        control.figures.append(followup(ctx, database, "inline", "direct", ctx.sizes["control_rounds"]))
        database.drop()
    ctx.report.control(control)


def followup(ctx, database, variant: str, via: str, rounds: int) -> Figure:
    """``rounds`` rounds on a server of ``variant``, reached directly or through Caddy."""
    kind = database.kind
    measured = {"a": [], "b": [], "claiming": []}
    with serve(database.url, ctx.workdir, f"claiming-{variant}-{via}-{kind}", variant, **RUN_SETTINGS) as server:
        with _entry(server.port, via, ctx.workdir) as port:
            started = time.perf_counter()
            warm_every_worker(server.port)
            warm_limit = WARM_MARGIN * (time.perf_counter() - started) + 0.2
            for _ in range(rounds):
                for key, latency in _round(ctx, database, server.port, port, warm_limit).items():
                    measured[key].append(latency)
    ratio = Ratio(ratios(measured["claiming"], measured["b"]), ratios(measured["a"], measured["b"]))
    where = kind if via == "direct" else f"{kind} via Caddy"
    ms = {key: sorted(values)[len(values) // 2] * 1000 for key, values in measured.items()}
    extra = {"variant": variant} if variant != "shipped" else {}
    return ctx.report.add(
        "claiming_followup_ratio",
        ratio.value,
        "≤ 1.2",
        where,
        f"{ctx.sizes['claiming_rows']} rows due; GET /thanks after the claiming submission "
        f"{ms['claiming']:.1f} ms vs after an ordinary one {ms['b']:.1f} ms (medians)",
        samples=f"{rounds} rounds",
        ratio=ratio,
        **extra,
    )


@contextmanager
def _entry(server_port: int, via: str, workdir):
    """The port clients use: the server's, or Caddy's in front of it."""
    with caddy(server_port, workdir) if via == "Caddy" else nullcontext(server_port) as port:
        yield port


def _round(ctx, database, server_port: int, port: int, warm_limit: float) -> dict[str, float]:
    """One round (see the module docstring), again when (b) came late enough to claim."""
    for _ in range(3):
        database.restore_stash()
        runs_before = len(database.cleanup_runs())
        due_at, warm_limit = _warm_until_due(ctx, database, server_port, warm_limit)
        measured, claim_sent = _three_requests(port, ctx.sizes["pause"], due_at)
        # A run of these rows ends within seconds (half a minute on a busy machine); a round whose claiming
        # request found the claim already taken has no run to wait for, and is tried again.
        new = database.wait_for_runs(timeout=120, at_least=runs_before + 1, settle=SETTLE)[runs_before:]
        _wait_until_forgotten(database, new, timeout=120)
        if len(new) == 1 and new[0]["status"] == "ok" and epoch_of(new[0]["started_at"]) >= claim_sent - 0.01:
            return measured
    raise RuntimeError(f"no round with exactly one run, claimed by the claiming request: {new}")


def _wait_until_forgotten(database, runs: list[dict], timeout: float) -> None:
    """Until the purge of the search index after each of ``runs`` that deleted rows, and the checkpoint after
    it, have ended (the ledger's ``forgotten_at``): on SQLite the purge still writes for seconds after the run's
    end, and the next round's rows must go back, and its requests be measured, with none of it under way."""
    deadline = time.monotonic() + timeout
    waiting = {run["id"] for run in runs if deleted_inquiries(run)}
    while waiting and time.monotonic() < deadline:
        time.sleep(0.05)
        waiting = {run["id"] for run in database.cleanup_runs() if run["id"] in waiting and not run["forgotten_at"]}
    if waiting:
        raise RuntimeError(f"the purge after runs {sorted(waiting)} did not end within {timeout:.0f} s")


def _warm_until_due(ctx, database, server_port: int, warm_limit: float) -> tuple[float, float]:
    """Set the claim due after the warm-up and two pauses, and warm every worker; (due moment, limit)."""
    pause = ctx.sizes["pause"]
    for _ in range(3):
        due_at = time.time() + warm_limit + 2.5 * pause
        database.set_last_cleanup(datetime.fromtimestamp(due_at - INTERVAL, UTC))
        warm_every_worker(server_port)
        if time.time() + pause <= _a_moment(due_at, pause):
            return due_at, warm_limit
        wait_until(due_at + 0.05)  # nothing sent: let every worker's memory of this moment pass, then again
        warm_limit *= WARM_MARGIN
    raise RuntimeError(f"the warm-up kept taking longer than {warm_limit:.1f} s")


def _three_requests(port: int, pause: float, due_at: float) -> tuple[dict[str, float], float]:
    """(a) and (b) before ``due_at``, the claiming one after; their follow-ups' seconds, and when it was sent.

    (b) comes about half a pause before the due moment, so the claiming one, a pause after (b), comes
    after it even when (a) or (b) took up to half a pause longer than usual.
    """
    wait_until(_a_moment(due_at, pause))
    measured = {"a": _submit_then_follow(port)}
    time.sleep(pause)
    measured["b"] = _submit_then_follow(port)
    time.sleep(max(pause, due_at + 0.01 - time.time()))
    sent = time.time()
    measured["claiming"] = _submit_then_follow(port)
    return measured, sent


def _a_moment(due_at: float, pause: float) -> float:
    return due_at - 1.5 * pause - A_TAKES


def _submit_then_follow(port: int) -> float:
    """A submission on a new keep-alive connection, then ``GET /thanks`` on it; the GET's seconds."""
    connection = Connection(port)
    try:
        status, _ = connection.submit()
        assert status == 201, f"submission failed with {status}"
        status, latency = connection.request("GET", "/thanks")
        # A follow-up still waiting when the client gives up (the inline control on a busy machine) waited
        # at least that long: a figure, not a broken benchmark. Any other failure is one.
        assert status == 200 or latency >= connection.timeout, f"GET /thanks failed with {status}"
        return latency
    finally:
        connection.close()
