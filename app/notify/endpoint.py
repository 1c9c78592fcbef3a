"""``POST /internal/deliver``: send what is due now, for sites with no traffic.

Same bearer token as ``POST /internal/cleanup`` (``SUNDOWN_CLEANUP_TOKEN``);
404 while it is unset. Leases make repeated calls harmless.
"""

from __future__ import annotations

from flask import Blueprint, jsonify

from app.cleanup.endpoint import check_token
from app.notify import deliver
from app.security import csrf

bp = Blueprint("internal_deliver", __name__, url_prefix="/internal")


@bp.post("/deliver")
@csrf.exempt
def deliver_now():
    """Send every due delivery; JSON counts of the attempts by resulting status."""
    check_token()
    summary = deliver.deliver_due()
    return jsonify(attempts=summary.attempts, **summary.counts)
