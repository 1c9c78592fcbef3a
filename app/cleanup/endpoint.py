"""The external cleanup trigger, for sites with no traffic: ``POST /internal/cleanup``.

Disabled (404) unless ``SUNDOWN_CLEANUP_TOKEN`` is set; callers send
``Authorization: Bearer <token>``. It goes through the same claim as every
other trigger, so hammering it cannot multiply work.
"""

from __future__ import annotations

import hmac

from flask import Blueprint, current_app, jsonify, request
from werkzeug.datastructures import WWWAuthenticate
from werkzeug.exceptions import Forbidden, NotFound, Unauthorized

from app import db
from app.cleanup import ledger, runs
from app.security import csrf

bp = Blueprint("internal", __name__, url_prefix="/internal")


@bp.post("/cleanup")
@csrf.exempt
def cleanup():
    """Run a cleanup if one is due; return the run as JSON (``ran: false`` when not due)."""
    check_token()
    row = runs.run_if_due("internal")
    if row is None:
        due = runs.next_due_at(db.get_session())
        return jsonify(ran=False, next_due_at=due.isoformat() if due else None)
    return jsonify(ran=True, run=ledger.as_dict(row))


def check_token() -> None:
    """The internal endpoints' bearer token (``SUNDOWN_CLEANUP_TOKEN``).

    404 when unset, 401 without it, 403 when wrong.
    """
    expected = current_app.config.get("CLEANUP_TOKEN")
    if not expected:
        raise NotFound()
    scheme, _, supplied = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not supplied:
        raise Unauthorized(
            "Send Authorization: Bearer <SUNDOWN_CLEANUP_TOKEN>.",
            www_authenticate=WWWAuthenticate("bearer", {"realm": "cleanup"}),
        )
    if not hmac.compare_digest(supplied.strip().encode(), str(expected).encode()):
        raise Forbidden("The cleanup token is wrong.")
