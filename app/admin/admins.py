"""The Admins page: every admin, their role, forms, passkeys and browsers; change a role, log one out
everywhere, or remove them.

Offboarding without the command line: "Log out everywhere" deletes an
admin's logins; "Remove" deletes the admin, and with them their passkeys
and logins (the foreign keys cascade). The last owner can be neither
removed nor demoted (``app.auth.roles``), nor can an admin remove themselves
here (another admin, or ``flask admin remove``, does it). Each of these
needs a passkey verified in the last five minutes (the guard's step-up).
Everything is audited.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from flask import abort, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_login import current_user
from sqlalchemy import delete, func, select

from app import audit
from app.admin import bp, labels
from app.auth import logins, roles
from app.core import clock, db
from app.forms import store as form_store
from app.models import Admin, AdminLogin, AdminRole, AuditAction, Passkey


@dataclass(frozen=True)
class Row:
    """One admin as the page lists them."""

    admin: Admin
    passkeys: int
    logins: int
    last_seen: datetime | None


@bp.get("/admins")
def admins():
    """Every admin, with their passkeys, live logins and when they were last seen."""
    session = db.get_session()
    passkey_counts = dict(session.execute(select(Passkey.admin_id, func.count()).group_by(Passkey.admin_id)).all())
    live = session.execute(
        select(AdminLogin.admin_id, func.count(), func.max(AdminLogin.last_seen_at))
        .where(logins.live_login_clause(clock.now()))
        .group_by(AdminLogin.admin_id)
    ).all()
    live_logins = {admin_id: (count, seen) for admin_id, count, seen in live}
    rows = [
        Row(each, passkey_counts.get(each.id, 0), *live_logins.get(each.id, (0, None)))
        for each in session.scalars(select(Admin).order_by(Admin.name))
    ]
    forms = form_store.all_forms(session)
    return render_template(
        "admin/admins.html", rows=rows, roles=list(AdminRole), forms=forms, slugs={form.id: form.slug for form in forms}
    )


@bp.post("/admins/<int:admin_id>/role")
def change_role(admin_id: int):
    """Give an admin a role and forms (a responder's or viewer's); never demote the last owner."""
    session = db.get_session(write=True)
    admin = _admin_or_404(session, admin_id)
    try:
        role = roles.parse_role(request.form.get("role", ""))
        changed = roles.give(session, admin, role, roles.form_ids_of(session, request.form.getlist("forms")))
    except roles.RoleError as error:
        session.rollback()
        flash(str(error), "error")
        return redirect(url_for("admin.admins"), 303)
    if changed:
        slugs = form_store.names(session)
        audit.record(
            session,
            current_user,
            AuditAction.ROLE_CHANGED,
            1,
            f"admin {admin.name}: {roles.describe(role, (slugs[each] for each in admin.form_ids))}",
        )
    session.commit()
    flash(
        _("%(name)s is now: %(role)s.", name=admin.name, role=labels.label(role)) if changed else _("Nothing changed.")
    )
    return redirect(url_for("admin.admins"), 303)


@bp.post("/admins/<int:admin_id>/logout")
def log_out_everywhere(admin_id: int):
    """Delete every login of an admin: each of their browsers must log in again with a passkey."""
    session = db.get_session(write=True)
    admin = _admin_or_404(session, admin_id)
    ended = db.rowcount(session.execute(delete(AdminLogin).where(AdminLogin.admin_id == admin.id)))
    audit.record(session, current_user, AuditAction.SESSIONS_REVOKED, ended, f"admin {admin.name}")
    session.commit()
    if admin.id == current_user.id:
        response = redirect(url_for("auth.login"), 303)
        logins.clear_cookie(response)
        return response
    flash(_("%(name)s was logged out everywhere.", name=admin.name))
    return redirect(url_for("admin.admins"), 303)


@bp.post("/admins/<int:admin_id>/remove")
def remove_admin(admin_id: int):
    """Remove another admin, with their passkeys and logins, after a confirmation; never the last one."""
    session = db.get_session(write=True)
    admin = _admin_or_404(session, admin_id)
    if admin.id == current_user.id:
        flash(
            _("You cannot remove yourself here: another admin can, or the operator with flask admin remove."), "error"
        )
        return redirect(url_for("admin.admins"), 303)
    try:
        roles.check_removable(session, admin)
    except roles.RoleError as error:
        flash(str(error), "error")
        return redirect(url_for("admin.admins"), 303)
    if request.form.get("confirm") != admin.name:
        return render_template("admin/admin_confirm_remove.html", admin=admin)
    name = admin.name
    session.delete(admin)
    audit.record(session, current_user, AuditAction.ADMIN_REMOVED, 1, f"admin {name}")
    session.commit()
    flash(_("%(name)s was removed, with their passkeys and logins.", name=name))
    return redirect(url_for("admin.admins"), 303)


def _admin_or_404(session, admin_id: int) -> Admin:
    admin = session.get(Admin, admin_id)
    if admin is None:
        abort(404)
    return admin
