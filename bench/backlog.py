"""A backlog of realistic expired inquiries deleted while visitors keep submitting on a schedule.

Each trial starts from an identical copy of the run's template database
(``backlog_rows`` realistic expired rows, ~5% held, and a tenth as many
recent rows), on a shipped server under open-loop traffic (``rate``
submissions a second, Poisson, latency from each one's scheduled time):
``idle_seconds`` of traffic after a warm-up, then the delete, then half a
second more. Trials alternate, delete-cleanup-cleanup-delete-delete-cleanup:

* ``delete``: one plain ``DELETE`` of the expired rows, by the benchmark;
* ``cleanup``: the claim falls due after the idle phase (shipped interval)
  and the next submission's run does the work in its worker, with an hour of
  time budget, so its rows/s are those of its batch loop.

Figures: rows/s of each cleanup run ÷ the paired delete (A/A: delete ÷
delete); p99 during the runs ÷ p99 idle before them (A/A: idle before a
cleanup ÷ idle before a delete); the longest any scheduled submission
waited during a run; failed submissions. Then the shipped defaults
(10 s budget, 60 s retry): how long the backlog takes to clear, in runs.

At the sizes in ``backlog_forms_sizes`` the alternated trials run again on a
copy whose inquiries are spread in turn over twenty forms, Contact (the
site's 180 days) and nineteen with retentions of their own (105 to 195
days: between the recent rows and the expired ones, so the one DELETE and
the cleanup's twenty cutoffs remove the same rows), reported under
``<kind>@<size>/20 forms`` with the same goals.

Controls on SQLite, each one run on ``control_rows`` with ``control_seconds``
of time budget, which must fail the latency figures: ``one_batch`` (the
whole backlog in one batch, as a run whose batches were not sized by time
would do), once on the one-form backlog and once over twenty forms
(``one_batch_forms``). ``stock_lock`` (live writers on SQLite's stock busy handler) is
served by ``bench.wsgi`` for manual runs but is no control: how long it
stalls writers depends on the machine's load by orders of magnitude, so it
cannot be relied on to fail (docs/benchmarks.md, "Figures behind the code").
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bench.client import OpenLoop, Samples
from bench.context import wait_until
from bench.databases import epoch_of, utcnow
from bench.report import Control, Figure
from bench.servers import serve
from bench.stats import Ratio, cyclic_ratios, ratios
from bench.svg import write_backlog_picture

KINDS = ("sqlite", "postgresql")
ORDER = ("delete", "cleanup", "cleanup", "delete", "delete", "cleanup")
WARM = 1.5  # seconds of traffic before the idle window (each worker learns when the claim is due)
TAIL = 0.5  # seconds of traffic after the delete
INTERVAL = 3600  # the shipped CLEANUP_INTERVAL
# The nineteen forms after Contact (the site's 180 days): each its own retention, all of them between the
# newest expired row (200 days) and the oldest recent one (100), so the benchmark's one DELETE at 180 days
# removes the very rows the cleanup's twenty cutoffs do.
FORM_DAYS = tuple(range(105, 200, 5))
# name: (label, served variant, settings). A batch as big as the backlog is one long write lock.
CONTROLS = {
    "the whole backlog in one batch (batches not sized by time)": ("one_batch", "shipped",
                                                                  {"cleanup_batch_size": 100_000_000}),
}


@dataclass
class Trial:
    """One delete under traffic: what was scheduled, when the delete ran, how many rows it removed."""

    method: str
    samples: Samples
    begun: float  # epoch seconds: the traffic started
    started: float
    finished: float
    rows: int

    @property
    def idle(self) -> Samples:
        return self.samples.between(self.begun + WARM, self.started)

    @property
    def during(self) -> Samples:
        return self.samples.between(self.started, self.finished)

    @property
    def rate(self) -> float:
        return self.rows / (self.finished - self.started)


def run(ctx) -> None:
    """At each backlog size, alternated trials and the shipped defaults on both databases; the control; the
    picture (of the largest size)."""
    pictures = {}
    sizes = ctx.sizes["backlog_sizes"]
    for rows in sizes:
        for kind in KINDS:
            template = ctx.template(kind, rows)
            label = sized(kind, rows)
            trials = [_trial(ctx, template, method, f"{method}{i}") for i, method in enumerate(_order(ctx))]
            report_trials(ctx, label, trials, rows)
            cleanups = sorted((t for t in trials if t.method == "cleanup"), key=lambda t: t.rate)
            pictures[kind] = cleanups[len(cleanups) // 2]
            shipped_defaults(ctx, template, label)
            if rows in ctx.sizes["backlog_forms_sizes"]:
                over_forms(ctx, template, label, rows)
    for name, (label, variant, settings) in CONTROLS.items():
        template = ctx.template("sqlite", ctx.sizes["control_rows"])
        _control(ctx, Control(name, label), template, variant, settings)
        with spread_over_forms(template) as database:
            _control(ctx, Control(f"{name}, over twenty forms", f"{label}_forms"), database, variant, settings)
    if ctx.write_docs:
        ctx.report.picture = write_backlog_picture(pictures, sizes[-1], WARM)


def _control(ctx, control: Control, template, variant: str, settings: dict) -> None:
    """One cleanup run of the broken ``variant`` on a copy of ``template``: must fail the latency figures."""
    trial = _trial(ctx, template, "cleanup", control.variant, variant=variant, budget=ctx.sizes["control_seconds"],
                   **settings)
    control.figures += report_latency(ctx, "sqlite", [trial], [], variant=control.variant)
    ctx.report.control(control)


def sized(kind: str, rows: int) -> str:
    """A figure's database column with the backlog's size: ``sqlite@50k``."""
    return f"{kind}@{rows // 1000}k" if rows % 1000 == 0 else f"{kind}@{rows}"


def over_forms(ctx, template, label: str, rows: int) -> None:
    """The alternated trials again, on the backlog spread over twenty forms with retentions of their own,
    reported as ``<label>/20 forms``."""
    with spread_over_forms(template) as database:
        trials = [_trial(ctx, database, method, f"forms_{method}{i}") for i, method in enumerate(_order(ctx))]
        report_trials(ctx, f"{label}/{len(FORM_DAYS) + 1} forms", trials, rows)


@contextmanager
def spread_over_forms(template):
    """A copy of ``template`` whose inquiries are spread in turn over Contact and the ``FORM_DAYS`` forms;
    dropped afterwards."""
    database = template.copy(f"backlog_forms_{template.kind}")
    try:
        forms = database.add_forms({"contact": None, **{f"form-{days}": days for days in FORM_DAYS}})
        database.spread_over_forms(sorted(forms.values()))
        yield database
    finally:
        database.drop()


def _order(ctx) -> list[str]:
    trials = ctx.sizes["backlog_trials"]
    return [ORDER[i % len(ORDER)] for i in range(2 * trials)]


def _trial(ctx, template, method: str, name: str, variant: str = "shipped", budget: float = 3600,
           **extra) -> Trial:
    """One trial on a fresh copy of ``template``; the copy is dropped afterwards. ``extra``: more settings."""
    database = template.copy(f"trial_{name.replace('-', '_')}")
    try:
        settings = {"cleanup_time_budget": budget, "cleanup_lease": max(7200, 2 * budget), **extra}
        with serve(database.url, ctx.workdir, f"backlog-{name}-{database.kind}", variant, **settings) as server:
            begun = time.time()
            due_at = begun + WARM + ctx.sizes["idle_seconds"]
            # A delete trial keeps the claim an hour away; a cleanup trial's falls due after the idle phase.
            last = utcnow() if method == "delete" else datetime.fromtimestamp(due_at - INTERVAL, UTC)
            database.set_last_cleanup(last)
            with OpenLoop(server.port, ctx.sizes["rate"]) as traffic:  # the same schedule every trial
                started, finished, rows = _delete(database, method, due_at)
                time.sleep(TAIL)
    finally:
        database.drop()
    return Trial(method, traffic.collected(), begun, started, finished, rows)


def _delete(database, method: str, due_at: float) -> tuple[float, float, int]:
    """(started, finished, rows): the benchmark's DELETE at ``due_at``, or the cleanup run the traffic starts."""
    if method == "delete":
        wait_until(due_at)
        started = time.time()
        rows, _seconds = database.plain_delete(utcnow() - timedelta(days=180))
        return started, time.time(), rows
    runs = database.wait_for_runs(timeout=3600)
    run = runs[0]
    assert run["status"] in ("ok", "partial"), f"the run ended {run['status']}: {run.get('error')}"
    return epoch_of(run["started_at"]), epoch_of(run["finished_at"]), deleted_inquiries(run)


