"""Registration ceremonies: redeeming an enrollment link, and adding a passkey when logged in."""

from __future__ import annotations

from flask import jsonify, render_template, request
from flask_babel import gettext as _
from flask_login import current_user, login_required
from sqlalchemy.exc import IntegrityError
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url
from werkzeug.exceptions import BadRequest, Conflict, Forbidden, Gone

from app import audit
from app.auth import bp, ceremonies, challenges, invites, logins, origins, passkeys, roles, throttle, web
from app.auth.browser import browser_name
from app.auth.ceremonies import CeremonyFailed
from app.core import clock, db
from app.models import Admin, AuditAction

USER_HANDLE_BYTES = 64
LINK_GONE = "This enrollment link has expired or was already used. Ask an admin for a new one."


@bp.get("/enroll/<token>")
def enroll(token: str):
    """The enrollment page: a "Create passkey" button for the invited name (a page: never rate limited)."""
    invite = _invite_or_gone(token)
    return render_template("auth/enroll.html", invite=invite, token=token, wrong_origin=origins.wrong_origin())


@bp.post("/enroll/<token>/options")
def enroll_options(token: str):
    """Registration options for the invited admin (new, or existing when recovering)."""
    throttle.limit_attempt()
    invite = _counted_invite(token)
    session = db.get_session()
    admin = session.get(Admin, invite.admin_id) if invite.admin_id else None
    handle = admin.user_handle if admin else clock.random_bytes(USER_HANDLE_BYTES)
    existing = passkeys.of_admin(session, admin.id) if admin else []
    context = {"invite": invite.identifier, "user_handle": bytes_to_base64url(handle)}
    return web.json_options(ceremonies.registration_options(invite.name, handle, existing, context))


@bp.post("/enroll/<token>/verify")
def enroll_verify(token: str):
    """Verify the new passkey, use up the link, and log the admin in, in one transaction."""
    throttle.limit_attempt()
    try:
        body = web.json_body()
        ceremony = _registration_ceremony()
        invite = _invite_or_gone(token)
        if ceremony.context.get("invite") != invite.identifier:
            raise CeremonyFailed(_("This passkey was not created for this enrollment link."))
        verified = ceremonies.verify_registration(body.get("credential"), ceremony)
    except (BadRequest, Gone):
        throttle.record_failure()
        raise
    with db.transaction(write=True) as writer:
        # Using the link is the first write; it comes undone if anything below fails.
        if not invites.redeem(writer, invite):
            raise Gone(LINK_GONE)
        admin = _admin_for(writer, invite, base64url_to_bytes(ceremony.context["user_handle"]), _chosen_name(body))
        passkey = _add_passkey(writer, admin.id, verified, body)
        audit.record(
            writer,
            admin,
            AuditAction.PASSKEY_ADDED if invite.admin_id else AuditAction.ADMIN_ENROLLED,
            1,
            f"passkey #{passkey.id}",
        )
        token, _row = logins.start_login(admin.id, passkey.id, browser_name(request.user_agent.string), writer)
        landing = web.landing(admin)
    return web.logged_in_response(token, landing_path=landing)


@bp.post("/register/options")
@login_required
def register_options():
    """Registration options to add a passkey to the logged-in admin (a passkey verified in the last five
    minutes first: a browser left open cannot add one of its own)."""
    _require_step_up()
    existing = passkeys.of_admin(db.get_session(), current_user.id)
    context = {"admin_id": current_user.id}
    options = ceremonies.registration_options(current_user.name, current_user.user_handle, existing, context)
    return web.json_options(options)


@bp.post("/register/verify")
@login_required
def register_verify():
    """Verify and store a new passkey for the logged-in admin."""
    _require_step_up()
    body = web.json_body()
    ceremony = _registration_ceremony()
    if ceremony.context.get("admin_id") != current_user.id:
        raise CeremonyFailed(_("This passkey was not created for your account."))
    verified = ceremonies.verify_registration(body.get("credential"), ceremony)
    with db.transaction(write=True) as writer:
        passkey = _add_passkey(writer, current_user.id, verified, body)
        audit.record(writer, current_user, AuditAction.PASSKEY_ADDED, 1, f"passkey #{passkey.id}")
    return jsonify(ok=True, redirect="/admin/account", passkey=passkey.name)


def _require_step_up() -> None:
    if not logins.freshly_verified():
        raise Forbidden(
            _(
                "Adding a passkey needs your passkey confirmed in the last five minutes: log in again "
                "(Confirm with your passkey), then add it."
            )
        )


def _counted_invite(token: str) -> invites.Invite:
    """``_invite_or_gone``, a guessed or used link counted as a failed attempt (``throttle.record_failure``)."""
    try:
        return _invite_or_gone(token)
    except Gone:
        throttle.record_failure()
        raise


def _invite_or_gone(token: str) -> invites.Invite:
    invite = invites.find(db.get_session(), token) if len(token) <= 100 else None
    if invite is None:
        raise Gone(LINK_GONE)
    return invite


def _registration_ceremony() -> challenges.Ceremony:
    ceremony = challenges.consume(challenges.REGISTRATION)
    if ceremony is None:
        raise CeremonyFailed(_("This passkey request expired or was already used. Please try again."))
    return ceremony


def _chosen_name(body: dict) -> str:
    """The display name chosen on the enrollment page, whitespace collapsed; empty when none was."""
    chosen = body.get("display_name")
    return passkeys.clean_name(chosen if isinstance(chosen, str) else "")


def _admin_for(session, invite: invites.Invite, user_handle: bytes, name: str = "") -> Admin:
    """The admin a link enrolls: the one it recovers, or a new one named ``name`` (else the invited name)."""
    if invite.admin_id is not None:
        admin = session.get(Admin, invite.admin_id)
        if admin is None:
            raise Gone(_("The admin this link was made for no longer exists."))
        return admin
    admin = Admin(name=name or invite.name, user_handle=user_handle, created_at=clock.now(), role=invite.role)
    session.add(admin)
    _flush(session)
    roles.give(session, admin, invite.role, roles.existing(session, invite.form_ids))
    return admin


def _add_passkey(session, admin_id: int, verified, body: dict):
    credential = body.get("credential") or {}
    transports = (credential.get("response") or {}).get("transports") or []
    name = body.get("name") if isinstance(body.get("name"), str) else ""
    passkey = passkeys.add(
        session,
        admin_id,
        verified,
        transports if isinstance(transports, list) else [],
        name or browser_name(request.user_agent.string),
        clock.now(),
    )
    _flush(session)  # a credential ID registered before fails here, on the unique index
    return passkey


def _flush(session) -> None:
    try:
        session.flush()
    except IntegrityError as error:
        raise Conflict("An admin with this name, or this passkey, is already registered.") from error
