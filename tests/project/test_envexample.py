""".env.example lists every setting the app reads, with its default (no database)."""

from __future__ import annotations

import re
from pathlib import Path

from app import config
from devtools import envexample

ROOT = Path(__file__).resolve().parents[2]


def test_env_example_is_current():
    text = (ROOT / ".env.example").read_text()
    assert text == envexample.render(), "regenerate: python -m devtools.envexample > .env.example"


def test_env_example_names_every_setting_the_app_checks():
    listed = set(re.findall(r"^#? ?SUNDOWN_([A-Z_]+)=", (ROOT / ".env.example").read_text(), re.M))
    checked = {name for name, _, _ in config.SETTINGS} | {"ENV", "ORIGIN", "RP_ID"}
    assert checked <= listed, sorted(checked - listed)
