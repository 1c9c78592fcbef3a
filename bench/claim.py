"""What the claim costs ordinary requests, and the public API's baseline.

* Overhead: submissions/s with the pruner on but not due ÷ off, two servers
  on one database, loaded at the same time in rounds. "Off" is only a setting: an interval of about
  30 years with the claim just taken, so no run can fall due.
* Baseline: submissions/s and p99 of the "on" server alone (default
  settings, 4 workers), absolute, for following a trend on the same machine.
* Database writes per not-due request (PostgreSQL): the same number of
  submissions to each server, alternated; the difference in writing
  transactions (transaction ids handed out) and WAL bytes, per request.
* The claiming request's latency ÷ an ordinary one's, with rows due: the
  prune runs after the response, so the client should not see it. Also the
  latency of a second request on the claiming request's keep-alive
  connection (what a browser following a redirect meets).
"""

from __future__ import annotations

import statistics
import threading
import time
from contextlib import contextmanager

from bench.client import Connection, Samples, closed_loop, submit_count
from bench.databases import utcnow
from bench.servers import cpu_seconds, serve

OFF_INTERVAL = 10**9  # seconds: the pruner never falls due
CLIENT_THREADS = 8
IDLE = 1.5  # seconds of quiet before each measured request


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
    """Pruner on (not due) vs off on ``kind``: both loaded at the same time, in rounds.

    Loading both servers at once means a burst of other work on the machine
    hits both sides alike. The rounds come in two halves with the servers
    started in either order (a server started first measured a few per cent
    slower than its twin in an A/A run on this machine).
    """
    database = ctx.database(kind, "claim_overhead")
    database.set_last_cleanup(utcnow())
    sides = {"on": Samples(), "off": Samples()}
    cpu = {"on": 0.0, "off": 0.0}
    baseline = Samples()
    for first in ("on", "off"):
        with _on_and_off(ctx, database, first) as servers:
            if first == "on":
                baseline = closed_loop(servers["on"].port, CLIENT_THREADS, ctx.sizes["load_seconds"])
                if kind == "postgresql":
                    writes_per_request(ctx, database, servers["on"], servers["off"])
            for _ in range(ctx.sizes["overhead_rounds"] // 2):
                _load_both(ctx, servers, sides, cpu)
    database.dispose()
    on_side, off_side = sides["on"], sides["off"]
    # Worker CPU per request is far less sensitive to other load on the
    # machine than throughput; its inverse ratio is a cross-check.
    cpu_ratio = (cpu["off"] / off_side.ok) / (cpu["on"] / on_side.ok)
    ctx.report.add("claim_overhead_ratio", on_side.ok / off_side.ok, "≥ 0.98", kind,
                   f"{on_side.ok} vs {off_side.ok} submissions in {ctx.sizes['overhead_rounds']} rounds "
                   f"of {ctx.sizes['overhead_seconds']:.0f} s, both servers loaded at once; "
                   f"worker CPU per request off ÷ on {cpu_ratio:.3f}")
    # The "on" server alone, with the default settings, is the baseline.
    note = (f"{baseline.failed} failed of {len(baseline.statuses)}; {CLIENT_THREADS} keep-alive clients, "
            "gunicorn gthread, 4 workers x 4 threads")
    ctx.report.add("baseline_submissions_per_s", baseline.rate(), "", kind, note)
    ctx.report.add("baseline_p99_ms", baseline.percentile(0.99) * 1000, "", kind)


@contextmanager
def _on_and_off(ctx, database, first: str):
    """The "on" and "off" servers, ``first`` started first, every worker warmed up."""
    settings = {"on": {}, "off": {"prune_interval": OFF_INTERVAL}}
    second = "off" if first == "on" else "on"
    kind = database.kind
    with serve(database.url, ctx.workdir, f"claim-{first}-{kind}", **settings[first]) as a, \
            serve(database.url, ctx.workdir, f"claim-{second}-{kind}", **settings[second]) as b:
        for server in (a, b):
            _warm_every_worker(server.port)
        yield {first: a, second: b}


def _load_both(ctx, servers: dict, sides: dict, cpu: dict) -> None:
    """One round: the same closed-loop load on both servers at once."""
    workers = {name: server.workers() for name, server in servers.items()}
    before = {name: cpu_seconds(pids) for name, pids in workers.items()}
    results = {}

    def load(name: str) -> None:
        results[name] = closed_loop(servers[name].port, CLIENT_THREADS, ctx.sizes["overhead_seconds"])

    threads = [threading.Thread(target=load, args=(name,)) for name in servers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for name in servers:
        cpu[name] += cpu_seconds(workers[name]) - before[name]
        sides[name].extend(results[name])


def writes_per_request(ctx, database, on, off) -> None:
    """Extra transactions and tuples written per not-due submission, pruner on minus off."""
    n = ctx.sizes["writes_requests"]
    deltas = {"on": [], "off": []}
    for name, server in [("on", on), ("off", off), ("off", off), ("on", on)]:
        before = database.write_counters()
        samples = submit_count(server.port, n)
        after = database.write_counters()
        assert samples.failed == 0, f"{samples.failed} submissions failed"
        deltas[name].append({k: after[k] - before[k] for k in before})
    per_request = {
        side: {key: sum(d[key] for d in deltas[side]) / (2 * n) for key in ("transactions", "wal_bytes")}
        for side in deltas
    }
    extra = {key: per_request["on"][key] - per_request["off"][key] for key in ("transactions", "wal_bytes")}
    ctx.report.add("writes_per_not_due_request", extra["transactions"], "= 0", "postgresql",
                   f"writing transactions per submission, on {per_request['on']['transactions']:.2f} "
                   f"minus off {per_request['off']['transactions']:.2f}; WAL bytes on minus off "
                   f"{extra['wal_bytes']:.0f} of {per_request['off']['wal_bytes']:.0f}")


def claiming_latency(ctx, kind: str) -> None:
    """Latency of the request that wins a claim with rows due ÷ an ordinary request's.

    Both are the first request after the same idle pause, on a new
    connection, alternated round by round: the ordinary one a few seconds
    before the claim falls due, the claiming one just after.
    """
    rows = ctx.sizes["claiming_rows"]
    interval = 4 if ctx.quick else 10
    database = ctx.database(kind, "claiming")
    claims, ordinary, followups = [], [], []
    with serve(database.url, ctx.workdir, f"claiming-{kind}", prune_interval=interval) as server:
        database.set_last_cleanup(utcnow())
        claimed_at = time.time()
        _warm_every_worker(server.port)
        for _ in range(ctx.sizes["claiming_rounds"]):
            database.load_expired(rows)
            time.sleep(IDLE)
            ordinary.append(_fresh_submit(server.port)[0])
            time.sleep(max(IDLE, claimed_at + interval + 0.2 - time.time()))
            claimed_at = time.time()
            runs_before = len(database.prune_runs())
            latency, followup = _fresh_submit(server.port, follow_up=True)
            runs = database.wait_for_runs_to_finish(timeout=120, at_least=runs_before + 1)
            assert runs[-1]["status"] == "ok", f"the claiming run did not finish: {runs[-1:]}"
            claims.append(latency)
            followups.append(followup)
    database.dispose()
    ctx.report.add("claiming_latency_ratio", statistics.median(claims) / statistics.median(ordinary),
                   "≤ 1.1", kind,
                   f"{rows} rows due; median of {len(claims)} rounds: {statistics.median(claims) * 1000:.1f} ms "
                   f"vs {statistics.median(ordinary) * 1000:.1f} ms")
    ctx.report.add("claiming_followup_ms", statistics.median(followups) * 1000, "", kind,
                   "the next request on the claiming request's keep-alive connection")


def _fresh_submit(port: int, follow_up: bool = False) -> tuple[float, float]:
    """One submission on a new connection; with ``follow_up``, then GET /thanks on the same one."""
    connection = Connection(port)
    status, latency = connection.submit()
    assert status == 201, f"submission failed with {status}"
    followup = connection.request("GET", "/thanks")[1] if follow_up else 0.0
    connection.close()
    return latency, followup
