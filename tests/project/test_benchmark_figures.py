"""Benchmark history lives in docs/benchmarks.md, not in code: its "Figures behind the code" stays true and stays put.

No database: these read files and write one report to a temporary folder.
"""

from __future__ import annotations

import re
from pathlib import Path

from bench.report import HAND_KEPT, Report, hand_kept

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "benchmarks.md"
POINTER = '"Figures behind the code"'


def table_rows() -> list[list[str]]:
    """The rows of the hand-kept table: each one's cells."""
    rows = [line for line in hand_kept(DOC).splitlines() if line.startswith("| `")]
    assert rows, f"docs/benchmarks.md has no table under {HAND_KEPT}"
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]


def source_of(module: str) -> Path:
    """The file of a dotted module name from the table (a package's ``__init__.py``)."""
    path = ROOT.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def test_a_rewrite_by_make_bench_keeps_the_hand_kept_section(tmp_path):
    path = tmp_path / "benchmarks.md"
    path.write_text(f"# Benchmarks\n\nold figures\n\n{HAND_KEPT}\n\n| `app.models` | kept | 1 |\n")
    report = Report("quick")
    report.add("a_figure", 1.0, "≥ 0.5", "sqlite")
    report.write_markdown(path)
    text = path.read_text()
    assert "old figures" not in text and "| a_figure | sqlite |" in text
    assert text.endswith(f"\n\n{HAND_KEPT}\n\n| `app.models` | kept | 1 |\n")


def test_every_place_the_table_names_exists():
    for cells in table_rows():
        for module, name in re.findall(r"`((?:app|bench|devtools)\.[\w.]+)`(?:, `([\w.]+)`)?", cells[0]):
            source = source_of(module)
            assert source.exists(), f"{module} (docs/benchmarks.md) is not {source.relative_to(ROOT)}"
            if name:
                assert name.split(".")[-1] in source.read_text(), f"{module} has no {name}"


def test_every_comment_pointing_at_the_table_is_in_a_module_it_names():
    named = {module for cells in table_rows() for module in re.findall(r"`((?:app|bench|devtools)\.[\w.]+)`", cells[0])}
    pointing = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for folder in ("app", "bench", "devtools")
        for path in (ROOT / folder).rglob("*.py")
        if POINTER in path.read_text()
    }
    assert pointing, "no comment points at the table: the check would prove nothing"
    assert sorted(pointing - named) == []
