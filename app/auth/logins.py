"""Server-side admin logins: the cookie carries a random token, the ``admin_logins`` row its hash."""

from __future__ import annotations

import hashlib
from datetime import timedelta

from flask import current_app, g, request
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from app.core import clock, db
from app.models import Admin, AdminLogin

TOKEN_BYTES = 32
LAST_SEEN_RESOLUTION = timedelta(minutes=1)
# What keeps an account (passkeys, roles, admins, addresses, invites) needs a passkey verified this recently:
# a browser left open, or a stolen cookie, cannot take an account over.
STEP_UP = timedelta(minutes=5)


def cookie_name() -> str:
    """``__Host-`` prefixed when the origin is https, so it is Secure and host-only."""
    secure = current_app.config["ORIGIN"].startswith("https://")
    return "__Host-sundown_admin" if secure else "sundown_admin"


def hash_token(token: str) -> str:
    """The SHA-256 hex digest stored instead of the token."""
    return hashlib.sha256(token.encode()).hexdigest()


def start_login(
    admin_id: int, passkey_id: int | None, browser: str, session: Session | None = None
) -> tuple[str, AdminLogin]:
    """Add a new login row to ``session`` (default: the request's) and return its token.

    The caller commits.
    """
    token = clock.random_bytes(TOKEN_BYTES).hex()
    moment = clock.now()
    row = AdminLogin(
        token_hash=hash_token(token),
        admin_id=admin_id,
        passkey_id=passkey_id,
        browser=browser[:100],
        created_at=moment,
        last_seen_at=moment,
        expires_at=moment + timedelta(seconds=current_app.config["LOGIN_LIFETIME"]),
    )
    (session or db.get_session()).add(row)
    return token, row


def set_cookie(response, token: str) -> None:
    """Send the login token as an HttpOnly, SameSite=Lax cookie (Secure on https)."""
    response.set_cookie(
        cookie_name(),
        token,
        max_age=current_app.config["LOGIN_LIFETIME"],
        path="/",
        secure=current_app.config["ORIGIN"].startswith("https://"),
        httponly=True,
        samesite="Lax",
    )


def clear_cookie(response) -> None:
    """Remove the login cookie from the browser."""
    response.delete_cookie(
        cookie_name(),
        path="/",
        secure=current_app.config["ORIGIN"].startswith("https://"),
        httponly=True,
        samesite="Lax",
    )


def live_login_clause(moment):
    """Logins that are accepted at ``moment``: neither expired nor idle too long."""
    idle = timedelta(seconds=current_app.config["LOGIN_IDLE_TIMEOUT"])
    return (AdminLogin.expires_at > moment) & (AdminLogin.last_seen_at > moment - idle)


def load_admin_from_request(_request=None) -> Admin | None:
    """Resolve the cookie's token to a live login and its admin (Flask-Login's loader)."""
    token = request.cookies.get(cookie_name())
    if not token:
        return None
    moment = clock.now()
    # Its own short transaction, not the request's: on SQLite a request that
    # read here and wrote later would hold a stale snapshot and fail to write.
    with db.transaction() as session:
        row = session.scalar(
            select(AdminLogin).where(AdminLogin.token_hash == hash_token(token), live_login_clause(moment))
        )
        admin = session.get(Admin, row.admin_id) if row is not None else None
    if row is None or admin is None:
        return None
    if moment - row.last_seen_at >= LAST_SEEN_RESOLUTION:
        _touch(row.id, moment)
    g.admin_login = row
    return admin


def _touch(login_id: int, moment) -> None:
    # Its own short transaction, so a read-only request holds no write lock.
    with db.transaction(write=True) as session:
        session.execute(update(AdminLogin).where(AdminLogin.id == login_id).values(last_seen_at=moment))


def current_login() -> AdminLogin | None:
    """The login row of the request's logged-in admin, if any."""
    return g.get("admin_login")


def this_login() -> AdminLogin:
    """The login row of the request's logged-in admin, where the login guard has required one."""
    login = current_login()
    if login is None:
        raise LookupError("no admin is logged in on this request")
    return login


def freshly_verified() -> bool:
    """Whether this browser's login is a passkey verification of the last ``STEP_UP`` (the login ceremony
    requires user verification; logging in again, ``/auth/login?reauth=1``, renews it)."""
    row = current_login()
    return row is not None and row.created_at >= clock.now() - STEP_UP


def end_login(login_id: int) -> None:
    """Delete one login row (logout or revoke)."""
    with db.transaction(write=True) as session:
        session.execute(delete(AdminLogin).where(AdminLogin.id == login_id))
