"""Bar charts drawn on the server: the geometry of an SVG, which ``templates/admin/_chart.html`` draws.

No script and no inline style (the CSP allows neither): the template
writes ``<rect>`` elements with their coordinates, and their colours come
from classes in ``static/style.css`` (``series-0`` to ``series-5``, then
again). Every chart has a table beside it with the same numbers, for
screen readers and small screens; the picture itself is one labelled image.
"""

from __future__ import annotations

from dataclasses import dataclass

WIDTH = 720
HEIGHT = 220
TOP = 12
BOTTOM = 24  # room for the first and last labels under the bars
LEFT = 44  # room for the scale's numbers
SERIES_CLASSES = 6


@dataclass(frozen=True)
class Bar:
    """One rectangle: a series' part of one column."""

    x: float
    y: float
    width: float
    height: float
    series: int


@dataclass(frozen=True)
class Label:
    """A number or a date written on the chart."""

    x: float
    y: float
    text: str


@dataclass(frozen=True)
class Chart:
    """What the template draws: the bars, the scale's labels and the columns' first and last labels."""

    width: int
    height: int
    bars: list[Bar]
    labels: list[Label]
    base: float  # the y of the zero line
    left: float


def stacked(columns: list[str], series: list[list[float]], scale: str = "{:g}") -> Chart:
    """Columns (``columns``, left to right), each stacking every series' value at its index."""
    top = max((sum(values[i] for values in series) for i in range(len(columns))), default=0) or 1
    step = (WIDTH - LEFT) / max(len(columns), 1)
    plot = HEIGHT - TOP - BOTTOM
    base = HEIGHT - BOTTOM
    bars = []
    for i in range(len(columns)):
        y = float(base)
        for number, values in enumerate(series):
            height = values[i] / top * plot
            if height > 0:
                y -= height
                bars.append(
                    Bar(
                        round(LEFT + i * step + step * 0.1, 2),
                        round(y, 2),
                        round(step * 0.8, 2),
                        round(height, 2),
                        number % SERIES_CLASSES,
                    )
                )
    labels = [Label(LEFT - 6, base, scale.format(0)), Label(LEFT - 6, TOP + 8, scale.format(top))]
    if columns:
        labels += [Label(LEFT, HEIGHT - 6, columns[0]), Label(WIDTH, HEIGHT - 6, columns[-1])]
    return Chart(WIDTH, HEIGHT, bars, labels, base, LEFT)
