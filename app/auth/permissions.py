"""What an admin may do: the permissions, each role's, and on which forms.

Every page and action under /admin needs one ``Permission``
(``app.admin.policy`` lists them by endpoint; ``app.admin.guard`` checks).
The permissions about inquiries and people (``PER_FORM``) are held on
forms: ``forms_for`` says on which (None: every form), and the accessors
(``app.admin.inquiries``) and lists apply it. The others are the site's.

A role (``AdminRole``) is a set of these (``ROLES``): an owner holds every
one on every form; a responder and a viewer hold theirs on the forms given
to them (``Admin.form_ids``). Read here and nowhere else.
"""

from __future__ import annotations

from enum import StrEnum

from app.models import Admin, AdminRole


class Permission(StrEnum):
    """One kind of page or action under /admin; the value is what templates pass to ``can(...)``."""

    READ = "inquiries.read"  # the inbox, spam, an inquiry and its files (opening one records that access)
    MARK = "inquiries.mark"  # one's own read and unread marks
    ANSWER = "inquiries.answer"  # reply; mark answered or unanswered
    TRIAGE = "inquiries.triage"  # "Not spam"; state, assignment, tags and internal notes
    HOLD = "inquiries.hold"  # place or release a legal hold
    DELETE = "inquiries.delete"  # delete selected inquiries, delete all spam
    EXPORT = "inquiries.export"  # the CSV export
    PEOPLE = "people.read"  # what is held about a person, and its export
    ERASE = "people.erase"  # a person's erasure
    FORMS = "forms.manage"  # the forms and their editor
    TAGS = "tags.manage"  # the tags there are
    SETTINGS = "settings.manage"  # retention, notifications, cleanup (and the audit log shown there)
    ADMINS = "admins.manage"  # the Admins page: roles, log out or remove an admin; invites
    ACCOUNT = "account"  # one's own account: browsers, passkeys, address, language


ALL = frozenset(Permission)
PER_FORM = frozenset(
    {
        Permission.READ,
        Permission.MARK,
        Permission.ANSWER,
        Permission.TRIAGE,
        Permission.HOLD,
        Permission.DELETE,
        Permission.EXPORT,
        Permission.PEOPLE,
        Permission.ERASE,
    }
)
ROLES: dict[AdminRole, frozenset[Permission]] = {
    AdminRole.OWNER: ALL,
    # Everything about the inquiries of their forms but legal holds (a matter for the owners, as retention is).
    AdminRole.RESPONDER: frozenset(
        {
            Permission.READ,
            Permission.MARK,
            Permission.ANSWER,
            Permission.TRIAGE,
            Permission.DELETE,
            Permission.EXPORT,
            Permission.PEOPLE,
            Permission.ERASE,
            Permission.ACCOUNT,
        }
    ),
    AdminRole.VIEWER: frozenset({Permission.READ, Permission.PEOPLE, Permission.ACCOUNT}),
}
NONE: frozenset[int] = frozenset()


def role_of(admin: Admin) -> AdminRole:
    """``admin``'s role; an unknown stored value holds nothing (a viewer's permissions on no form)."""
    try:
        return AdminRole(admin.role or AdminRole.OWNER)
    except ValueError:
        return AdminRole.VIEWER


def permissions_for(admin: Admin) -> frozenset[Permission]:
    """Every permission ``admin`` holds, on at least one form for those in ``PER_FORM``."""
    return ROLES[role_of(admin)]


def forms_for(admin: Admin, permission: Permission) -> frozenset[int] | None:
    """The ids of the forms on which ``admin`` holds ``permission``: None for every form (an owner's), none
    when they do not hold it."""
    if permission not in permissions_for(admin):
        return NONE
    if role_of(admin) is AdminRole.OWNER or permission not in PER_FORM:
        return None
    return admin.form_ids


def may(admin: Admin, permission: Permission, form_id: int | None = None) -> bool:
    """Whether ``admin`` holds ``permission`` (on form ``form_id``, when one is named)."""
    if permission not in permissions_for(admin):
        return False
    if form_id is None or permission not in PER_FORM:
        return True
    forms = forms_for(admin, permission)
    return forms is None or form_id in forms
