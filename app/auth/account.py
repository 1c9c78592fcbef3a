"""The admin's account pages under /admin/account: sessions, passkeys, invites."""

from __future__ import annotations

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import current_user, login_required
from sqlalchemy import delete, select

from app import clock, db
from app.auth import invites, passkeys, sessions
from app.models import AdminSession

bp = Blueprint("account", __name__, url_prefix="/admin/account")


@bp.get("")
@login_required
def overview():
    """This admin's live sessions and passkeys, with revoke, rename, remove and invite."""
    session = db.get_session()
    rows = session.scalars(
        select(AdminSession)
        .where(AdminSession.admin_id == current_user.id, sessions.live_session_clause(clock.now()))
        .order_by(AdminSession.last_seen_at.desc(), AdminSession.id.desc())
    )
    return render_template(
        "auth/account.html",
        sessions=list(rows),
        current_session_id=sessions.current_session().id,
        passkeys=passkeys.of_admin(session, current_user.id),
    )


@bp.post("/sessions/<int:session_id>/revoke")
@login_required
def revoke_session(session_id: int):
    """Log out one of this admin's browsers; revoking this one logs out here."""
    with db.transaction() as session:
        session.execute(
            delete(AdminSession).where(
                AdminSession.id == session_id, AdminSession.admin_id == current_user.id
            )
        )
    if session_id == sessions.current_session().id:
        response = redirect(url_for("auth.login"), 303)
        sessions.clear_cookie(response)
        return response
    flash("The session was revoked.")
    return redirect(url_for("account.overview"), 303)


@bp.post("/passkeys/<int:passkey_id>/rename")
@login_required
def rename_passkey(passkey_id: int):
    """Give one of this admin's passkeys a new name."""
    name = request.form.get("name", "")
    return _change_passkey(
        lambda session: passkeys.rename(session, current_user.id, passkey_id, name),
        "Passkey renamed.",
    )


@bp.post("/passkeys/<int:passkey_id>/remove")
@login_required
def remove_passkey(passkey_id: int):
    """Remove a passkey and log out the browsers it logged in; never the last one."""
    return _change_passkey(
        lambda session: passkeys.remove(session, current_user.id, passkey_id),
        "Passkey removed; the browsers it logged in were logged out.",
    )


@bp.post("/invite")
@login_required
def invite():
    """Create a one-time enrollment link for a new admin and show it once."""
    session = db.get_session()
    try:
        url = invites.create(session, request.form.get("name", ""))
    except invites.InviteError as error:
        flash(str(error), "error")
        return redirect(url_for("account.overview"), 303)
    session.commit()
    name = " ".join(request.form.get("name", "").split())
    return render_template("auth/invite_link.html", url=url, name=name)


def _change_passkey(change, done: str):
    session = db.get_session()
    try:
        change(session)
    except passkeys.PasskeyError as error:
        session.rollback()
        flash(str(error), "error")
        return redirect(url_for("account.overview"), 303)
    session.commit()
    flash(done)
    return redirect(url_for("account.overview"), 303)
