"""The login page, the username-less passkey login ceremony, and logout."""

from __future__ import annotations

import hmac

from flask import flash, redirect, render_template, request, url_for
from flask import session as browser_session
from flask_babel import gettext as _
from flask_login import current_user
from werkzeug.exceptions import BadRequest, TooManyRequests

from app import cleanup
from app.auth import bp, ceremonies, challenges, logins, origins, passkeys, throttle, web
from app.auth.browser import browser_name
from app.auth.ceremonies import CeremonyFailed
from app.core import clock, db, metrics
from app.core.urls import safe_next
from app.models import Admin


@bp.get("/login")
def login():
    """The page with the "Log in with a passkey" button; a logged-in admin goes straight on, unless asked to
    confirm with the passkey again (``reauth=1``: before inviting an admin)."""
    next_path = safe_next(request.args.get("next"))
    if current_user.is_authenticated and request.args.get("reauth") != "1":
        return redirect(next_path or web.landing(current_user))
    return render_template("auth/login.html", next_path=next_path, wrong_origin=origins.wrong_origin())


@bp.post("/login/options")
def login_options():
    """Fresh login options: no allowCredentials, user verification required."""
    _limit_attempt()
    cleanup.trigger("login_options")
    return web.json_options(ceremonies.login_options())


@bp.post("/login/verify")
def login_verify():
    """Verify an assertion; on success start a new login and set its cookie (counted either way)."""
    _limit_attempt()
    cleanup.trigger("login_verify")
    try:
        body = web.json_body()
        token, landing = _verify(body.get("credential"))
    except BadRequest:  # CeremonyFailed, or a body that is not a JSON object
        metrics.count_login("refused")
        throttle.record_failure()
        raise
    metrics.count_login("ok")
    return web.logged_in_response(token, body.get("next"), landing)


def _verify(credential) -> tuple[str, str]:
    """Check the assertion, record the passkey's use and start a login; its token and the admin's landing page."""
    ceremony = challenges.consume(challenges.LOGIN)
    if ceremony is None:
        raise CeremonyFailed(_("This login attempt expired or was already used. Please try again."))
    session = db.get_session()
    passkey = passkeys.by_credential_id(session, ceremonies.credential_id(credential))
    if passkey is None:
        raise CeremonyFailed(_("This passkey is not registered here."))
    admin = session.get_one(Admin, passkey.admin_id)
    _check_user_handle(credential, admin)
    verified = ceremonies.verify_login(credential, ceremony, passkey)
    # One transaction that writes first: the counter and the new login together.
    with db.transaction(write=True) as writer:
        if not passkeys.record_use(
            writer, passkey, verified.new_sign_count, verified.credential_backed_up, clock.now()
        ):
            raise CeremonyFailed(_("The passkey could not be verified. Please try again."))
        token, _row = logins.start_login(admin.id, passkey.id, browser_name(request.user_agent.string), writer)
    return token, web.landing(admin)


@bp.post("/logout")
def logout():
    """End this browser's login (the row is deleted) and go to the login page."""
    if current_user.is_authenticated:  # resolves the cookie to its login row
        logins.end_login(logins.current_login().id)
    browser_session.clear()
    flash(_("You are logged out."))
    response = redirect(url_for("auth.login"), 303)
    logins.clear_cookie(response)
    return response


def _limit_attempt() -> None:
    try:
        throttle.limit_attempt()
    except TooManyRequests:
        metrics.count_login("rate_limited")
        raise


def _check_user_handle(credential: dict, admin: Admin) -> None:
    handle = ceremonies.user_handle(credential)
    if handle is None or not hmac.compare_digest(handle, admin.user_handle):
        raise CeremonyFailed(_("This passkey does not belong to its account. Please try again."))
