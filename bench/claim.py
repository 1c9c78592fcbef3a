"""What the claim costs ordinary requests.

* Overhead: submissions/s with the pruner on but not due ÷ off, two servers
  on one database, alternated. "Off" is only a setting: an interval of about
  30 years with the claim just taken, so no run can fall due.
* Database writes per not-due request (PostgreSQL statistics): the same
  number of submissions to each server; the difference in transactions and
  tuples written, per request.
* The claiming request's latency ÷ an ordinary one's, with rows due: the
  prune runs after the response, so the client should not see it. Also the
  latency of a second request on the claiming request's keep-alive
  connection (what a browser following a redirect meets).
"""

from __future__ import annotations

import statistics
import time

from bench.client import Connection, closed_loop, submit_count
from bench.databases import utcnow
from bench.servers import serve

OFF_INTERVAL = 10**9  # seconds: the pruner never falls due
CLIENT_THREADS = 8


def run(ctx) -> None:
    """Overhead on both databases; writes on PostgreSQL; claiming latency on both."""
    for kind in ("sqlite", "postgresql"):
        overhead(ctx, kind)
    for kind in ("sqlite", "postgresql"):
        claiming_latency(ctx, kind)


def _warm_every_worker(port: int) -> None:
    # New connections land on whichever worker accepts first; a few short
    # bursts of fresh connections reach every worker, which then learns the
    # claim's next due time.
    for _ in range(4):
        closed_loop(port, 2 * CLIENT_THREADS, 0.3)


def overhead(ctx, kind: str) -> None:
    """Pruner on (not due) vs off on ``kind``."""
    database = ctx.database(kind, "claim_overhead")
    database.set_last_cleanup(utcnow())
    with serve(database.url, ctx.workdir, f"claim-on-{kind}") as on, \
            serve(database.url, ctx.workdir, f"claim-off-{kind}", prune_interval=OFF_INTERVAL) as off:
        for server in (on, off):
            _warm_every_worker(server.port)
        rates = {"on": [], "off": []}
        for round_no in range(ctx.sizes["overhead_rounds"]):
            order = [("on", on), ("off", off)] if round_no % 2 == 0 else [("off", off), ("on", on)]
            for name, server in order:
                samples = closed_loop(server.port, CLIENT_THREADS, ctx.sizes["overhead_seconds"])
                rates[name].append(samples.rate())
        if kind == "postgresql":
            writes_per_request(ctx, database, on, off)
    database.dispose()
    ratio = sum(rates["on"]) / sum(rates["off"])
    ctx.report.add("claim_overhead_ratio", ratio, "≥ 0.98", kind,
                   f"{ctx.sizes['overhead_rounds']} alternated rounds each side")


def writes_per_request(ctx, database, on, off) -> None:
    """Extra transactions and tuples written per not-due submission, pruner on minus off."""
    n = ctx.sizes["writes_requests"]
    deltas = {"on": [], "off": []}
    for name, server in [("on", on), ("off", off), ("off", off), ("on", on)]:
        before = database.write_counters()
        submit_count(server.port, n)
        time.sleep(0.7)  # statistics reach pg_stat_database asynchronously
        after = database.write_counters()
        deltas[name].append({k: after[k] - before[k] for k in before})
    extra = {
        key: (sum(d[key] for d in deltas["on"]) - sum(d[key] for d in deltas["off"])) / (2 * n)
        for key in ("transactions", "tuples")
    }
    ctx.report.add("writes_per_not_due_request", extra["tuples"], "= 0", "postgresql",
                   "tuples written per submission, on minus off")
    ctx.report.add("transactions_per_not_due_request", extra["transactions"], "= 0", "postgresql",
                   "committed transactions per submission, on minus off")


def claiming_latency(ctx, kind: str) -> None:
    """Latency of the request that wins a claim with rows due ÷ an ordinary request's."""
    rows = ctx.sizes["claiming_rows"]
    interval = 8 if ctx.quick else 12
    database = ctx.database(kind, "claiming")
    ratios, followups, ordinary_all = [], [], []
    with serve(database.url, ctx.workdir, f"claiming-{kind}", prune_interval=interval) as server:
        database.set_last_cleanup(utcnow())
        claimed_at = time.time()
        _warm_every_worker(server.port)
        for _ in range(ctx.sizes["claiming_rounds"]):
            database.load_expired(rows)
            ordinary = [_fresh_submit(server.port)[0] for _ in range(30)]
            time.sleep(max(0.0, claimed_at + interval + 0.2 - time.time()))
            claimed_at = time.time()
            runs_before = len(database.prune_runs())
            latency, followup = _fresh_submit(server.port, follow_up=True)
            runs = database.wait_for_runs_to_finish(timeout=120, at_least=runs_before + 1)
            assert runs and runs[-1]["status"] == "ok", f"the claiming run did not finish: {runs[-1:]}"
            ratios.append(latency / statistics.median(ordinary))
            followups.append(followup)
            ordinary_all += ordinary
    database.dispose()
    ctx.report.add("claiming_latency_ratio", statistics.median(ratios), "≤ 1.1", kind,
                   f"{rows} rows due; median of {len(ratios)} rounds")
    ctx.report.add("claiming_followup_ms", statistics.median(followups) * 1000, "", kind,
                   "next request on the claiming request's keep-alive connection; "
                   f"ordinary request {statistics.median(ordinary_all) * 1000:.1f} ms")


def _fresh_submit(port: int, follow_up: bool = False) -> tuple[float, float]:
    """One submission on a new connection; with ``follow_up``, then GET /thanks on the same one."""
    connection = Connection(port)
    status, latency = connection.submit()
    assert status == 201, f"submission failed with {status}"
    followup = connection.request("GET", "/thanks")[1] if follow_up else 0.0
    connection.close()
    return latency, followup
