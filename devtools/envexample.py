"""Write .env.example and README.md's settings table from the records in app/settings.py.

``make env-example`` (``python -m devtools.envexample``) rewrites both; run it
after adding or changing a setting. tests/project/test_envexample.py fails
while either differs from what the records give.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from app.settings import SETTINGS, Variable

ROOT = Path(__file__).resolve().parents[1]
ENV_EXAMPLE = ROOT / ".env.example"
README = ROOT / "README.md"
HEADER = """\
# Sundown's settings: each with what it must be, then its default (commented out) or an example.
# Generated from app/settings.py by `make env-example`; README.md says what each means.
# Copy it to .env and edit. Required in production: SUNDOWN_SECRET_KEY, SUNDOWN_ORIGIN and SUNDOWN_RP_ID.
# Values are read as JSON where they parse as JSON ("3600" is a number).
"""
# README.md's table sits between these two lines.
TABLE_START = "<!-- settings: generated from app/settings.py by `make env-example`; do not edit by hand -->"
TABLE_END = "<!-- end of settings -->"


def as_text(value: Any) -> str:
    """A default as an environment variable would hold it."""
    return value if isinstance(value, str) else json.dumps(value)


def env_line(variable: Variable) -> str:
    """One setting in .env.example: what it must be, then the variable, set only if every deployment sets it."""
    value = variable.example if variable.default is None else as_text(variable.default)
    prefix = "" if variable.required or variable.deployment_sets else "# "
    return f"# {variable.expected}\n{prefix}SUNDOWN_{variable.name}={value}\n"


def render() -> str:
    """The text of .env.example."""
    return HEADER + "".join(f"\n{env_line(variable)}" for variable in SETTINGS)


def table_row(variable: Variable) -> str:
    """One setting in README.md's table."""
    default = variable.shown or ("unset" if variable.default is None else f"`{as_text(variable.default)}`")
    expected = variable.expected[0].upper() + variable.expected[1:]
    return f"| `SUNDOWN_{variable.name}` | {default} | {expected}. | {variable.meaning} |"


def table() -> str:
    """README.md's settings table, between its markers."""
    rows = [TABLE_START, "| Variable | Default | Value | Meaning |", "| --- | --- | --- | --- |"]
    return "\n".join([*rows, *(table_row(variable) for variable in SETTINGS), TABLE_END])


def readme_table(text: str) -> str:
    """The settings table as README.md has it now, markers included ("" when they are missing)."""
    found = re.search(f"{re.escape(TABLE_START)}.*?{re.escape(TABLE_END)}", text, re.S)
    return found.group(0) if found else ""


def main() -> None:
    """Rewrite .env.example and the table in README.md."""
    ENV_EXAMPLE.write_text(render())
    text = README.read_text()
    current = readme_table(text)
    if not current:
        raise SystemExit(f"README.md has no settings table between {TABLE_START!r} and {TABLE_END!r}")
    README.write_text(text.replace(current, table()))


if __name__ == "__main__":
    main()
