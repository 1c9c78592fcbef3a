"""README.md's "Where things are" table is true: every path it names exists, and it names every room.

A room is whatever sits directly under ``app/`` (a package, a module, the
catalogs) and every file in ``static/``; a new one fails here until a row names it.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IGNORED = {"__pycache__", "_files"}  # compiled bytecode; the wheel's copy of the data files (setup.py)


def named_paths(readme: str) -> set[str]:
    """The paths in the Path column of the table under "## Where things are"."""
    section = readme.split("## Where things are", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert rows, "README.md has no table under ## Where things are"
    return {path for row in rows for path in re.findall(r"`([^`]+)`", row.split(" | ")[0])}


def rooms() -> set[str]:
    """Each package, module and folder directly under app/ (folders with a slash), and each static file."""
    under_app = {
        f"app/{each.name}/" if each.is_dir() else f"app/{each.name}"
        for each in (ROOT / "app").iterdir()
        if each.name not in IGNORED and (each.is_dir() or each.suffix == ".py")
    }
    return under_app | {f"static/{each.name}" for each in (ROOT / "static").iterdir() if each.is_file()}


def test_every_path_the_table_names_exists():
    missing = sorted(path for path in named_paths((ROOT / "README.md").read_text()) if not (ROOT / path).exists())
    assert missing == []


def test_the_table_names_every_room():
    assert sorted(rooms() - named_paths((ROOT / "README.md").read_text())) == []


def test_a_missing_row_or_a_stale_path_would_show():
    table = "## Where things are\n\n| Path | What |\n| --- | --- |\n| `app/gone.py`, `app/core/` | x |\n"
    assert named_paths(table) == {"app/gone.py", "app/core/"}
    assert "app/core/" in rooms() and "app/web/" in rooms() and "static/style.css" in rooms()
    assert not (ROOT / "app/gone.py").exists()
