"""Medians, spreads and A/A controls: how far a ratio can move by noise alone.

A ratio measured in rounds is the median of its per-round ratios; its
spread is half the interquartile range of them. Beside it, an A/A control of
the same size (the same measurement between two identical sides) shows what
noise alone produces. A figure's noise is the largest of its spread, the
A/A control's spread and the A/A control's distance from 1; a ratio goal
counts as met only when the figure clears its threshold by more than that.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass


def median(values: list[float]) -> float:
    """The median (nan when empty)."""
    return statistics.median(values) if values else float("nan")


def spread(values: list[float]) -> float:
    """Half the interquartile range (inclusive quartiles); 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    low, _, high = statistics.quantiles(values, n=4, method="inclusive")
    return (high - low) / 2


def cyclic_ratios(values: list[float]) -> list[float]:
    """Each value over the one before it, the first over the last: an A/A control among identical trials."""
    return [values[i] / values[i - 1] for i in range(len(values))] if len(values) > 1 else []


def ratios(numerators: list[float], denominators: list[float]) -> list[float]:
    """Per-round ratios of two equally long lists."""
    return [a / b for a, b in zip(numerators, denominators, strict=False)]


@dataclass
class Ratio:
    """A ratio measured in rounds, with its A/A control."""

    rounds: list[float]
    control: list[float]

    @property
    def value(self) -> float:
        return median(self.rounds)

    @property
    def spread(self) -> float:
        return spread(self.rounds)

    @property
    def aa(self) -> float:
        return median(self.control)

    @property
    def aa_spread(self) -> float:
        return spread(self.control)

    @property
    def noise(self) -> float:
        """How far noise alone can move the ratio (see the module docstring)."""
        aa_offset = abs(self.aa - 1) if self.control else 0.0
        return max(self.spread, self.aa_spread if self.control else 0.0, aa_offset)
