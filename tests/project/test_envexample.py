"""One record per setting (app/settings.py): .env.example and README.md's table are generated from them.

No database: these read files and the records only.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app import config
from app.settings import BY_NAME, SETTINGS
from devtools import envexample

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = "regenerate both: make env-example (python -m devtools.envexample)"
# Keys the app reads that are no environment setting: derived from one (ORIGINS), injected by tests.
NOT_SETTINGS = {"ORIGINS", *config.INJECTED}


def test_env_example_is_what_the_records_give():
    assert (ROOT / ".env.example").read_text() == envexample.render(), REGENERATE


def test_readme_settings_table_is_what_the_records_give():
    current = envexample.readme_table((ROOT / "README.md").read_text())
    assert current, f"README.md lost its markers: {envexample.TABLE_START!r} ... {envexample.TABLE_END!r}"
    assert current == envexample.table(), REGENERATE


def test_a_changed_record_shows_in_both_files():
    # The comparison above can fail: a record's words reach both generated texts.
    changed = [envexample.table_row(v).replace(v.meaning, "changed") for v in SETTINGS]
    assert changed != [envexample.table_row(v) for v in SETTINGS]
    assert all(f"SUNDOWN_{v.name}=" in envexample.render() for v in SETTINGS)


def test_every_setting_the_app_reads_has_a_record():
    read = set()
    for path in (ROOT / "app").rglob("*.py"):
        read |= set(re.findall(r"config(?:\.get\(|\[)\"([A-Z][A-Z0-9_]+)\"", path.read_text()))
    assert read - NOT_SETTINGS <= set(BY_NAME), sorted(read - NOT_SETTINGS - set(BY_NAME))


def test_names_are_unique_and_defaults_are_exactly_the_records():
    assert len(BY_NAME) == len(SETTINGS)
    assert set(config.DEFAULTS) == set(BY_NAME) | set(config.INJECTED)


@pytest.mark.parametrize("variable", [v for v in SETTINGS if v.check], ids=lambda v: v.name)
def test_each_default_and_example_passes_its_own_check(variable):
    for value in (variable.default, variable.example or None):
        if value is not None:
            variable.check(value)
