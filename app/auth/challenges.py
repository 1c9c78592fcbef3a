"""Single-use WebAuthn challenges stored in the ``one_time_secrets`` table.

A challenge row is named ``<ceremony>:<nonce>``; the nonce lives in Flask's
signed session cookie, which binds the challenge to the browser that asked
for it. Consuming is ONE ``DELETE ... RETURNING`` that also checks the
ceremony type (part of the name) and the expiry, so two concurrent verifies
of the same challenge cannot both get it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from flask import current_app
from flask import session as browser_session
from sqlalchemy import delete
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url

from app.core import clock, db
from app.models import OneTimeSecret

CHALLENGE_BYTES = 32
NONCE_BYTES = 16
COOKIE_KEY = "ceremony"
LOGIN = "login"
REGISTRATION = "registration"


@dataclass(frozen=True)
class Ceremony:
    """A consumed challenge and the context stored with it."""

    kind: str
    challenge: bytes
    context: dict[str, Any]


def issue(kind: str, context: dict[str, Any] | None = None) -> bytes:
    """Store a fresh challenge for ``kind``, bind it to this browser and return it."""
    challenge = clock.random_bytes(CHALLENGE_BYTES)
    nonce = clock.random_bytes(NONCE_BYTES).hex()
    moment = clock.now()
    value = {"type": kind, "challenge": bytes_to_base64url(challenge), "context": context or {}}
    with db.transaction(write=True) as session:
        session.add(
            OneTimeSecret(
                identifier=f"{kind}:{nonce}",
                value=json.dumps(value),
                created_at=moment,
                expires_at=moment + timedelta(seconds=current_app.config["CHALLENGE_TTL"]),
            )
        )
    # A new ceremony replaces any earlier one; the abandoned row expires.
    browser_session[COOKIE_KEY] = nonce
    return challenge


def consume(kind: str) -> Ceremony | None:
    """Take this browser's unexpired ``kind`` challenge, deleting it; None if there is none."""
    nonce = browser_session.pop(COOKIE_KEY, None)
    if not isinstance(nonce, str):
        return None
    with db.transaction(write=True) as session:
        raw = session.scalar(
            delete(OneTimeSecret)
            .where(
                OneTimeSecret.identifier == f"{kind}:{nonce}",
                OneTimeSecret.expires_at > clock.now(),
            )
            .returning(OneTimeSecret.value)
        )
    if raw is None:
        return None
    value = json.loads(raw)
    if value.get("type") != kind:
        return None
    return Ceremony(kind, base64url_to_bytes(value["challenge"]), value.get("context") or {})
