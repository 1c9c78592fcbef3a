"""docs/bench-backlog.svg: submission latency over time during a backlog cleanup, one panel per database.

Plain SVG written by hand: a dot per scheduled submission (latency from its
scheduled time, log scale; failed ones as red crosses) and the run's start
and end as vertical lines, the warm-up (left out of every figure) shaded.
"""

from __future__ import annotations

import math
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATH = ROOT / "docs" / "bench-backlog.svg"
WIDTH, PANEL, LEFT, TOP, GAP = 900, 260, 70, 30, 60
PLOT_W, PLOT_H = WIDTH - LEFT - 30, PANEL - 50
Y_MIN, Y_MAX = 1.0, 10_000.0  # milliseconds
MAX_DOTS = 6000


def write_backlog_picture(trials: dict, rows: int, warm: float) -> str:
    """Write the picture for ``{database: Trial}`` (``warm`` seconds of warm-up shaded); return its Markdown."""
    height = TOP + len(trials) * (PANEL + GAP)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/>'
    ]
    for index, (kind, trial) in enumerate(trials.items()):
        parts += _panel(kind, trial, rows, warm, TOP + index * (PANEL + GAP))
    parts.append("</svg>")
    PATH.write_text("\n".join(parts) + "\n")
    return (
        f"![Submission latency over time during the cleanup of {rows} realistic rows, per database]"
        f"({PATH.name})\n\nEach dot is one scheduled submission (its latency counted from its scheduled"
        " time, log scale); the vertical lines mark the run's start and end (the median trial by rows/s); the"
        " shaded start is the warm-up, left out of every figure."
    )


def _panel(kind: str, trial, rows: int, warm: float, top: float) -> list[str]:
    samples = trial.samples
    span = max(max(samples.started, default=trial.finished) - trial.begun, 1.0)

    def x(t: float) -> float:
        return LEFT + PLOT_W * (t - trial.begun) / span

    def y(seconds: float) -> float:
        ms = min(max(seconds * 1000, Y_MIN), Y_MAX)
        return top + PLOT_H * (1 - math.log10(ms / Y_MIN) / math.log10(Y_MAX / Y_MIN))

    out = [
        f'<text x="{LEFT}" y="{top - 8}" font-weight="bold">{kind}: cleanup of {rows} expired rows, '
        f"{trial.rate:.0f} rows/s, {len(samples.latencies)} submissions</text>",
        f'<rect x="{LEFT}" y="{top}" width="{PLOT_W}" height="{PLOT_H}" fill="none" stroke="#999"/>',
    ]
    for ms in (1, 10, 100, 1000, 10000):
        out.append(
            f'<line x1="{LEFT}" x2="{LEFT + PLOT_W}" y1="{y(ms / 1000):.1f}" y2="{y(ms / 1000):.1f}" stroke="#eee"/>'
        )
        out.append(f'<text x="{LEFT - 6}" y="{y(ms / 1000) + 4:.1f}" text-anchor="end">{ms} ms</text>')
    for second in range(0, int(span) + 1, max(1, int(span) // 10)):
        out.append(
            f'<text x="{x(trial.begun + second):.1f}" y="{top + PLOT_H + 16}" text-anchor="middle">{second} s</text>'
        )
    warm_end = x(trial.begun + warm)
    out.append(
        f'<rect x="{LEFT}" y="{top}" width="{warm_end - LEFT:.1f}" height="{PLOT_H}" fill="#000" fill-opacity="0.06"/>'
    )
    out.append(f'<text x="{LEFT + 4}" y="{top + PLOT_H - 6}" fill="#666">warm-up, not counted</text>')
    stride = max(1, len(samples.latencies) // MAX_DOTS)
    for t, status, latency in list(zip(samples.started, samples.statuses, samples.latencies, strict=False))[::stride]:
        out.append(_dot(x(t), y(latency), 200 <= status < 300))
    for moment, label, colour in (
        (trial.started, "run starts", "#c60"),
        (trial.finished, "run ends", "#080"),
        (trial.forgotten, "purge ends", "#06c"),
    ):
        out.append(
            f'<line x1="{x(moment):.1f}" x2="{x(moment):.1f}" y1="{top}" y2="{top + PLOT_H}" '
            f'stroke="{colour}" stroke-width="2" stroke-dasharray="6 3"/>'
        )
        out.append(f'<text x="{x(moment) + 4:.1f}" y="{top + 14}" fill="{colour}">{label}</text>')
    return out


def _dot(cx: float, cy: float, ok: bool) -> str:
    if ok:
        return f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="1.6" fill="#36c" fill-opacity="0.6"/>'
    return f'<path d="M{cx - 3:.1f},{cy - 3:.1f}l6,6m0,-6l-6,6" stroke="#d00" stroke-width="1.5"/>'
