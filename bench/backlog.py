"""A backlog of realistic expired inquiries deleted while visitors keep submitting on a schedule.

Each trial starts from an identical copy of the run's template database
(``backlog_rows`` realistic expired rows, ~5% held, and a tenth as many
recent rows), on a shipped server under open-loop traffic (each of
``rates`` submissions a second in turn, Poisson, latency from each one's
scheduled time): an idle phase after a warm-up (``idle_requests``
submissions' worth, at least ``idle_seconds``), then the delete, then half
a second more. Before each trial the benchmark waits, up to
``calm_seconds``, for a second in which the CPUs were busy less than
``calm_busy`` of the time, and records the 1-minute load average at the
start and the end of the trial.
Trials alternate, delete-cleanup-cleanup-delete-delete-cleanup. On
PostgreSQL, in the controls, and below ``p99_rows`` the idle phase is
``idle_seconds`` alone: PostgreSQL's runs last seconds, a SQLite run of
50,000 rows at 40/s holds fewer than 20 submissions above its p99, and a
control only has to miss its goal by far, so no longer idle phase would
give any of them a p99 verdict:

* ``delete``: one plain ``DELETE`` of the expired rows, by the benchmark;
* ``cleanup``: the claim falls due after the idle phase (shipped interval)
  and the next submission's run does the work in its worker, with an hour of
  time budget, so its rows/s are those of its batch loop.

A cleanup run's window runs from its claim (the ledger's ``started_at``)
until the purge of the search index and the checkpoint after it have
ended (``forgotten_at``): the traffic goes on the whole time. Figures:
rows/s of each cleanup run (until ``finished_at``) ÷ the paired delete
(A/A: delete ÷ delete); p99 during the window ÷ p99 idle before it (A/A:
idle before a cleanup ÷ idle before a delete); the longest any scheduled
submission waited in the window, and in its after-run part alone;
failed submissions; from every worker's log of its write transactions
(``bench.txlog``), the big ones (over 1,000 rows changed or 100 ms) held
in a visitor's transaction, the longest single cleanup statement and the
longest visitor write transaction, and at the end how each grows from the
smallest size to the largest. Then, at the smallest size only, the
shipped defaults (10 s budget, 60 s retry): how long the backlog takes to
clear, in runs.

At the sizes in ``backlog_forms_sizes`` the alternated trials run again on a
copy whose inquiries are spread in turn over twenty forms, Contact (the
site's 180 days) and nineteen with retentions of their own (105 to 195
days: between the recent rows and the expired ones, so the one DELETE and
the cleanup's twenty cutoffs remove the same rows), and whose every inquiry
has three answers in its thread (``inbound_messages``, deleted with it),
reported under ``<kind>@<size>/20 forms`` with the same goals: the claim and
the batches keep their figures with twenty cutoffs and when each inquiry
takes its conversation along.

Controls on SQLite, each one cleanup run at 40/s (the last three at 100/s), which must be caught:
``one_batch`` (the whole backlog in one batch, as a run whose batches
were not sized by time would do; ``control_rows``, ``control_seconds`` of
budget), caught by the latency figures; ``crisis_default`` (FTS5's crisis
merge at its default during the run, ``control_rows``), caught by the big
writes (merges) in visitors' transactions; ``purge_unpaused`` (the index purge,
or its rebuild, without its pauses and checkpoints, ``control_rows``, at 100
submissions a second), caught by the big writes in visitors' transactions and
the stalls; ``fixed_pauses`` (the cleanup's pauses a fixed share of
each write transaction, learning nothing from its waits for the lock:
``app.core.pacing``; ``control_rows``, at 100 submissions a second),
caught by the latency figures. (``files_in`` is ``bench.backlog_files``'s.) ``stock_lock``
(live writers on SQLite's stock busy handler) is served by ``bench.wsgi`` for manual runs but is no control: with 30 ms
batches it stalled writers 6.6 s on a loaded machine and 66 ms on a quiet
one, so it cannot be relied on to fail.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bench import txlog
from bench.client import OpenLoop, Samples
from bench.context import busy_share, wait_until
from bench.databases import epoch_of, utcnow
from bench.report import Control, Figure, shown
from bench.servers import serve
from bench.stats import Ratio, cyclic_ratios, ratios
from bench.svg import write_backlog_picture

KINDS = ("sqlite", "postgresql")
FORGET_WAIT = 3600  # seconds a trial waits for a run's purge and checkpoint after it
ORDER = ("delete", "cleanup", "cleanup", "delete", "delete", "cleanup")
WARM = 1.5  # seconds of traffic before the idle window (each worker learns when the claim is due)
TAIL = 0.5  # seconds of traffic after the delete
INTERVAL = 3600  # the shipped CLEANUP_INTERVAL
# The nineteen forms after Contact (the site's 180 days): each its own retention, all of them between the
# newest expired row (200 days) and the oldest recent one (100), so the benchmark's one DELETE at 180 days
# removes the very rows the cleanup's twenty cutoffs do.
FORM_DAYS = tuple(range(105, 200, 5))
# name: (label, served variant, template rows key, settings, budget key, rate). A batch as big as the backlog is one
# long write lock; FTS5's crisis merge at its default lands in visitors' inserts; a purge or rebuild without pauses
# in their waits (the benchmark's runs delete more than they keep, so on SQLite the index is rebuilt: without its
# pauses, with FTS5's automerge on for the new index, at 50k and 40/s 0-2 visitors' merges and waits of 111-136 ms,
# not always caught; at 100/s 4 visitors' merges, the longest wait 260 ms); pauses
# that learn nothing from the waits for the lock leave a queue of live writers behind every step at 100/s.
# Since each batch merges a crowded index level down (app.inquiries.merging.IndexMerging), at 40/s a crisis merge landed
# in the cleanup's own transactions (0 visitors' merges, longest wait 201 ms): at 100/s, 20, one of 18,297 rows.
CONTROLS = {
    "the whole backlog in one batch (batches not sized by time)": (
        "one_batch",
        "shipped",
        "control_rows",
        {"cleanup_batch_size": 100_000_000},
        "control_seconds",
        40.0,
    ),
    "FTS5's crisis merge at its default during a run": (
        "crisis_default",
        "crisis_default",
        "control_rows",
        {},
        None,
        100.0,
    ),
    "the index's purge, or its rebuild, after a run without pauses or checkpoints": (
        "purge_unpaused",
        "purge_unpaused",
        "control_rows",
        {},
        None,
        100.0,
    ),
    "the cleanup's pauses a fixed share of each write, learning nothing from its waits for the lock": (
        "fixed_pauses",
        "fixed_pauses",
        "control_rows",
        {},
        None,
        100.0,
    ),
}


@dataclass
class Trial:
    """One delete under traffic: what was scheduled, when the delete ran and ended, how many rows it removed.

    For a cleanup run ``finished`` is the ledger's ``finished_at`` (its batches' end) and ``forgotten``
    its ``forgotten_at`` (the purge and the checkpoint after it ended); for a delete both are its end.
    """

    method: str
    samples: Samples
    begun: float  # epoch seconds: the traffic started
    started: float
    finished: float
    rows: int
    forgotten: float = 0.0
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average at the trial's start and end
    writes: txlog.Writes | None = None
    idle_writes: txlog.Writes | None = None  # the idle phase's

    @property
    def end(self) -> float:
        return max(self.finished, self.forgotten)

    @property
    def idle(self) -> Samples:
        # Only requests over before the delete began: one still waiting then waited for the delete.
        return self.samples.between(self.begun + WARM, self.started).ending(before=self.started)

    @property
    def during(self) -> Samples:
        # Every request due before the window's end and still running when it began (queued behind the claim).
        return self.samples.between(self.begun + WARM, self.end).ending(after=self.started)

    @property
    def after_run(self) -> Samples:
        return self.samples.between(self.finished, self.end)

    @property
    def rate(self) -> float:
        return self.rows / (self.finished - self.started)


def run(ctx) -> None:
    """At each backlog size and rate, alternated trials on both databases; at the smallest size the shipped
    defaults and the twenty forms; the controls; how the figures grow; the picture (of the largest size)."""
    pictures, growth = {}, Growth()
    sizes = ctx.sizes["backlog_sizes"]
    for rows in sizes:
        for kind in KINDS:
            template = ctx.template(kind, rows)
            for rate in ctx.sizes["rates"]:
                label, begun = labelled(kind, rows, rate), time.monotonic()
                trials = alternated(ctx, template, "", rate, rows)
                growth.add(kind, rate, rows, report_trials(ctx, label, trials, rows))
                print(f"# {label}: {len(trials)} trials in {time.monotonic() - begun:.0f} s", flush=True)
                if rate == ctx.sizes["rates"][0]:
                    cleanups = sorted((t for t in trials if t.method == "cleanup"), key=lambda t: t.rate)
                    pictures[kind] = cleanups[len(cleanups) // 2]
            variants(ctx, template, kind, rows)
    if ctx.sizes["backlog_controls"]:
        for name, (label, variant, rows_key, settings, budget_key, rate) in CONTROLS.items():
            template = ctx.template("sqlite", ctx.sizes[rows_key])
            budget = ctx.sizes[budget_key] if budget_key else 3600
            _control(ctx, Control(name, label), template, variant, (budget, rate), settings)
    growth.report(ctx)
    if ctx.write_docs:
        ctx.report.picture = write_backlog_picture(pictures, sizes[-1], WARM)


def variants(ctx, template, kind: str, rows: int) -> None:
    """At the sizes the mode names for each: the shipped defaults' clearing, twenty forms with threads."""
    if rows in ctx.sizes["backlog_defaults_sizes"]:
        shipped_defaults(ctx, template, sized(kind, rows))
    if rows in ctx.sizes["backlog_forms_sizes"]:
        over_forms(ctx, template, sized(kind, rows), rows)


