"""The machine-facing endpoints, each behind a bearer token: ``/internal/*`` and ``/metrics``.

* ``POST /internal/cleanup``: run a cleanup if one is due, for sites with no
  traffic; it goes through the same claim as every other trigger, so
  hammering it cannot multiply work.
* ``POST /internal/deliver``: send the notifications that are due now; the
  outbox's leases make repeated calls harmless.
* ``POST /internal/mail``: one raw e-mail (RFC 5322) as the body, whatever
  the ``Content-Type`` says, into its inquiry's thread (``app.conversations``);
  behind ``SUNDOWN_INBOUND_TOKEN``.
* ``GET /metrics``: Prometheus text (``app.core.metrics``).

The cleanup and delivery endpoints take ``SUNDOWN_CLEANUP_TOKEN``, ``/metrics``
takes ``SUNDOWN_METRICS_TOKEN``; an endpoint whose token is unset answers 404.
Callers send ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import hmac

from flask import Blueprint, current_app, jsonify, request
from werkzeug.datastructures import WWWAuthenticate
from werkzeug.exceptions import Forbidden, NotFound, RequestEntityTooLarge, TooManyRequests, Unauthorized

from app.cleanup import ledger, runs
from app.conversations import inbound, parse
from app.core import db, metrics, ratelimit
from app.outbox import deliver
from app.web import intake
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


@bp.post("/internal/mail")
@csrf.exempt
@intake.receives_itself
def mail():
    """Store one raw e-mail: 202 with where it went; 413 over the size limit, 422 unreadable, 429 too many."""
    require_bearer("INBOUND_TOKEN", "mail")
    config = current_app.config
    try:
        ratelimit.enforce("inbound", "all", ratelimit.parse_limits(config["INBOUND_RATE_LIMITS"]))
    except TooManyRequests:
        metrics.count_inbound_refused("rate_limited")
        raise
    try:
        raw = _whole_body(max(0, config["INBOUND_MAX_BYTES"] - config["MAX_CONTENT_LENGTH"]))
    except RequestEntityTooLarge:
        metrics.count_inbound_refused("too_large")
        raise
    try:
        stored = inbound.accept(raw)
    except inbound.TooLarge:
        return jsonify(error="The message is larger than SUNDOWN_INBOUND_MAX_BYTES."), 413
    except parse.Unreadable as refused:
        return jsonify(error=f"The message was refused: {refused.args[0]}."), 422
    return jsonify(outcome=stored.outcome, kind=stored.kind, inquiry=stored.inquiry_id), 202


def _whole_body(allowance: int) -> bytes:
    """The request's body, spooled to a file past MAX_CONTENT_LENGTH, up to the inbound limit: 413 beyond it.

    The whole body is the message: form-encoded (curl's default type) or message/rfc822 alike.
    """
    intake.receive_with_files(allowance)
    return request.get_data(cache=False, parse_form_data=False)


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
