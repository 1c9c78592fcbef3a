"""A small software authenticator (ES256) that really signs, for ceremony tests.

It builds authenticatorData (RP ID hash, flags UP/UV/AT, sign count, attested
credential data), attestation "none", and signs authenticatorData ||
SHA-256(clientDataJSON), returning the JSON a browser's ``credential.toJSON()``
gives, so the real py_webauthn verifies it. Knobs let a test forge the
origin, the RP ID, the flags, the counter or the userHandle.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
from dataclasses import dataclass, field

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url

UP, UV, AT = 0x01, 0x04, 0x40
AAGUID = bytes(16)


@dataclass
class Credential:
    """One discoverable credential held by the authenticator."""

    credential_id: bytes
    private_key: ec.EllipticCurvePrivateKey
    rp_id: str
    user_handle: bytes
    sign_count: int = 0


@dataclass
class SoftAuthenticator:
    """A platform authenticator in memory; ``counter_step=0`` acts like a synced passkey."""

    counter_step: int = 1
    credentials: list[Credential] = field(default_factory=list)

    def create(
        self,
        options: dict,
        origin: str,
        rp_id: str | None = None,
        uv: bool = True,
        credential_id: bytes | None = None,
    ) -> dict:
        """Answer ``navigator.credentials.create`` options with a new ES256 credential."""
        rp_id = rp_id or options["rp"]["id"]
        credential = Credential(
            credential_id or os.urandom(32),
            ec.generate_private_key(ec.SECP256R1()),
            rp_id,
            base64url_to_bytes(options["user"]["id"]),
        )
        self.credentials.append(credential)
        client_data = _client_data("webauthn.create", options["challenge"], origin)
        auth_data = _auth_data(rp_id, UP | AT | (UV if uv else 0), 0) + _attested(credential)
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})
        return _public_key_credential(
            credential,
            {
                "clientDataJSON": bytes_to_base64url(client_data),
                "attestationObject": bytes_to_base64url(attestation),
                "transports": ["internal"],
            },
        )

    def get(
        self,
        options: dict,
        origin: str,
        *,
        credential: Credential | None = None,
        rp_id: str | None = None,
        uv: bool = True,
        user_handle: bytes | None = None,
        sign_count: int | None = None,
    ) -> dict:
        """Answer ``navigator.credentials.get`` options with a signed assertion."""
        credential = credential or self.credentials[-1]
        if sign_count is None:
            credential.sign_count += self.counter_step
            sign_count = credential.sign_count
        client_data = _client_data("webauthn.get", options["challenge"], origin)
        auth_data = _auth_data(rp_id or credential.rp_id, UP | (UV if uv else 0), sign_count)
        signature = credential.private_key.sign(
            auth_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256())
        )
        handle = credential.user_handle if user_handle is None else user_handle
        return _public_key_credential(
            credential,
            {
                "clientDataJSON": bytes_to_base64url(client_data),
                "authenticatorData": bytes_to_base64url(auth_data),
                "signature": bytes_to_base64url(signature),
                "userHandle": bytes_to_base64url(handle),
            },
        )


def _client_data(kind: str, challenge: str, origin: str) -> bytes:
    return json.dumps(
        {"type": kind, "challenge": challenge, "origin": origin, "crossOrigin": False},
        separators=(",", ":"),
    ).encode()


def _auth_data(rp_id: str, flags: int, sign_count: int) -> bytes:
    return hashlib.sha256(rp_id.encode()).digest() + bytes([flags]) + struct.pack(">I", sign_count)


def _attested(credential: Credential) -> bytes:
    numbers = credential.private_key.public_key().public_numbers()
    cose_key = cbor2.dumps(
        {
            1: 2,
            3: -7,
            -1: 1,
            -2: numbers.x.to_bytes(32, "big"),
            -3: numbers.y.to_bytes(32, "big"),
        }
    )
    credential_id = credential.credential_id
    return AAGUID + struct.pack(">H", len(credential_id)) + credential_id + cose_key


def _public_key_credential(credential: Credential, response: dict) -> dict:
    encoded = bytes_to_base64url(credential.credential_id)
    return {
        "id": encoded,
        "rawId": encoded,
        "type": "public-key",
        "authenticatorAttachment": "platform",
        "clientExtensionResults": {},
        "response": response,
    }


CSRF_META = re.compile(r'<meta name="csrf-token" content="([^"]+)"')


class PasskeyBrowser:
    """A Flask test client with a software authenticator: runs whole ceremonies over HTTP."""

    def __init__(self, app, client, authenticator: SoftAuthenticator | None = None):
        self.app = app
        self.client = client
        self.authenticator = authenticator or SoftAuthenticator()
        self.origin = app.config["ORIGIN"]

    def csrf_token(self, path: str = "/auth/login") -> str:
        """The CSRF token of this browser's Flask session, from a page's meta tag."""
        response = self.client.get(path)
        if response.status_code == 302:  # logged in: the login page sends us on
            response = self.client.get("/admin/account")
        page = response.get_data(as_text=True)
        match = CSRF_META.search(page)
        assert match, f"no csrf-token meta on {path}"
        return match.group(1)

    def post_json(self, url: str, body: dict | None = None, csrf_path: str = "/auth/login"):
        """POST JSON with the CSRF header, as passkey.js does."""
        return self.client.post(url, json=body or {}, headers={"X-CSRFToken": self.csrf_token(csrf_path)})

    def login_options(self) -> dict:
        """Ask for login options; the challenge is bound to this browser."""
        response = self.post_json("/auth/login/options")
        assert response.status_code == 200, response.get_data(as_text=True)
        return response.get_json()

    def login_verify(self, assertion: dict, **extra):
        """Send an assertion to the login verify endpoint."""
        return self.post_json("/auth/login/verify", {"credential": assertion, **extra})

    def login(self, origin: str | None = None, **get_kwargs):
        """A whole login ceremony; returns the verify response."""
        options = self.login_options()
        return self.login_verify(self.authenticator.get(options, origin or self.origin, **get_kwargs))

    def enroll(self, url: str, origin: str | None = None, display_name: str | None = None, **create_kwargs):
        """Open an enrollment link and create a passkey with it (with the ``display_name`` typed on the page,
        when given); returns the verify response."""
        path = url.removeprefix(self.origin)
        page = self.client.get(path)
        if page.status_code != 200:
            return page
        options = self.post_json(f"{path}/options")
        if options.status_code != 200:
            return options
        credential = self.authenticator.create(options.get_json(), origin or self.origin, **create_kwargs)
        chosen = {} if display_name is None else {"display_name": display_name}
        return self.post_json(f"{path}/verify", {"credential": credential, **chosen})

    def add_passkey(self, **create_kwargs):
        """Register another passkey for the logged-in admin (the account page's button)."""
        options = self.post_json("/auth/register/options", csrf_path="/admin/account")
        assert options.status_code == 200, options.get_data(as_text=True)
        credential = self.authenticator.create(options.get_json(), self.origin, **create_kwargs)
        return self.post_json("/auth/register/verify", {"credential": credential}, csrf_path="/admin/account")

    def logout(self):
        """POST the layout's logout form."""
        return self.client.post("/auth/logout", data={"csrf_token": self.csrf_token()})


def invite(app, name: str, recover: bool = False) -> str:
    """``flask admin invite NAME [--recover]``: the printed one-time URL."""
    args = ["admin", "invite", name] + (["--recover"] if recover else [])
    result = app.test_cli_runner().invoke(args=args)
    assert result.exit_code == 0, result.output
    return result.output.strip()