# Controls whose cost grows with the backlog: at the quick sizes (a few thousand rows) nothing separates them.
QUICK_UNJUDGED = ("crisis_default", "purge_unpaused", "files_in", "fixed_pauses")


def _control(ctx, control: Control, template, variant: str, paced: tuple[float, float], settings: dict) -> None:
    """One cleanup run of the broken ``variant`` on a copy of ``template`` with ``paced``'s time budget and
    submissions a second: must fail a latency or write figure."""
    budget, rate = paced
    extra = {"variant": variant, "budget": budget, "rate": rate, "short_idle": True}
    trial = _trial(ctx, template, "cleanup", control.variant, **extra, **settings)
    control.figures += report_latency(ctx, "sqlite", [trial], [], variant=control.variant)
    judge(ctx, control)


def judge(ctx, control: Control) -> None:
    """Record ``control``; in quick mode, one whose cost grows with the backlog is only printed."""
    if ctx.quick and control.variant in QUICK_UNJUDGED:
        print(f"# control {control.name}: not judged in quick mode (judged at the full sizes)", flush=True)
    else:
        ctx.report.control(control)


def sized(kind: str, rows: int) -> str:
    """A figure's database column with the backlog's size: ``sqlite@50k``."""
    return f"{kind}@{rows // 1000}k" if rows % 1000 == 0 else f"{kind}@{rows}"


