"""Languages: Flask-Babel's gettext in templates and code, one locale per request.

Every user-visible string goes through ``gettext`` (``_`` in templates).
Operator CLI output stays English.
"""

from __future__ import annotations

from flask import Flask
from flask_babel import Babel

LOCALES = ("en",)


def init_app(app: Flask) -> None:
    """Install gettext in Jinja and in code; English until catalogs land."""
    Babel(app, locale_selector=lambda: "en", default_timezone="UTC")
