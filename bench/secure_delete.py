"""What "deleted means gone" costs the backlog cleanup on SQLite: ``secure_delete`` on (shipped) and off.

The same alternated cleanup trials as ``bench.backlog`` (a fresh copy of the
realistic backlog, a shipped server under open-loop submissions, the run
started by the traffic), served as shipped or as the ``secure_delete_off``
variant (``bench.wsgi``), in the order on-off-off-on... Figures: rows/s of
the runs with it on ÷ off (below 1: the cost), and the p99 of submissions
during the runs with it on ÷ off. The truncating checkpoint at the end of a
run is in both.
"""

from __future__ import annotations

from bench.backlog import _trial
from bench.stats import Ratio, cyclic_ratios, ratios

ORDER = ("shipped", "secure_delete_off", "secure_delete_off", "shipped")


def run(ctx) -> None:
    """Alternated cleanup trials with secure_delete on and off, on SQLite."""
    template = ctx.template("sqlite")
    trials = {"shipped": [], "secure_delete_off": []}
    for i in range(2 * ctx.sizes["secure_delete_trials"]):
        variant = ORDER[i % len(ORDER)]
        # Its figures compare the runs themselves, not with an idle phase: the shortest one.
        trials[variant].append(_trial(ctx, template, "cleanup", f"secure{i}", variant=variant, short_idle=True))
    on, off = trials["shipped"], trials["secure_delete_off"]
    on_rates, off_rates = [t.rate for t in on], [t.rate for t in off]
    ctx.report.add(
        "backlog_secure_delete_rows_per_s_ratio",
        Ratio(ratios(on_rates, off_rates), cyclic_ratios(off_rates)).value,
        "",
        "sqlite",
        f"{ctx.sizes['backlog_rows']} realistic expired rows; runs with secure_delete on "
        f"{', '.join(f'{r:.0f}' for r in on_rates)} rows/s vs off {', '.join(f'{r:.0f}' for r in off_rates)} rows/s",
        samples=f"{len(on)} + {len(off)} trials",
        ratio=Ratio(ratios(on_rates, off_rates), cyclic_ratios(off_rates)),
    )
    on_p99 = [t.during.percentile(0.99) for t in on]
    off_p99 = [t.during.percentile(0.99) for t in off]
    ctx.report.add(
        "backlog_secure_delete_p99_ratio",
        sum(on_p99) / sum(off_p99),
        "",
        "sqlite",
        f"p99 of submissions during the runs: on {', '.join(f'{p * 1000:.1f}' for p in on_p99)} ms, "
        f"off {', '.join(f'{p * 1000:.1f}' for p in off_p99)} ms",
        samples=f"{len(on)} + {len(off)} trials",
    )