def labelled(kind: str, rows: int, rate: float) -> str:
    """``sqlite@50k`` at 40 submissions a second, ``sqlite@50k, 100/s`` at another rate."""
    return sized(kind, rows) if rate == 40 else f"{sized(kind, rows)}, {rate:.0f}/s"


THREAD_MESSAGES = 3  # answers in each inquiry's thread in the twenty forms' variant


def over_forms(ctx, template, label: str, rows: int) -> None:
    """The alternated trials again, on the backlog spread over twenty forms with retentions of their own and
    every inquiry with ``THREAD_MESSAGES`` answers in its thread (deleted with it by ``ON DELETE CASCADE``),
    reported as ``<label>/20 forms``: one variant for both, each a cost the batches must keep within their
    figures (twenty cutoffs, and three more rows per inquiry)."""
    with spread_over_forms(template) as database:
        database.add_threads(THREAD_MESSAGES)
        trials = alternated(ctx, database, "forms_", ctx.sizes["rate"], rows)
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


def alternated(ctx, template, prefix: str, rate: float, rows: int) -> list[Trial]:
    """The alternated delete and cleanup trials at ``rate`` on ``template``'s ``rows`` expired rows; below
    ``p99_rows`` with the short idle phase, as no p99 could be judged there."""
    short = rows < ctx.sizes["p99_rows"]
    return [
        _trial(ctx, template, method, f"{prefix}{method}{i}", rate=rate, short_idle=short)
        for i, method in enumerate(_order(ctx))
    ]


