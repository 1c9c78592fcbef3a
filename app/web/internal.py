"""The machine-facing endpoints, each behind a bearer token: ``/internal/*`` and ``/metrics``.

* ``POST /internal/cleanup``: run a cleanup if one is due, for sites with no
  traffic; it goes through the same claim as every other trigger, so
  hammering it cannot multiply work.
* ``POST /internal/deliver``: send the notifications that are due now; the
  outbox's leases make repeated calls harmless.
* ``GET /metrics``: Prometheus text (``app.core.metrics``).

Both ``/internal`` endpoints take ``SUNDOWN_CLEANUP_TOKEN``, ``/metrics``
takes ``SUNDOWN_METRICS_TOKEN``; an endpoint whose token is unset answers 404.
Callers send ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import hmac

from flask import Blueprint, current_app, jsonify, request
from werkzeug.datastructures import WWWAuthenticate
from werkzeug.exceptions import Forbidden, NotFound, Unauthorized

from app.cleanup import ledger, runs
from app.core import db, metrics
from app.outbox import deliver
from app.web.security import csrf

bp = Blueprint("internal", __name__)


@bp.post("/internal/cleanup")
@csrf.exempt
def cleanup():
    """Run a cleanup if one is due; return the run as JSON (``ran: false`` when not due)."""
    require_bearer("CLEANUP_TOKEN", "cleanup")
    row = runs.run_if_due("internal")
    if row is None:
        due = runs.next_due_at(db.get_session())
        return jsonify(ran=False, next_due_at=due.isoformat() if due else None)
    return jsonify(ran=True, run=ledger.as_dict(row))


@bp.post("/internal/deliver")
@csrf.exempt
def deliver_now():
    """Send every due delivery; JSON counts of the attempts by resulting status."""
    require_bearer("CLEANUP_TOKEN", "cleanup")
    summary = deliver.deliver_due()
    return jsonify(attempts=summary.attempts, **summary.counts)


@bp.get("/metrics")
def metrics_text():
    """The counters of every worker, then the cleanup's gauges, in Prometheus text format."""
    require_bearer("METRICS_TOKEN", "metrics")
    return metrics.exposition()


def require_bearer(setting: str, realm: str) -> None:
    """The request's bearer token must equal the ``setting``: 404 when it is unset, 401 without it, 403 when wrong."""
    expected = current_app.config.get(setting)
    if not expected:
        raise NotFound()
    scheme, _, supplied = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not supplied:
        raise Unauthorized(
            f"Send Authorization: Bearer <SUNDOWN_{setting}>.",
            www_authenticate=WWWAuthenticate("bearer", {"realm": realm}),
        )
    if not hmac.compare_digest(supplied.strip().encode(), str(expected).encode()):
        raise Forbidden(f"The {realm} token is wrong.")