def report_trials(ctx, kind: str, trials: list[Trial], rows: int) -> None:
    """The rows/s ratio and the latency figures of one database's alternated trials."""
    deletes = [t for t in trials if t.method == "delete"]
    cleanups = [t for t in trials if t.method == "cleanup"]
    delete_rates, cleanup_rates = [t.rate for t in deletes], [t.rate for t in cleanups]
    ratio = Ratio(ratios(cleanup_rates, delete_rates), cyclic_ratios(delete_rates))
    order = "".join("D" if t.method == "delete" else "C" for t in trials)
    ctx.report.add(
        "backlog_rows_per_s_ratio", ratio.value, "≥ 0.5", kind,
        f"{rows} realistic expired rows; cleanup runs {_list(cleanup_rates)} rows/s vs one"
        f" DELETE {_list(delete_rates)} rows/s (whose longest wait was "
        f"{max(t.during.longest() for t in deletes) * 1000:.0f} ms)",
        samples=f"{len(cleanups)} + {len(deletes)} trials, order {order}", ratio=ratio)
    report_latency(ctx, kind, cleanups, deletes)


def report_latency(ctx, kind: str, cleanups: list[Trial], deletes: list[Trial], variant: str = "") -> list[Figure]:
    """p99 during ÷ idle, longest stall, failed submissions, over ``cleanups`` (A/A against ``deletes``)."""
    during, idle = _pooled(t.during for t in cleanups), _pooled(t.idle for t in cleanups)
    per_trial = [t.during.percentile(0.99) / t.idle.percentile(0.99) for t in cleanups]
    control = ratios([t.idle.percentile(0.99) for t in cleanups], [t.idle.percentile(0.99) for t in deletes])
    extra = {"variant": variant} if variant else {}
    report = ctx.report
    figures = [
        report.add("backlog_p99_ratio", during.percentile(0.99) / idle.percentile(0.99), "≤ 3", kind,
                   f"p99 {during.percentile(0.99) * 1000:.1f} ms during the runs vs "
                   f"{idle.percentile(0.99) * 1000:.1f} ms idle before them; open loop, {ctx.sizes['rate']:.0f}/s",
                   samples=f"{len(during.latencies)} / {len(idle.latencies)} requests, "
                   f"{during.above(0.99)} / {idle.above(0.99)} above p99",
                   ratio=Ratio(per_trial, control), tail=min(during.above(0.99), idle.above(0.99)), **extra),
        report.add("backlog_longest_stall_ms", during.longest() * 1000, "≤ 250", kind,
                   f"per run {_list([t.during.longest() * 1000 for t in cleanups])} ms; idle before: "
                   f"{idle.longest() * 1000:.0f} ms", samples=f"{len(during.latencies)} requests", **extra),
        report.add("backlog_failed_submissions", sum(t.samples.failed for t in cleanups), "= 0", kind,
                   samples=f"{sum(len(t.samples.latencies) for t in cleanups)} requests", **extra),
    ]
    return figures