def _order(ctx) -> list[str]:
    trials = ctx.sizes["backlog_trials"]
    return [ORDER[i % len(ORDER)] for i in range(2 * trials)]


def _trial(
    ctx,
    template,
    method: str,
    name: str,
    variant: str = "shipped",
    budget: float = 3600,
    rate: float = 40.0,
    short_idle: bool = False,
    **extra,
) -> Trial:
    """One trial on a fresh copy of ``template``; the copy is dropped afterwards. ``extra``: more settings;
    ``short_idle``: the idle phase ``idle_seconds`` alone (a control's)."""
    database = template.copy(f"trial_{name.replace('-', '_')}")
    log = ctx.workdir / f"writes-{name}-{database.kind}-{rate:.0f}-{time.monotonic_ns()}"
    log.mkdir()
    try:
        settings = {"cleanup_time_budget": budget, "cleanup_lease": max(7200, 2 * budget), **extra}
        load = wait_for_calm(ctx)
        with serve(
            database.url, ctx.workdir, f"backlog-{name}-{database.kind}", variant, log_writes=log, **settings
        ) as server:
            begun = time.time()
            due_at = begun + WARM + idle_seconds(ctx, rate, database.kind, short_idle)
            # A delete trial keeps the claim an hour away; a cleanup trial's falls due after the idle phase.
            last = utcnow() if method == "delete" else datetime.fromtimestamp(due_at - INTERVAL, UTC)
            database.set_last_cleanup(last)
            with OpenLoop(server.port, rate) as traffic:  # the same schedule every trial
                started, finished, forgotten, rows = _delete(database, method, due_at)
                time.sleep(TAIL)
    finally:
        database.drop()
    by_time = database.kind == "sqlite"
    writes = txlog.read(log, started, max(finished, forgotten), by_time=by_time)
    idle_writes = txlog.read(log, begun + WARM, started, by_time=by_time)
    loads = (load, os.getloadavg()[0])
    return Trial(method, traffic.collected(), begun, started, finished, rows, forgotten, loads, writes, idle_writes)


def idle_seconds(ctx, rate: float, kind: str = "sqlite", short: bool = False) -> float:
    """The idle phase: at least ``idle_seconds``; on SQLite, unless ``short``, as long as ``idle_requests``
    submissions take at ``rate``. The trials' idle phases are pooled (``report_latency``), so two of them hold 20
    above their p99; PostgreSQL's windows, a few seconds long, never hold 20 above theirs, nor does one control
    run's idle phase: a longer one would judge nothing."""
    if short or kind != "sqlite":
        return ctx.sizes["idle_seconds"]
    return max(ctx.sizes["idle_seconds"], ctx.sizes["idle_requests"] / rate)


def wait_for_calm(ctx) -> float:
    """Wait, up to ``calm_seconds``, for a second in which the CPUs were busy less than ``calm_busy`` of the
    time; return the 1-minute load average, which the trial records.

    Judged on the last second, not on the load average: a minute's average still counts the trial before,
    whose processes have ended (after a trial at 100/s it stays above 3 for most of a minute on an idle
    machine), while other work running now shows in the second.
    """
    deadline = time.monotonic() + ctx.sizes["calm_seconds"]
    while time.monotonic() < deadline and busy_share(1.0) >= ctx.sizes["calm_busy"]:
        pass
    return os.getloadavg()[0]


