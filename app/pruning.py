"""The pruner (being built): read predicate, retention and trigger hook."""

from __future__ import annotations

import logging

from flask import Flask
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Setting

log = logging.getLogger(__name__)

DEFAULT_RETENTION_DAYS = 180
MAX_RETENTION_DAYS = 3650


def init_app(app: Flask) -> None:
    """Nothing to set up yet."""


def trigger(name: str) -> None:
    """Ask for a prune after the current response (not wired yet)."""


def retention_days(session: Session) -> int:
    """The stored retention in days; 180 when missing or invalid (a warning for invalid)."""
    raw = session.scalar(select(Setting.value).where(Setting.key == "retention_days"))
    if raw is None:
        return DEFAULT_RETENTION_DAYS
    try:
        days = int(raw)
    except ValueError:
        days = 0
    if not 1 <= days <= MAX_RETENTION_DAYS:
        log.warning("invalid stored retention_days; using %d", DEFAULT_RETENTION_DAYS)
        return DEFAULT_RETENTION_DAYS
    return days
