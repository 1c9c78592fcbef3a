"""``GET /healthz`` and ``flask health``: does the database answer, and is its schema at head?

``/healthz`` also says whether the cleanup is overdue (``app.cleanup.alarm``):
a field for monitors, the status stays 200. It is an ordinary request that
may claim a cleanup after its response, so an uptime monitor keeps an idle
site's deletions on time.
"""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify
from sqlalchemy import select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from app import cleanup
from app.cleanup import alarm
from app.core import db, migrate

bp = Blueprint("health", __name__)


def checks() -> dict[str, bool]:
    """``database``: a new connection answers; ``migrations``: the schema is at Alembic's head.

    A database that does not answer a new connection is reported within
    ``DB_CONNECT_TIMEOUT`` seconds.
    """
    results = {"database": False, "migrations": False}
    try:
        with db.get_engine().connect() as connection:
            connection.execute(select(1))
        results["database"] = True
        results["migrations"] = migrate.current_revision(db.get_engine()) == migrate.head_revision()
    except Exception:  # noqa: BLE001 - any failure means "not healthy"
        current_app.logger.warning("health check failed", exc_info=True)
    return results


@bp.get("/healthz")
def healthz():
    """200 when every check passes; 503 otherwise. ``cleanup``: ``ok`` or ``overdue`` (``unknown`` with no
    database); the response may be followed by a cleanup run, like any ordinary request's."""
    results = checks()
    healthy = all(results.values())
    state = "unknown"
    if healthy:
        state = _cleanup_state()
        cleanup.trigger("healthz")
    return jsonify(ok=healthy, cleanup=state, **results), 200 if healthy else 503


def _cleanup_state() -> str:
    """``ok`` or ``overdue``; ``unknown`` if the database stopped answering since the checks."""
    try:
        return "overdue" if alarm.overdue_now().overdue else "ok"
    except (DBAPIError, PoolTimeout):
        current_app.logger.warning("health: the cleanup alarm could not be read", exc_info=True)
        return "unknown"