def shipped_defaults(ctx, template, kind: str) -> None:
    """How long the backlog takes to clear with the shipped time budget and retry, under traffic."""
    database = template.copy("trial_defaults")
    limit = ctx.sizes["defaults_limit_seconds"]
    try:
        with serve(database.url, ctx.workdir, f"backlog-defaults-{database.kind}") as server:
            database.set_last_cleanup(datetime.fromtimestamp(time.time() + WARM - INTERVAL, UTC))
            with OpenLoop(server.port, ctx.sizes["rate"], seed=11, limit_seconds=limit + 60):
                runs = _runs_until_clear(database, time.monotonic() + limit)
    finally:
        database.drop()
    deleted = sum(deleted_inquiries(r) for r in runs)
    cleared = runs[-1]["status"] == "ok"
    elapsed = epoch_of(runs[-1]["finished_at"]) - epoch_of(runs[0]["started_at"])
    note = f"{len(runs)} runs deleted {deleted} rows in {elapsed:.0f} s"
    if not cleared:
        note += (f"; not cleared within {limit:.0f} s ({runs[-1]['remaining']} left), "
                 f"at this pace about {elapsed * (deleted + runs[-1]['remaining']) / max(deleted, 1):.0f} s")
    ctx.report.add("backlog_defaults_clear_s", elapsed if cleared else None, "", kind,
                   f"shipped CLEANUP_TIME_BUDGET and CLEANUP_BACKLOG_RETRY; {note}", samples=f"{len(runs)} runs")


def _runs_until_clear(database, deadline: float) -> list[dict]:
    """The ledger once a run ends with nothing left, or the first time no run is running after ``deadline``."""
    while True:
        runs = database.cleanup_runs()
        settled = bool(runs) and runs[-1]["status"] != "running"
        if settled and (runs[-1]["status"] == "ok" or time.monotonic() >= deadline):
            return runs
        if time.monotonic() > deadline + 600:
            raise RuntimeError(f"the shipped defaults' runs did not settle: {runs[-1:]}")
        time.sleep(0.5)


def _pooled(parts) -> Samples:
    total = Samples()
    for samples in parts:
        total.extend(samples)
    return total


def _list(values: list[float]) -> str:
    return ", ".join(f"{v:.0f}" for v in values)


def deleted_inquiries(run: dict) -> int:
    """How many inquiries a ledger row says its run deleted."""
    deleted = run["deleted"]
    counts = json.loads(deleted) if isinstance(deleted, str) else deleted
    return int(counts.get("inquiries", 0))
