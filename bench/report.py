"""Figures and controls: printed as they arrive and written to docs/benchmarks.md.

A figure is met only when it clears its goal by more than its noise
(``bench.stats``) and, for a tail latency, when enough requests lie above it;
it fails ("no") only when it misses its goal by more than its noise. A
control is a deliberately broken variant; it is caught when a figure that
guards against it fails.
"""

from __future__ import annotations

import math
import operator
import os
import platform
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bench.stats import Ratio

_CHECKS = {"≥": operator.ge, "≤": operator.le, "=": operator.eq}
MIN_TAIL = 20  # requests above a p99 for it to count
# The measurements behind the reasons code comments give: written by hand, kept by every rewrite.
HAND_KEPT = "## Figures behind the code"


@dataclass
class Figure:
    """One measured figure and its goal (e.g. ``"≥ 0.98"``; empty for trend-only figures).

    ``ratio`` carries rounds and an A/A control; ``tail`` how many requests
    lie above a percentile; ``variant`` names the control a figure was measured on.
    """

    name: str
    value: float | int | None
    goal: str
    database: str
    note: str = ""
    samples: str = ""
    ratio: Ratio | None = None
    tail: int | None = None
    variant: str = ""

    def margin(self) -> float:
        """How far the value is on the good side of the goal (negative: the wrong side)."""
        symbol, _, threshold = self.goal.partition(" ")
        if symbol == "=":
            return 0.0 if self.value == float(threshold) else -1.0
        return float(self.value) - float(threshold) if symbol == "≥" else float(threshold) - float(self.value)

    def met(self) -> str:
        """ "yes", "no", "within noise", "too few samples", "n/a" (no goal) or "not measured"."""
        if self.value is None or (isinstance(self.value, float) and math.isnan(self.value)):
            return "not measured"
        if not self.goal:
            return "n/a"
        symbol, _, threshold = self.goal.partition(" ")
        noise = self.ratio.noise if self.ratio is not None else 0.0
        if not _CHECKS[symbol](self.value, float(threshold)):
            return "no" if -self.margin() > noise else "within noise"
        if self.ratio is not None and self.margin() <= noise:
            return "within noise"
        if self.tail is not None and self.tail < MIN_TAIL:
            return "too few samples"
        return "yes"

    def spread_text(self) -> str:
        return f"± {self.ratio.spread:.3f}" if self.ratio else ""

    def control_text(self) -> str:
        if not self.ratio or not self.ratio.control:
            return ""
        return f"{self.ratio.aa:.3f} ± {self.ratio.aa_spread:.3f} (noise {self.ratio.noise:.3f})"


def shown(value) -> str:
    """A value as printed: integers plain, others with 3 significant decimals."""
    if value is None:
        return "not measured"
    if isinstance(value, int):
        return str(value)
    return f"{value:.3f}" if abs(value) < 100 else f"{value:.0f}"


@dataclass
class Control:
    """A broken variant and the figures that should catch it."""

    name: str
    variant: str
    figures: list[Figure] = field(default_factory=list)

    @property
    def caught(self) -> bool:
        return any(f.met() == "no" for f in self.figures)


def hand_kept(path: Path) -> str:
    """The section kept by hand at the end of ``path``, from its ``HAND_KEPT`` heading on ("" if none)."""
    text = path.read_text() if path.exists() else ""
    start = text.find(f"\n{HAND_KEPT}\n")
    return text[start + 1 :] if start >= 0 else ""


