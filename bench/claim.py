"""What being on costs a request that finds no cleanup due, on both databases.

* Overhead: submissions/s of the shipped app (the claim just taken, so not
  due for an hour) ÷ the same app without its after-response hook (``off``,
  a real off switch), in back-to-back pairs of closed-loop loads, the order
  rotating round by round; the median of the per-round ratios. A/A control:
  the shipped app ÷ a second, identical shipped server, in the same rounds.
* Baseline: the shipped server's submissions/s and p99 in those rounds (trend only).
* Touches of ``settings`` per not-due request, absolute: statements and
  writes from the server's own statement counter (``bench.wsgi``) and writes
  (PostgreSQL also scans) from the database itself (``bench.dbstats``).
  Goal 0: a not-due request asks this process's memory, never the database.

Control: ``always_due`` (the shortcut disabled) must fail the touch figures.
"""

from __future__ import annotations

import time

from app.cleanup.hook import START_WAIT
from bench.client import Samples, closed_loop, submit_count, warm_every_worker
from bench.databases import utcnow
from bench.dbstats import settings_touches
from bench.report import Control, Figure
from bench.servers import serve
from bench.stats import Ratio, ratios

KINDS = ("sqlite", "postgresql")
CLIENTS = 8


def run(ctx) -> None:
    """Overhead and touches on both databases, then the control."""
    control = Control("not-due shortcut disabled", "always_due")
    for kind in KINDS:
        database = ctx.database(kind, "claim")
        database.set_last_cleanup(utcnow())  # just claimed: not due for an hour
        overhead(ctx, database)
        not_due_touches(ctx, database, "shipped")
        control.figures += not_due_touches(ctx, database, "always_due")
        database.drop()
    ctx.report.control(control)


def overhead(ctx, database) -> None:
    """Shipped vs off vs a second shipped server, each loaded alone, the order rotating each round."""
    names = ["on", "off", "on_again"]
    rates = {name: [] for name in names}
    served = dict.fromkeys(names, 0)
    baseline = Samples()
    kind = database.kind
    with (
        serve(database.url, ctx.workdir, f"claim-on-{kind}") as on,
        serve(database.url, ctx.workdir, f"claim-off-{kind}", "off") as off,
        serve(database.url, ctx.workdir, f"claim-on-again-{kind}") as on_again,
    ):
        servers = {"on": on, "off": off, "on_again": on_again}
        for server in servers.values():
            warm_every_worker(server.port)
        for round_ in range(ctx.sizes["overhead_rounds"]):
            for name in names[round_ % 3 :] + names[: round_ % 3]:
                samples = closed_loop(servers[name].port, CLIENTS, ctx.sizes["overhead_seconds"])
                rates[name].append(samples.rate())
                served[name] += samples.ok
                if name == "on":
                    baseline.extend(samples)
    ratio = Ratio(ratios(rates["on"], rates["off"]), ratios(rates["on"], rates["on_again"]))
    rounds = ctx.sizes["overhead_rounds"]
    ctx.report.add(
        "claim_overhead_ratio",
        ratio.value,
        "≥ 0.98",
        kind,
        f"shipped (not due) ÷ off (no after-response hook); {CLIENTS} keep-alive clients, "
        f"{ctx.sizes['overhead_seconds']:.0f} s per side per round, order rotating",
        samples=f"{rounds} rounds; {served['on']}, {served['off']}, {served['on_again']} submissions",
        ratio=ratio,
    )
    note = f"{baseline.failed} failed of {len(baseline.statuses)}; gunicorn gthread, 4 workers x 4 threads"
    ctx.report.add("baseline_submissions_per_s", baseline.rate(), "", kind, note, samples=f"{rounds} rounds")
    ctx.report.add(
        "baseline_p99_ms",
        baseline.percentile(0.99) * 1000,
        "",
        kind,
        samples=f"{len(baseline.latencies)} requests, {baseline.above(0.99)} above p99",
    )


def not_due_touches(ctx, database, variant: str) -> list[Figure]:
    """Touches of ``settings`` per submission on a warmed server of ``variant``, none due."""
    n = ctx.sizes["counted_requests"]
    with serve(database.url, ctx.workdir, f"touches-{variant}-{database.kind}", variant) as server:
        warm_every_worker(server.port)
        before = warm_up_claims_ended(server)
        with settings_touches(database) as touches:
            samples = submit_count(server.port, n)
            # What the requests handed to the runner counts too: a claim attempt waits up to START_WAIT
            # for a quiet moment, so counters read at once can miss it.
            time.sleep(START_WAIT + 0.5)
            after = server.counters()
            server.stop()  # PostgreSQL backends report their statistics as they exit
    assert samples.failed == 0, f"{samples.failed} of {n} submissions failed"
    counted = {key: after[key] - before[key] for key in after}
    requests = counted["requests"]
    extra = {"samples": f"{requests} requests counted by the server"}
    if variant != "shipped":
        extra["variant"] = variant

    def add(name: str, count: int, note: str) -> Figure:
        return ctx.report.add(name, count / requests, "= 0", database.kind, note, **extra)

    figures = [
        add(
            "settings_statements_per_not_due_request",
            counted["settings_statements"],
            f"the server's statement counter; all statements: {counted['statements'] / requests:.2f} per request",
        ),
        add(
            "settings_writes_per_not_due_request",
            counted["settings_writes"],
            "the server's statement counter: INSERT/UPDATE/DELETE naming settings",
        ),
        add("settings_db_writes_per_not_due_request", touches.writes, _db_note(database.kind, touches, requests)),
    ]
    if touches.scans is not None:
        figures.append(
            add(
                "settings_db_scans_per_not_due_request",
                touches.scans,
                "pg_stat_user_tables: seq_scan + idx_scan of settings",
            )
        )
    return figures


def warm_up_claims_ended(server, limit: float = 60.0) -> dict:
    """The server's counters once the warm-up's claim attempts (each worker learns the due time) have ended:
    none of its statements named ``settings`` for ``START_WAIT`` and a half second. A claim attempt waits for
    a quiet moment, so on a busy machine one can start well after the warm-up's last request."""
    deadline = time.monotonic() + limit
    counters = server.counters()
    while time.monotonic() < deadline:
        time.sleep(START_WAIT + 0.5)
        latest = server.counters()
        if latest["settings_statements"] == counters["settings_statements"]:
            return latest
        counters = latest
    raise AssertionError(f"the warm-up's claim attempts did not end within {limit:.0f} s")


def _db_note(kind: str, touches, requests: int) -> str:
    per_request = touches.transactions / requests
    if kind == "sqlite":
        return f"WAL frames of settings' pages; {per_request:.2f} commits per request (all tables)"
    return f"pg_stat_user_tables n_tup_ins+upd+del; {per_request:.2f} transaction ids per request (all tables)"
