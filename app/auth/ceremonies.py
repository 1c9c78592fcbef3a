"""WebAuthn options and verification with py_webauthn; relying party from configuration only.

The RP ID and origins come from ``RP_ID`` and ``ORIGINS``, never from request
headers, so a forged ``Host`` cannot change what a signature must cover.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import current_app
from flask_babel import gettext as _
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import base64url_to_bytes, parse_authenticator_data
from webauthn.helpers.cose import COSEAlgorithmIdentifier
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AttestationConveyancePreference,
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)
from werkzeug.exceptions import BadRequest

from app.auth import challenges
from app.models import Passkey

log = logging.getLogger(__name__)

ALGORITHMS = [
    COSEAlgorithmIdentifier.EDDSA,
    COSEAlgorithmIdentifier.ECDSA_SHA_256,
    COSEAlgorithmIdentifier.RSASSA_PKCS1_v1_5_SHA_256,
]
MAX_CREDENTIAL_ID_BYTES = 1023


class CeremonyFailed(BadRequest):
    """A WebAuthn response was refused (400 with a readable message)."""


def login_options() -> str:
    """Username-less login options (JSON) with a fresh, stored challenge."""
    options = generate_authentication_options(
        rp_id=current_app.config["RP_ID"],
        challenge=challenges.issue(challenges.LOGIN),
        timeout=_timeout_ms(),
        user_verification=UserVerificationRequirement.REQUIRED,
    )
    return options_to_json(options)


def registration_options(name: str, user_handle: bytes, existing: list[Passkey], context: dict[str, Any]) -> str:
    """Options (JSON) to create a discoverable, user-verified passkey for ``name``."""
    options = generate_registration_options(
        rp_id=current_app.config["RP_ID"],
        rp_name=current_app.config["RP_NAME"],
        user_name=name,
        user_id=user_handle,
        user_display_name=name,
        challenge=challenges.issue(challenges.REGISTRATION, context),
        timeout=_timeout_ms(),
        attestation=AttestationConveyancePreference.NONE,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.REQUIRED,
            user_verification=UserVerificationRequirement.REQUIRED,
        ),
        exclude_credentials=[PublicKeyCredentialDescriptor(id=p.credential_id) for p in existing],
        supported_pub_key_algs=ALGORITHMS,
    )
    return options_to_json(options)


def verify_registration(credential: object, ceremony: challenges.Ceremony):
    """Verify a registration response against ``ceremony``; raise CeremonyFailed if refused."""
    if not isinstance(credential, dict):
        raise CeremonyFailed(_("The passkey response is malformed."))
    try:
        verified = verify_registration_response(
            credential=credential,
            expected_challenge=ceremony.challenge,
            expected_rp_id=current_app.config["RP_ID"],
            expected_origin=current_app.config["ORIGINS"],
            require_user_verification=True,
            supported_pub_key_algs=ALGORITHMS,
        )
    except WebAuthnException as error:
        log.info("passkey registration refused: %s", error)
        raise CeremonyFailed(_("The new passkey could not be verified. Please try again.")) from error
    if len(verified.credential_id) > MAX_CREDENTIAL_ID_BYTES:
        raise CeremonyFailed(_("This passkey's credential ID is too long to be accepted."))
    return verified


def verify_login(credential: dict, ceremony: challenges.Ceremony, passkey: Passkey):
    """Verify an assertion by ``passkey``; a sign-count regression is logged as a possible clone."""
    try:
        return verify_authentication_response(
            credential=credential,
            expected_challenge=ceremony.challenge,
            expected_rp_id=current_app.config["RP_ID"],
            expected_origin=current_app.config["ORIGINS"],
            credential_public_key=passkey.public_key,
            credential_current_sign_count=passkey.sign_count,
            require_user_verification=True,
        )
    except WebAuthnException as error:
        if sign_count_regressed(credential, passkey.sign_count):
            log.warning(
                "possible cloned authenticator: passkey %d (admin %d) sent sign count not above %d; login refused",
                passkey.id,
                passkey.admin_id,
                passkey.sign_count,
            )
        else:
            log.info("passkey login refused: %s", error)
        raise CeremonyFailed(_("The passkey could not be verified. Please try again.")) from error


def sign_count_regressed(credential: dict, stored: int) -> bool:
    """Whether the assertion's sign count fails to exceed ``stored`` (0 and 0 is fine)."""
    try:
        data = base64url_to_bytes(credential["response"]["authenticatorData"])
        received = parse_authenticator_data(data).sign_count
    except (KeyError, TypeError, ValueError, WebAuthnException):
        return False
    return (received > 0 or stored > 0) and received <= stored


def credential_id(credential: dict) -> bytes:
    """The raw credential ID of a response, or CeremonyFailed when malformed or too long."""
    raw = credential.get("rawId") if isinstance(credential, dict) else None
    if not isinstance(raw, str):
        raise CeremonyFailed(_("The passkey response is malformed."))
    try:
        value = base64url_to_bytes(raw)
    except ValueError as error:
        raise CeremonyFailed(_("The passkey response is malformed.")) from error
    if not value or len(value) > MAX_CREDENTIAL_ID_BYTES:
        raise CeremonyFailed(_("The passkey response is malformed."))
    return value


def user_handle(credential: dict) -> bytes | None:
    """The assertion's ``userHandle`` bytes, or None when absent or malformed."""
    response = credential.get("response")
    raw = response.get("userHandle") if isinstance(response, dict) else None
    if not isinstance(raw, str) or not raw:
        return None
    try:
        return base64url_to_bytes(raw)
    except ValueError:
        return None


def _timeout_ms() -> int:
    return int(current_app.config["CHALLENGE_TTL"]) * 1000