def _delete(database, method: str, due_at: float) -> tuple[float, float, float, int]:
    """(started, finished, forgotten, rows): the benchmark's DELETE at ``due_at``, or the cleanup run the traffic
    starts, until the purge and the checkpoint after it have ended."""
    if method == "delete":
        wait_until(due_at)
        started = time.time()
        rows, _seconds = database.plain_delete(utcnow() - timedelta(days=180))
        return started, time.time(), time.time(), rows
    runs = database.wait_for_runs(timeout=3600)
    deadline = time.monotonic() + FORGET_WAIT
    while runs[0]["forgotten_at"] is None and time.monotonic() < deadline:
        time.sleep(0.05)
        runs = database.cleanup_runs()
    run = runs[0]
    assert run["status"] in ("ok", "partial"), f"the run ended {run['status']}: {run.get('error')}"
    assert run["forgotten_at"] is not None, "the run's purge did not end"
    return (
        epoch_of(run["started_at"]),
        epoch_of(run["finished_at"]),
        epoch_of(run["forgotten_at"]),
        deleted_inquiries(run),
    )


def report_trials(ctx, kind: str, trials: list[Trial], rows: int) -> list:
    """The rows/s ratio and the latency and write figures of one database's alternated trials."""
    deletes = [t for t in trials if t.method == "delete"]
    cleanups = [t for t in trials if t.method == "cleanup"]
    delete_rates, cleanup_rates = [t.rate for t in deletes], [t.rate for t in cleanups]
    paired = [delete_rates[i % len(delete_rates)] for i in range(len(cleanup_rates))]  # SQLite's extra runs too
    ratio = Ratio(ratios(cleanup_rates, paired), cyclic_ratios(delete_rates))
    order = "".join("D" if t.method == "delete" else "C" for t in trials)
    loads = ", ".join(f"{t.load[0]:.1f}→{t.load[1]:.1f}" for t in trials)
    figure = ctx.report.add(
        "backlog_rows_per_s_ratio",
        ratio.value,
        "≥ 0.5",
        kind,
        f"{rows} realistic expired rows; cleanup runs {_list(cleanup_rates)} rows/s vs one"
        f" DELETE {_list(delete_rates)} rows/s (whose longest wait was "
        f"{max(t.during.longest() for t in deletes) * 1000:.0f} ms); load average per trial {loads}",
        samples=f"{len(cleanups)} + {len(deletes)} trials, order {order}",
        ratio=ratio,
    )
    shares = [_lock_share(ctx, kind, trials)] if kind.startswith("sqlite") else []
    return [figure, *shares, *report_latency(ctx, kind, cleanups, deletes)]


def _lock_share(ctx, kind: str, trials: list[Trial]) -> Figure:
    """SQLite: the share of the idle phases visitors' write transactions held the one write lock. A cleanup
    that lets them in has at most the rest of it, the one DELETE all of it: the rows/s ratio's ceiling."""
    idle_seconds = sum(t.started - t.begun - WARM for t in trials)
    held = sum(t.idle_writes.held.get("visitor", 0.0) for t in trials if t.idle_writes) / 1000
    count = sum(t.idle_writes.counted.get("visitor", 0) for t in trials if t.idle_writes)
    cleanups = [t for t in trials if t.method == "cleanup"]
    during = sum(t.writes.held.get("visitor", 0.0) for t in cleanups if t.writes) / 1000
    window = sum(t.end - t.started for t in cleanups)
    return ctx.report.add(
        "backlog_visitor_lock_share",
        held / max(idle_seconds, 0.001),
        "",
        kind,
        f"visitors' write transactions held SQLite's write lock this share of the idle phases ({count}, "
        f"{held * 1000 / max(count, 1):.1f} ms each): a cleanup that lets them in has at most the rest of it, "
        f"the one DELETE all of it; during the cleanups' windows {during / max(window, 0.001):.2f}",
        samples=f"{idle_seconds:.0f} s idle",
    )


