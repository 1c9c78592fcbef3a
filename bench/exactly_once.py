"""Exactly-once at scale: 500 submissions at once across 2 servers x 4 workers on PostgreSQL.

The servers start fresh (no worker has learned when the claim is due); the
claim is made due just before the burst; every request that reaches the hook
may try the claim, and the ledger must show exactly one run.
"""

from __future__ import annotations

from datetime import timedelta

from bench.client import burst_submissions
from bench.databases import realistic_rows, utcnow
from bench.servers import serve

REQUESTS = 500


def run(ctx) -> None:
    """Count the runs started by one burst."""
    database = ctx.database("postgresql", "exactly_once")
    database.load_rows(realistic_rows(10_000, seed=5))
    database.set_last_cleanup(utcnow())
    with (
        serve(database.url, ctx.workdir, "exactly-once-a") as a,
        serve(database.url, ctx.workdir, "exactly-once-b") as b,
    ):
        database.set_last_cleanup(utcnow() - timedelta(hours=2))
        statuses = burst_submissions([a.port, b.port], REQUESTS)
        runs = database.wait_for_runs(timeout=60, settle=1.0)
    database.drop()
    failed = sum(1 for status in statuses if status != 201)
    ctx.report.add(
        "exactly_once_cleanup_runs",
        len(runs),
        "= 1",
        "postgresql",
        f"{REQUESTS} concurrent submissions, 2 servers x 4 gthread workers",
        samples=f"{REQUESTS} requests",
    )
    ctx.report.add("exactly_once_failed_requests", failed, "= 0", "postgresql", samples=f"{REQUESTS} requests")
