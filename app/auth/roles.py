"""Giving an admin a role and forms, and the rule that keeps one owner.

``give`` changes an admin's role and forms; ``check_removable`` is asked
before an admin is removed (the Admins page and ``flask admin remove``).
Neither leaves the site without an owner: both read the other owners with
their rows locked (``FOR UPDATE`` on PostgreSQL; on SQLite the caller's
write transaction already holds the database's write lock), so two owners
demoting or removing each other at once cannot both succeed.
"""

from __future__ import annotations

from collections.abc import Iterable

from flask_babel import gettext as _
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Admin, AdminForm, AdminRole, Form


class RoleError(ValueError):
    """The change would leave no owner, or names what does not exist; the message says which."""


def other_owners(session: Session, admin_id: int) -> int:
    """How many owners there are besides ``admin_id``, their rows locked until the caller's commit."""
    return len(
        list(
            session.scalars(
                select(Admin.id).where(Admin.role == AdminRole.OWNER, Admin.id != admin_id).with_for_update()
            )
        )
    )


def check_removable(session: Session, admin: Admin) -> None:
    """Raise ``RoleError`` if ``admin`` is the last owner."""
    if admin.role == AdminRole.OWNER and other_owners(session, admin.id) == 0:
        raise RoleError(_("%(name)s is the last owner: make another admin an owner first.", name=admin.name))


def give(session: Session, admin: Admin, role: AdminRole, form_ids: Iterable[int]) -> bool:
    """Give ``admin`` ``role`` and the forms ``form_ids`` (an owner's are every form: none are listed); whether
    anything changed. Refuses to demote the last owner (caller commits)."""
    wanted = frozenset() if role is AdminRole.OWNER else frozenset(form_ids)
    if admin.role == role and admin.form_ids == wanted:
        return False
    if admin.role == AdminRole.OWNER and role is not AdminRole.OWNER and other_owners(session, admin.id) == 0:
        raise RoleError(_("%(name)s is the last owner: make another admin an owner first.", name=admin.name))
    admin.role = role
    kept = {link.form_id: link for link in admin.form_links}
    admin.form_links = [kept.get(form_id) or AdminForm(form_id=form_id) for form_id in sorted(wanted)]
    return True


def parse_role(value: str) -> AdminRole:
    """The role named ``value`` (owner, responder, viewer); ``RoleError`` for any other."""
    try:
        return AdminRole(value)
    except ValueError:
        raise RoleError(_("Choose a role: owner, responder or viewer.")) from None


def form_ids_of(session: Session, values: Iterable[str], by: str = "id") -> list[int]:
    """The ids of the forms named by ``values`` (ids, or slugs when ``by="slug"``); ``RoleError`` names the
    first that does not exist."""
    forms = {str(getattr(form, by)): form.id for form in session.scalars(select(Form))}
    found = []
    for value in (each.strip() for each in values):
        if not value:
            continue
        if value not in forms:
            raise RoleError(_("There is no form %(name)s.", name=repr(value)))
        found.append(forms[value])
    return sorted(set(found))


def existing(session: Session, form_ids: Iterable[int]) -> list[int]:
    """Those of ``form_ids`` that are forms now (an invite's forms may have been deleted since)."""
    wanted = set(form_ids)
    return sorted(set(session.scalars(select(Form.id).where(Form.id.in_(wanted))))) if wanted else []


def describe(role: AdminRole | str, slugs: Iterable[str]) -> str:
    """A role and its forms as the audit log keeps them: ``responder: quote, jobs`` (no personal data)."""
    listed = ", ".join(sorted(slugs))
    return f"{role}: {listed}" if role != AdminRole.OWNER and listed else str(role)