def report_latency(ctx, kind: str, cleanups: list[Trial], deletes: list[Trial], variant: str = "") -> list[Figure]:
    """p99 during ÷ idle, longest stalls, failed submissions, big writes and the longest ones, over ``cleanups``
    (A/A against ``deletes``)."""
    # The idle baseline pools every trial's idle phase, the deletes' too: all of them are the same traffic on the
    # same backlog before anything is deleted, and one trial's 1,000 requests hold only 10 above their p99.
    during, idle = _pooled(t.during for t in cleanups), _pooled(t.idle for t in [*cleanups, *deletes])
    after = _pooled(t.after_run for t in cleanups)
    per_trial = [t.during.percentile(0.99) / t.idle.percentile(0.99) for t in cleanups]
    control = ratios([t.idle.percentile(0.99) for t in cleanups], [t.idle.percentile(0.99) for t in deletes])
    extra = {"variant": variant} if variant else {}
    report = ctx.report
    window = (
        f"{_list([t.finished - t.started for t in cleanups])} s of batches, then "
        f"{_list([t.forgotten - t.finished for t in cleanups])} s of purge and checkpoint"
    )
    return [
        report.add(
            "backlog_p99_ratio",
            during.percentile(0.99) / idle.percentile(0.99),
            "≤ 3",
            kind,
            f"p99 {during.percentile(0.99) * 1000:.1f} ms from the claim until the purge and checkpoint "
            f"ended ({window}) vs {idle.percentile(0.99) * 1000:.1f} ms idle before; open loop, "
            f"{len(idle.latencies) / max(sum(t.started - t.begun - WARM for t in [*cleanups, *deletes]), 1):.0f}/s",
            samples=f"{len(during.latencies)} / {len(idle.latencies)} requests, "
            f"{during.above(0.99)} / {idle.above(0.99)} above p99",
            ratio=Ratio(per_trial, control),
            tail=min(during.above(0.99), idle.above(0.99)),
            **extra,
        ),
        report.add(
            "backlog_longest_stall_ms",
            during.longest() * 1000,
            "≤ 250",
            kind,
            f"per run {_list([t.during.longest() * 1000 for t in cleanups])} ms; idle before: "
            f"{idle.longest() * 1000:.0f} ms",
            samples=f"{len(during.latencies)} requests",
            **extra,
        ),
        report.add(
            "backlog_after_run_longest_stall_ms",
            after.longest() * 1000,
            "≤ 250",
            kind,
            f"from finished_at to forgotten_at (purge, checkpoint): p99 {after.percentile(0.99) * 1000:.0f} ms",
            samples=f"{len(after.latencies)} requests",
            **extra,
        ),
        report.add(
            "backlog_failed_submissions",
            sum(t.samples.failed for t in cleanups),
            "= 0",
            kind,
            samples=f"{sum(len(t.samples.latencies) for t in cleanups)} requests",
            **extra,
        ),
        *_write_figures(report, kind, cleanups, extra),
    ]


