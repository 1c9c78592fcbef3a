"""Dependencies: ranges that exclude releases with advisories, and lock files that pin every package by hash."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
LOCKS = [ROOT / "requirements.lock", ROOT / "requirements-test.lock"]
# Releases with published advisories that the ranges must never admit.
ADVISED = {"python-json-logger": ["3.2.0"], "flask": ["3.1.0", "3.0.3", "2.3.3"]}


def _requirements() -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {Requirement(line).name.lower(): Requirement(line) for line in project["dependencies"]}


@pytest.mark.parametrize("name", sorted(ADVISED))
def test_ranges_exclude_releases_with_advisories(name):
    requirement = _requirements()[name]
    assert not [v for v in ADVISED[name] if requirement.specifier.contains(v)]


@pytest.mark.parametrize("lock", LOCKS, ids=lambda path: path.name)
def test_every_locked_pin_carries_a_hash(lock):
    entries = lock.read_text().split("\n")
    pins = [line for line in entries if "==" in line and not line.startswith("#")]
    assert pins and all(line.rstrip().endswith("\\") for line in pins)
