"""The admin's account page, /admin/account: logged-in browsers, passkeys, address, language, invites."""

from __future__ import annotations

from flask import flash, redirect, render_template, request, url_for
from flask_babel import force_locale
from flask_babel import gettext as _
from flask_login import current_user
from sqlalchemy import delete, select

from app import audit
from app.admin import bp
from app.auth import invites, logins, passkeys, roles
from app.core import clock, db, i18n
from app.core.parsing import parse_address
from app.forms import store as form_store
from app.models import Admin, AdminLogin, AdminRole, AuditAction


@bp.get("/account")
def account():
    """This admin's live logins and passkeys, with revoke, rename, remove and invite."""
    return _account_page()


def _account_page(email_error: str | None = None, email_value: str | None = None):
    session = db.get_session()
    rows = session.scalars(
        select(AdminLogin)
        .where(AdminLogin.admin_id == current_user.id, logins.live_login_clause(clock.now()))
        .order_by(AdminLogin.last_seen_at.desc(), AdminLogin.id.desc())
    )
    return render_template(
        "admin/account.html",
        logins=list(rows),
        current_login_id=logins.this_login().id,
        passkeys=passkeys.of_admin(session, current_user.id),
        may_invite=logins.freshly_verified(),
        roles=list(AdminRole),
        forms=form_store.all_forms(session),
        email_error=email_error,
        email_value=current_user.email if email_value is None else email_value,
    )


@bp.post("/account/name")
def change_name():
    """Rename this admin: the name the team sees on inquiries, assignments and the audit log (entries
    written before keep the name they were written with)."""
    name = passkeys.clean_name(request.form.get("name"))
    session = db.get_session(write=True)
    if not name:
        flash(_("Enter a name of 1 to %(max)s characters.", max=passkeys.MAX_NAME_LENGTH), "error")
    elif session.scalar(select(Admin.id).where(Admin.name == name, Admin.id != current_user.id)) is not None:
        flash(_("Another admin is already named %(name)s: choose another name.", name=name), "error")
    elif name != current_user.name:
        audit.record(session, current_user, AuditAction.NAME_CHANGED, 0, f"{current_user.name} → {name}")
        session.get(Admin, current_user.id).name = name
        session.commit()
        flash(_("Name saved."))
    return redirect(url_for("admin.account"), 303)


@bp.post("/account/email")
def change_email():
    """Store the address people's answers to this admin's replies go to (``Reply-To``); empty: the team's."""
    field = request.form.get("email", "").strip()
    try:
        address = parse_address(field) if field else None
    except ValueError:
        return _account_page(_("Enter an e-mail address such as ada@example.org, or leave it empty."), field), 422
    session = db.get_session(write=True)
    session.get(Admin, current_user.id).email = address
    audit.record(session, current_user, AuditAction.EMAIL_CHANGED, 0, "set" if address else "removed")
    session.commit()
    flash(_("Address saved."))
    return redirect(url_for("admin.account"), 303)


@bp.post("/account/logins/<int:login_id>/revoke")
def revoke_login(login_id: int):
    """Log out one of this admin's browsers; revoking this one logs out here."""
    with db.transaction(write=True) as session:
        ended = db.rowcount(
            session.execute(delete(AdminLogin).where(AdminLogin.id == login_id, AdminLogin.admin_id == current_user.id))
        )
        audit.record(session, current_user, AuditAction.SESSION_REVOKED, ended, f"admin {current_user.name}")
    if login_id == logins.this_login().id:
        response = redirect(url_for("auth.login"), 303)
        logins.clear_cookie(response)
        return response
    flash(_("The login was revoked."))
    return redirect(url_for("admin.account"), 303)


@bp.post("/account/passkeys/<int:passkey_id>/rename")
def rename_passkey(passkey_id: int):
    """Give one of this admin's passkeys a new name."""
    name = request.form.get("name", "")
    return _change_passkey(
        lambda session: passkeys.rename(session, current_user.id, passkey_id, name),
        _("Passkey renamed."),
        AuditAction.PASSKEY_RENAMED,
        passkey_id,
    )


@bp.post("/account/passkeys/<int:passkey_id>/remove")
def remove_passkey(passkey_id: int):
    """Remove a passkey and log out the browsers it logged in; never the last one."""
    return _change_passkey(
        lambda session: passkeys.remove(session, current_user.id, passkey_id),
        _("Passkey removed; the browsers it logged in were logged out."),
        AuditAction.PASSKEY_REMOVED,
        passkey_id,
    )


@bp.post("/account/language")
def change_language():
    """Store this admin's language (empty: the browser's) and remember it in this browser too."""
    field = request.form.get("locale", "")
    chosen = i18n.normalize(field)
    if field and chosen is None:
        flash(_("Choose one of the languages offered."), "error")
        return redirect(url_for("admin.account"), 303)
    session = db.get_session(write=True)
    session.get(Admin, current_user.id).locale = chosen
    audit.record(session, current_user, AuditAction.LANGUAGE_CHANGED, 0, chosen or "browser")
    session.commit()
    response = redirect(url_for("admin.account"), 303)
    # The cookie comes first in the choice of locale, so it must agree with the new choice.
    i18n.remember(response, chosen)
    with force_locale(chosen or i18n.from_accept_language(request.accept_languages) or "en"):
        flash(_("Language saved."))
    return response


@bp.post("/account/invite")
def invite():
    """Create a one-time enrollment link for a new admin, with the role and forms chosen, and show it once;
    only within five minutes of a passkey verification in this browser (the guard's step-up)."""
    session = db.get_session(write=True)
    name = " ".join(request.form.get("name", "").split())
    try:
        role = roles.parse_role(request.form.get("role", AdminRole.OWNER.value))
        form_ids = roles.form_ids_of(session, request.form.getlist("forms"))
        url = invites.create(session, name, role=role, form_ids=tuple(form_ids))
    except (invites.InviteError, roles.RoleError) as error:
        flash(str(error), "error")
        return redirect(url_for("admin.account"), 303)
    slugs = [form.slug for form in form_store.all_forms(session) if form.id in form_ids]
    audit.record(session, current_user, AuditAction.INVITE_CREATED, 1, f"for {name} as {roles.describe(role, slugs)}")
    session.commit()
    return render_template(
        "admin/invite_link.html", url=url, name=name, role=role, slugs=[] if role is AdminRole.OWNER else slugs
    )


def _change_passkey(change, done: str, action: AuditAction, passkey_id: int):
    session = db.get_session(write=True)
    try:
        change(session)
    except passkeys.PasskeyError as error:
        session.rollback()
        flash(str(error), "error")
        return redirect(url_for("admin.account"), 303)
    audit.record(session, current_user, action, 1, f"passkey #{passkey_id}")
    session.commit()
    flash(done)
    return redirect(url_for("admin.account"), 303)
