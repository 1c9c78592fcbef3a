"""How the admin pages show messages (Jinja filters); times, dates, numbers and days are app.i18n's."""

from __future__ import annotations

from zoneinfo import ZoneInfo

from flask import current_app

from app.admin import bp

FIRST_LINE_MAX = 120


def local_zone() -> ZoneInfo:
    """The configured display time zone (``TIME_ZONE``, an IANA name such as Europe/Paris)."""
    return ZoneInfo(current_app.config["TIME_ZONE"])


@bp.app_template_filter("first_line")
def first_line(message: str) -> str:
    """The message's first non-empty line, shortened for the inbox table."""
    line = next((part.strip() for part in message.splitlines() if part.strip()), "")
    if len(line) > FIRST_LINE_MAX:
        return line[: FIRST_LINE_MAX - 1] + "…"
    return line
