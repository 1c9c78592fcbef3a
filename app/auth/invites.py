"""One-time enrollment links: a new admin, or a recovery passkey for an existing one.

The token (32 random bytes) appears only in the printed URL; the
``one_time_secrets`` row is named by its SHA-256, so a database reader cannot
redeem it. Redemption deletes the row in the transaction that creates the
passkey, so a link works once.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import timedelta

from flask import current_app
from flask_babel import gettext as _
from sqlalchemy import delete, select
from sqlalchemy.orm import Session
from webauthn.helpers import bytes_to_base64url

from app.core import clock
from app.models import Admin, AdminRole, OneTimeSecret

TOKEN_BYTES = 32
KIND = "invite"
FIRST_ADMIN_NAME = "admin"
MAX_NAME_LENGTH = 100


class InviteError(ValueError):
    """The invite cannot be made; the message says why."""


@dataclass(frozen=True)
class Invite:
    """What an enrollment link grants: a passkey for ``name`` (existing admin if ``admin_id``); a new admin's
    role and forms."""

    identifier: str
    name: str
    admin_id: int | None
    role: AdminRole = AdminRole.OWNER
    form_ids: tuple[int, ...] = ()


def identifier_for(token: str) -> str:
    """The ``one_time_secrets.identifier`` of a token: its SHA-256, never the token."""
    return f"{KIND}:{hashlib.sha256(token.encode()).hexdigest()}"


def create(
    session: Session,
    name: str,
    recover: bool = False,
    role: AdminRole = AdminRole.OWNER,
    form_ids: tuple[int, ...] = (),
) -> str:
    """Store a new invite for ``name`` (caller commits) and return its enrollment URL; a new admin gets
    ``role`` and, unless an owner, the forms ``form_ids``."""
    name = " ".join(name.split())
    if not name or len(name) > MAX_NAME_LENGTH:
        raise InviteError(_("The name must be 1 to %(max)s characters.", max=MAX_NAME_LENGTH))
    admin = session.scalar(select(Admin).where(Admin.name == name))
    if recover and admin is None:
        raise InviteError(_("There is no admin named %(name)s to recover.", name=repr(name)))
    if not recover and admin is not None:
        raise InviteError(
            _(
                "An admin named %(name)s already exists; to give them a new passkey, an operator"
                " runs: flask admin invite --recover NAME",
                name=repr(name),
            )
        )
    token = bytes_to_base64url(clock.random_bytes(TOKEN_BYTES))
    moment = clock.now()
    context = {
        "name": name,
        "admin_id": admin.id if admin else None,
        "role": AdminRole(role).value,
        "form_ids": [] if role == AdminRole.OWNER else sorted(form_ids),
    }
    session.add(
        OneTimeSecret(
            identifier=identifier_for(token),
            value=json.dumps({"type": KIND, "context": context}),
            created_at=moment,
            expires_at=moment + timedelta(seconds=current_app.config["INVITE_TTL"]),
        )
    )
    return f"{current_app.config['ORIGIN']}/auth/enroll/{token}"


def find(session: Session, token: str) -> Invite | None:
    """The unexpired, unused invite for ``token``, without using it."""
    raw = session.scalar(
        select(OneTimeSecret.value).where(
            OneTimeSecret.identifier == identifier_for(token),
            OneTimeSecret.expires_at > clock.now(),
        )
    )
    return _parse(identifier_for(token), raw)


def redeem(session: Session, invite: Invite) -> bool:
    """Delete the invite in the caller's transaction; False if it was used or expired meanwhile."""
    raw = session.scalar(
        delete(OneTimeSecret)
        .where(OneTimeSecret.identifier == invite.identifier, OneTimeSecret.expires_at > clock.now())
        .returning(OneTimeSecret.value)
    )
    return raw is not None


def first_admin_link(session: Session) -> str | None:
    """A fresh invite for the first admin when there is no admin yet; else None."""
    if session.scalar(select(Admin.id).limit(1)) is not None:
        return None
    return create(session, FIRST_ADMIN_NAME)


def _parse(identifier: str, raw: str | None) -> Invite | None:
    if raw is None:
        return None
    value = json.loads(raw)
    if value.get("type") != KIND:
        return None
    context = value["context"]
    # A link made before roles made an owner, as every admin was then.
    return Invite(
        identifier,
        context["name"],
        context.get("admin_id"),
        AdminRole(context.get("role", "owner")),
        tuple(context.get("form_ids", ())),
    )
