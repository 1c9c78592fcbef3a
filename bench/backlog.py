"""A backlog of expired inquiries pruned while clients keep submitting.

Same data twice in one run: first one plain ``DELETE`` statement, then the
pruner (a run claimed by an ordinary submission, inside a gunicorn worker),
each under the same live traffic (2 clients, a submission every ~10 ms each,
one connection per submission as behind a proxy that does not keep upstream
connections alive; what a kept-alive connection meets is measured in
``claim.py``).
The pruner's run gets a time budget large enough to finish in one run, so its
rows/s are those of its batch loop, not of the pauses between runs.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

from bench.client import PacedSubmitter
from bench.databases import utcnow
from bench.servers import serve

OFF_INTERVAL = 10**9


def run(ctx) -> None:
    """Both databases."""
    for kind in ("sqlite", "postgresql"):
        measure(ctx, kind)


def measure(ctx, kind: str) -> None:
    """Plain DELETE, then the pruner, on ``kind``; report the pruner's figures and the ratio."""
    rows = ctx.sizes["backlog_rows"]
    database = ctx.database(kind, "backlog")
    plain_rate, plain_stall = _plain_delete(ctx, database, rows)
    pruner = _pruner(ctx, database, rows)
    database.dispose()
    idle, during = pruner["idle"], pruner["during"]
    report = ctx.report
    report.add("backlog_p99_ratio", during.percentile(0.99) / idle.percentile(0.99), "≤ 3", kind,
               f"{rows} rows; p99 {during.percentile(0.99) * 1000:.1f} ms during vs "
               f"{idle.percentile(0.99) * 1000:.1f} ms idle ({len(during.latencies)} / {len(idle.latencies)} requests)")
    report.add("backlog_longest_stall_ms", max(during.latencies, default=0) * 1000, "≤ 250", kind)
    report.add("backlog_failed_submissions", pruner["failed"], "= 0", kind)
    report.add("backlog_rows_per_s_ratio", pruner["rate"] / plain_rate, "≥ 0.5", kind,
               f"pruner {pruner['rate']:.0f} rows/s vs one DELETE {plain_rate:.0f} rows/s "
               f"(which stalled a submission {plain_stall * 1000:.0f} ms)")


def _plain_delete(ctx, database, rows: int) -> tuple[float, float]:
    """Rows/s of one DELETE under live traffic, and the longest submission during it."""
    database.load_expired(rows)
    database.set_last_cleanup(utcnow())
    with serve(database.url, ctx.workdir, f"backlog-plain-{database.kind}", prune_interval=OFF_INTERVAL) as server:
        with PacedSubmitter(server.port, keepalive=False) as traffic:
            time.sleep(1.0)
            started = time.time()
            deleted, seconds = database.plain_delete(database.expired_cutoff())
            ended = time.time()
            time.sleep(0.5)
    assert deleted == rows, f"the plain DELETE removed {deleted} of {rows} rows"
    during = traffic.collected().between(started, ended)
    return rows / seconds, max(during.latencies, default=0.0)


def _pruner(ctx, database, rows: int) -> dict:
    """Load the same rows again; let a submission claim a run; measure traffic around it."""
    database.load_expired(rows)
    database.clear_prune_runs()
    idle_seconds = ctx.sizes["idle_seconds"]
    # Due a few seconds from now: the idle phase comes first, then an ordinary
    # submission wins the claim and the run starts in its worker.
    interval = idle_seconds + 3
    database.set_last_cleanup(utcnow())
    with serve(database.url, ctx.workdir, f"backlog-pruner-{database.kind}",
               prune_interval=interval, prune_time_budget=3600, prune_lease=7200) as server:
        with PacedSubmitter(server.port, keepalive=False) as traffic:
            runs = database.wait_for_runs_to_finish(timeout=interval + 600)
            time.sleep(min(idle_seconds, 3.0))
    run = max(runs, key=_deleted_submissions)
    assert run["status"] == "ok", f"the run ended {run['status']}: {run.get('error')}"
    started, finished = _epoch(run["started_at"]), _epoch(run["finished_at"])
    samples = traffic.collected()
    warm = min(samples.started) + 1.0  # each worker's first requests learn the claim's due time
    idle = samples.between(warm, started)
    idle.extend(samples.between(finished, float("inf")))
    assert database.count() < rows, "the run left the expired rows in place"
    return {
        "idle": idle,
        "during": samples.between(started, finished),
        "failed": samples.failed,
        "rate": _deleted_submissions(run) / (finished - started),
    }


def _deleted_submissions(run: dict) -> int:
    deleted = run["deleted"]
    counts = json.loads(deleted) if isinstance(deleted, str) else deleted
    return int(counts.get("inquiries", 0))


def _epoch(value) -> float:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.tzinfo is None:  # SQLite stores naive UTC
        value = value.replace(tzinfo=timezone.utc)
    return value.timestamp()