def _write_figures(report, kind: str, cleanups: list[Trial], extra: dict) -> list[Figure]:
    """From the servers' logs of write transactions (``bench.txlog``), over the cleanups' windows."""
    writes = [t.writes for t in cleanups if t.writes is not None]
    statement = max((w.longest_cleanup_statement for w in writes), default=(0.0, ""))
    upkeep = sum(w.upkeep for w in writes)
    idle = [t.idle_writes for t in cleanups if t.idle_writes is not None]
    return [
        report.add(
            "backlog_visitor_merges",
            sum(w.merges_in("visitor") for w in writes),
            "= 0",
            kind,
            f"visitors' write transactions of more than {txlog.BIG_CHANGES} rows (a submission makes 11-17: "
            "a merge of the search index) while the run's merging was in force; "
            f"{upkeep} more at FTS5's defaults (its automerge's ordinary steps, before the run turned it off or "
            f"after the purge turned it back on; {sum(w.upkeep for w in idle)} in the idle phases before); "
            "per run: " + " | ".join(w.describe() for w in writes),
            samples=f"{sum(w.transactions for w in writes)} write transactions",
            **extra,
        ),
        report.add(
            "backlog_longest_cleanup_statement_ms",
            statement[0],
            "",
            kind,
            f"{statement[1]} (its time includes any wait for the lock)",
            **extra,
        ),
        report.add(
            "backlog_longest_visitor_write_ms",
            max((w.longest_visitor_write for w in writes), default=0.0),
            "",
            kind,
            "a submission's write transaction, write lock held until its commit ended",
            **extra,
        ),
    ]


class Growth:
    """Per database and rate, each backlog figure at each size: how it grows from the smallest to the largest."""

    NAMES = (
        "backlog_p99_ratio",
        "backlog_longest_stall_ms",
        "backlog_after_run_longest_stall_ms",
        "backlog_rows_per_s_ratio",
        "backlog_visitor_lock_share",
        "backlog_failed_submissions",
        "backlog_visitor_merges",
        "backlog_longest_cleanup_statement_ms",
        "backlog_longest_visitor_write_ms",
    )
    JUDGED = ("backlog_longest_cleanup_statement_ms", "backlog_longest_visitor_write_ms")  # goal: ≤ 1.5×

    def __init__(self):
        self.values: dict[tuple[str, str, float], dict[int, float]] = {}

    def add(self, kind: str, rate: float, rows: int, figures: list[Figure]) -> None:
        for figure in figures:
            if figure.name in self.NAMES:
                self.values.setdefault((figure.name, kind, rate), {})[rows] = figure.value

    def report(self, ctx) -> None:
        """A growth figure (largest ÷ smallest, ≤ 1.5) for the longest statement and insert; the table."""
        sizes = ctx.sizes["backlog_sizes"]
        lines = [
            "| figure | database | rate | "
            + " | ".join(sized("", rows)[1:] for rows in sizes)
            + " | largest ÷ smallest |",
            "| --- | --- | --- |" + " --- |" * (len(sizes) + 1),
        ]
        for (name, kind, rate), by_size in self.values.items():
            first, last = by_size.get(sizes[0]), by_size.get(sizes[-1])
            grown = last / first if first and last is not None else None
            lines.append(
                f"| {name} | {kind} | {rate:.0f}/s | "
                + " | ".join(shown(by_size.get(rows)) for rows in sizes)
                + f" | {shown(grown)} |"
            )
            if name in self.JUDGED and len(sizes) > 1:
                ctx.report.add(
                    name.replace("_ms", "_growth"),
                    grown,
                    "≤ 1.5",
                    f"{kind}, {rate:.0f}/s",
                    f"{sized(kind, sizes[-1])} ÷ {sized(kind, sizes[0])}: {shown(last)} ÷ {shown(first)} ms",
                )
        ctx.report.sections.append(("How the backlog figures grow with its size (one form)", lines))


def shipped_defaults(ctx, template, kind: str) -> None:
    """How long the backlog takes to clear with the shipped time budget and retry, under traffic."""
    database = template.copy("trial_defaults")
    limit = ctx.sizes["defaults_limit_seconds"]
    try:
        wait_for_calm(ctx)
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
        note += (
            f"; not cleared within {limit:.0f} s ({runs[-1]['remaining']} left), "
            f"at this pace about {elapsed * (deleted + runs[-1]['remaining']) / max(deleted, 1):.0f} s"
        )
    ctx.report.add(
        "backlog_defaults_clear_s",
        elapsed if cleared else None,
        "",
        kind,
        f"shipped CLEANUP_TIME_BUDGET and CLEANUP_BACKLOG_RETRY; {note}",
        samples=f"{len(runs)} runs",
    )


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
