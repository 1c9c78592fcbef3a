"""A logged-in admin without a passkey ceremony: the row a login leaves behind.

The row is made by the app's own ``logins.start_login`` (its clock, its
lifetime, its token), in the app under test or, for a real server, in an app
built in this process on the server's database. The passkey ceremonies
themselves are tested in ``tests/auth/``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from flask import Flask

from app import create_app
from app.auth import logins
from app.core import db
from app.models import Admin

SITE_SETTINGS = ("ENV", "DATABASE_URL", "SECRET_KEY", "ORIGIN", "RP_ID")


@dataclass(frozen=True)
class Login:
    """A live login: its admin, and the cookie (name and token) that carries it."""

    admin: Admin
    cookie: str
    token: str

    @property
    def cookie_header(self) -> str:
        """The ``Cookie`` header value a client sends."""
        return f"{self.cookie}={self.token}"


def log_in(app: Flask, name: str = "Ada", *, admin: Admin | None = None, browser: str = "Chrome 156 on Linux") -> Login:
    """Start a login for ``admin``, or for a new admin called ``name``; commit it."""
    with app.test_request_context():
        session = db.get_session()
        if admin is None:
            admin = Admin(name=name, user_handle=os.urandom(64))
            session.add(admin)
            session.flush()
        token, _row = logins.start_login(admin.id, None, browser)
        session.commit()
        return Login(admin, logins.cookie_name(), token)


def site_settings(env: dict[str, str]) -> dict[str, str]:
    """The overrides that name the site and the database of a server started with ``env``."""
    return {key: env[f"SUNDOWN_{key}"] for key in SITE_SETTINGS if f"SUNDOWN_{key}" in env}


@contextmanager
def app_for(env: dict[str, str]) -> Iterator[Flask]:
    """The app of a server started with ``env``, built in this process; its connections close after."""
    app = create_app(site_settings(env))
    try:
        yield app
    finally:
        db.engine_of(app).dispose()


def log_in_to(env: dict[str, str], name: str = "Ada", *, browser: str = "test") -> Login:
    """``log_in`` on the database of a server started with ``env`` (its ``SUNDOWN_*`` settings)."""
    with app_for(env) as app:
        return log_in(app, name, browser=browser)
