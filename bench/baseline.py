"""Baseline: submissions per second and p99 of the public JSON API with 4 workers.

Absolute numbers, for following a trend between versions on the same machine.
"""

from __future__ import annotations

from bench.client import closed_loop
from bench.servers import serve

CLIENT_THREADS = 8


def run(ctx) -> None:
    """Measure both databases."""
    for kind in ("sqlite", "postgresql"):
        database = ctx.database(kind, "baseline")
        with serve(database.url, ctx.workdir, f"baseline-{kind}", workers=4) as server:
            closed_loop(server.port, CLIENT_THREADS, 1.0)  # warm-up
            samples = closed_loop(server.port, CLIENT_THREADS, ctx.sizes["load_seconds"])
        database.dispose()
        note = f"{samples.failed} failed of {len(samples.statuses)}; {CLIENT_THREADS} client threads, gthread 4x4"
        ctx.report.add("baseline_submissions_per_s", samples.rate(), "", kind, note)
        ctx.report.add("baseline_p99_ms", samples.percentile(0.99) * 1000, "", kind)
