"""The external prune trigger, for sites with no traffic: ``POST /internal/prune``.

Disabled (404) unless ``SUNDOWN_PRUNE_TOKEN`` is set; callers send
``Authorization: Bearer <token>``. It goes through the same claim as every
other trigger, so hammering it cannot multiply work.
"""

from __future__ import annotations

import hmac

from flask import Blueprint, current_app, jsonify, request
from werkzeug.datastructures import WWWAuthenticate
from werkzeug.exceptions import Forbidden, NotFound, Unauthorized

from app import db, pruning
from app.security import csrf

bp = Blueprint("internal", __name__, url_prefix="/internal")


@bp.post("/prune")
@csrf.exempt
def prune():
    """Run a prune if one is due; return the run as JSON (``ran: false`` when not due)."""
    _check_token()
    run = pruning.run_if_due("internal")
    if run is None:
        due = pruning.next_due_at(db.get_session())
        return jsonify(ran=False, next_due_at=due.isoformat() if due else None)
    return jsonify(ran=True, run=pruning.as_dict(run))


def _check_token() -> None:
    expected = current_app.config.get("PRUNE_TOKEN")
    if not expected:
        raise NotFound()
    scheme, _, supplied = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not supplied:
        raise Unauthorized(
            "Send Authorization: Bearer <SUNDOWN_PRUNE_TOKEN>.",
            www_authenticate=WWWAuthenticate("bearer", {"realm": "prune"}),
        )
    if not hmac.compare_digest(supplied.strip().encode(), str(expected).encode()):
        raise Forbidden("The prune token is wrong.")
