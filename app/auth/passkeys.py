"""An admin's passkeys: store a verified one, record a login, rename, remove."""

from __future__ import annotations

from datetime import datetime

from flask_babel import gettext as _
from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from app.core import db
from app.models import Admin, AdminLogin, Passkey

MAX_NAME_LENGTH = 100


class PasskeyError(ValueError):
    """A passkey change was refused; the message says why."""


def of_admin(session: Session, admin_id: int) -> list[Passkey]:
    """The admin's passkeys, oldest first."""
    return list(session.scalars(select(Passkey).where(Passkey.admin_id == admin_id).order_by(Passkey.id)))


def by_credential_id(session: Session, credential_id: bytes) -> Passkey | None:
    """The passkey with this credential ID, if registered."""
    return session.scalar(select(Passkey).where(Passkey.credential_id == credential_id))


def add(session: Session, admin_id: int, verified, transports: list[str], name: str, moment: datetime) -> Passkey:
    """Add a verified registration as a passkey (caller commits).

    A credential ID registered before fails on the unique index at flush: no
    read first, so the caller's transaction starts with a write (SQLite).
    """
    passkey = Passkey(
        admin_id=admin_id,
        credential_id=verified.credential_id,
        public_key=verified.credential_public_key,
        sign_count=verified.sign_count,
        transports=",".join(t for t in transports if isinstance(t, str))[:200],
        aaguid=str(verified.aaguid)[:36],
        backed_up=bool(verified.credential_backed_up),
        device_type=str(getattr(verified.credential_device_type, "value", ""))[:32],
        name=clean_name(name) or "Passkey",
        created_at=moment,
    )
    session.add(passkey)
    return passkey


def record_use(session: Session, passkey: Passkey, sign_count: int, backed_up: bool, moment: datetime) -> bool:
    """Store the new sign count if it still advances (or stays 0); False if another login won."""
    # Conditional, so two logins racing with one counter value cannot both pass.
    advances = Passkey.sign_count < sign_count if sign_count > 0 else Passkey.sign_count == 0
    result = session.execute(
        update(Passkey)
        .where(Passkey.id == passkey.id, advances)
        .values(sign_count=sign_count, backed_up=backed_up, last_used_at=moment)
        .execution_options(synchronize_session=False)
    )
    return db.rowcount(result) == 1


def rename(session: Session, admin_id: int, passkey_id: int, name: str) -> None:
    """Rename one of the admin's passkeys (caller commits)."""
    name = clean_name(name)
    if not name:
        raise PasskeyError(_("A passkey name must be 1 to %(max)s characters.", max=MAX_NAME_LENGTH))
    result = session.execute(
        update(Passkey)
        .where(Passkey.id == passkey_id, Passkey.admin_id == admin_id)
        .values(name=name)
        .execution_options(synchronize_session=False)
    )
    if db.rowcount(result) != 1:
        raise PasskeyError(_("No such passkey."))


def remove(session: Session, admin_id: int, passkey_id: int) -> None:
    """Remove a passkey and the logins it created; never the admin's last one (caller commits)."""
    # Write first: a no-op update locks the admin row on PostgreSQL and takes
    # the write lock on SQLite, so two removals cannot both see "two left".
    session.execute(
        update(Admin).where(Admin.id == admin_id).values(id=Admin.id).execution_options(synchronize_session=False)
    )
    count = session.execute(select(func.count()).where(Passkey.admin_id == admin_id)).scalar_one()
    owned = session.scalar(select(Passkey.id).where(Passkey.id == passkey_id, Passkey.admin_id == admin_id))
    if owned is None:
        raise PasskeyError(_("No such passkey."))
    if count <= 1:
        raise PasskeyError(_("You cannot remove your last passkey: add another one first."))
    session.execute(delete(AdminLogin).where(AdminLogin.passkey_id == passkey_id))
    session.execute(delete(Passkey).where(Passkey.id == passkey_id))


def clean_name(name: str | None) -> str:
    """``name`` with whitespace collapsed, cut to the column's length."""
    return " ".join((name or "").split())[:MAX_NAME_LENGTH]
