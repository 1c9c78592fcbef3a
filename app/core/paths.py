"""Where the app's files are: templates, static files, migrations and gunicorn's settings.

From the source tree they sit beside ``app/`` (the layout the project keeps);
an installed wheel carries copies of them in ``app/_files/`` (setup.py puts
them there while building), so the same code runs from both.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent  # app/, two levels up from app/core/paths.py
PACKAGED = PACKAGE / "_files"
ROOT = PACKAGED if PACKAGED.is_dir() else PACKAGE.parent

TEMPLATES = ROOT / "templates"
STATIC = ROOT / "static"
MIGRATIONS = ROOT / "migrations"
ALEMBIC_INI = ROOT / "alembic.ini"
GUNICORN_CONF = ROOT / "gunicorn.conf.py"
