"""Whether a page was opened at the configured origin: passkeys work only there.

A browser binds a passkey to the relying party ID, and py_webauthn checks the
origin, so a login page opened at ``http://127.0.0.1:5000`` while the site is
configured for ``http://localhost:5000`` can only fail. The login and
enrollment pages say so and link to the same page at the configured origin.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import current_app, request


@dataclass(frozen=True)
class WrongOrigin:
    """The origin this page was opened at, and the same page at the configured origin."""

    here: str
    origin: str
    url: str


def wrong_origin() -> WrongOrigin | None:
    """A ``WrongOrigin`` when this request's origin is not a configured one, else None."""
    here = f"{request.scheme}://{request.host}".lower()
    if here in (configured.lower() for configured in current_app.config["ORIGINS"]):
        return None
    origin = current_app.config["ORIGIN"]
    return WrongOrigin(here, origin, origin + request.full_path.rstrip("?"))