class Report:
    """Collects figures and controls in order; prints each as it arrives."""

    def __init__(self, mode: str):
        self.mode = mode
        self.figures: list[Figure] = []
        self.controls: list[Control] = []
        self.started = datetime.now(UTC)
        self.load_at_start = os.getloadavg()[0]
        self.seconds = 0.0
        self.picture = ""
        self.sections: list[tuple[str, list[str]]] = []  # (title, Markdown lines) after the controls
        self.not_run: list[str] = []  # the benchmarks a run stopped early never reached

    def add(self, name: str, value, goal: str, database: str, note: str = "", **extra) -> Figure:
        """Record and print one figure (``extra``: samples, ratio, tail, variant)."""
        figure = Figure(name, value, goal, database, note, **extra)
        self.figures.append(figure)
        parts = [f"{name}.{database}: {shown(value)}"]
        if goal:
            parts.append(f"(goal {goal}: {figure.met()})")
        if figure.ratio:
            parts.append(f"spread {figure.spread_text()}, A/A {figure.control_text()}")
        if figure.samples:
            parts.append(f"samples: {figure.samples}")
        if figure.variant:
            parts.append(f"[control: {figure.variant}]")
        print("  ".join(parts) + (f"  [{note}]" if note else ""), flush=True)
        return figure

    def control(self, control: Control) -> None:
        """Record and print whether a control was caught."""
        self.controls.append(control)
        guards = ", ".join(f"{f.name}.{f.database} = {shown(f.value)} ({f.met()})" for f in control.figures)
        print(f"control {control.name}: {'caught' if control.caught else 'NOT CAUGHT'} by {guards}", flush=True)

    def measured(self) -> list[Figure]:
        """The figures of the shipped code (not of controls)."""
        return [f for f in self.figures if not f.variant]

    def unmet(self) -> list[Figure]:
        """Figures with a goal that is not met (for ``STRICT=1``)."""
        return [f for f in self.measured() if f.goal and f.met() != "yes"]

    def uncaught(self) -> list[Control]:
        return [c for c in self.controls if not c.caught]

    def write_markdown(self, path: Path) -> None:
        """Rewrite ``path`` with the figures, the controls and the picture."""
        lines = self._header() + [
            "| figure | database | value | goal | met | samples | spread | A/A control | note |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for f in self.measured():
            lines.append(
                f"| {f.name} | {f.database} | {shown(f.value)} | {f.goal or '(trend only)'} | {f.met()}"
                f" | {f.samples} | {f.spread_text()} | {f.control_text()} | {f.note} |"
            )
        lines += [
            "",
            "## Controls: broken variants the figures must catch",
            "",
            "A control that is not caught makes `make bench` exit non-zero.",
            "",
            "| control | variant | caught | by (figure, database, value, met) |",
            "| --- | --- | --- | --- |",
        ]
        for c in self.controls:
            guards = "; ".join(f"{f.name}, {f.database}, {shown(f.value)}, {f.met()}" for f in c.figures)
            lines.append(f"| {c.name} | `{c.variant}` | {'yes' if c.caught else '**no**'} | {guards} |")
        for title, section in self.sections:
            lines += ["", f"## {title}", "", *section]
        if self.picture:
            lines += ["", "## Submission latency during the backlog cleanup", "", self.picture]
        kept = hand_kept(path)
        path.write_text("\n".join(lines) + "\n" + (f"\n{kept}" if kept else ""))

    def _header(self) -> list[str]:
        date = self.started.strftime("%Y-%m-%d %H:%M UTC")
        mode = "quick mode, smaller data" if self.mode == "quick" else "full mode"
        return [
            "# Benchmarks",
            "",
            f"Generated by `make bench` ({mode}) on {date} in {self.seconds / 60:.0f} min; do not edit by hand"
            f' above "{HAND_KEPT.removeprefix("## ")}", which a run keeps as it is.',
            f"Python {platform.python_version()}, {platform.system()}, {os.cpu_count()} cores; load average"
            f" (1 min) {self.load_at_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end: other work"
            " on the machine adds noise to every figure.",
            "Met means: on the good side of the goal by more than the figure's noise (the largest of its"
            " spread, its A/A control's spread and the A/A control's distance from 1), and for a p99,"
            f" at least {MIN_TAIL} requests above it. Spread: half the interquartile range over rounds.",
            "What each figure means and how it is measured: `bench/README.md`.",
            *([f"Stopped early (SIGTERM): not run this time: {', '.join(self.not_run)}."] if self.not_run else []),
            "",
        ]
