"""The after-response trigger: views ask for a cleanup, it runs once the response is out.

Views call ``trigger(name)``. After the response has been handed to the
server (``Response.call_on_close``), the run starts if this process's memory
says the claim may be due; the claim in the database decides.
"""

from __future__ import annotations

import logging
from functools import partial

from flask import Flask, current_app, g

from app.cleanup import runs

log = logging.getLogger(__name__)


def init_app(app: Flask) -> None:
    """Look for a requested cleanup after every request."""
    app.after_request(_hand_off)


def trigger(name: str) -> None:
    """Ask for a cleanup after the current response, named ``name`` in the ledger."""
    g.cleanup_trigger = name


def _hand_off(response):
    name = g.pop("cleanup_trigger", None)
    if name is not None and runs.is_due():
        response.call_on_close(partial(_run_quietly, current_app._get_current_object(), name))
    return response


def _run_quietly(app: Flask, name: str) -> None:
    """Run in a fresh app context after the response; log failures, never raise."""
    with app.app_context():
        try:
            runs.run_if_due(name)
        except Exception:  # noqa: BLE001 - the response is already sent; log and move on
            log.exception("cleanup after %s failed", name)
