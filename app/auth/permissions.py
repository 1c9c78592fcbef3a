"""What an admin may do: the permissions, and who holds which on which forms.

Every page and action under /admin needs one ``Permission``
(``app.admin.policy`` lists them by endpoint; ``app.admin.guard`` checks).
The permissions about inquiries and people (``PER_FORM``) are held on
forms: ``forms_for`` says on which (None: every form), and the accessors
(``app.admin.inquiries``) and lists apply it. The others are the site's.

Today every admin holds every permission on every form. Roles are a
mapping from a role to a set of these and the forms given to an admin,
read here and nowhere else.
"""

from __future__ import annotations

from enum import StrEnum

from app.models import Admin


class Permission(StrEnum):
    """One kind of page or action under /admin; the value is what templates pass to ``can(...)``."""

    READ = "inquiries.read"  # the inbox, spam, an inquiry and its files; one's own read marks
    ANSWER = "inquiries.answer"  # reply; mark answered or unanswered
    TRIAGE = "inquiries.triage"  # "Not spam"
    HOLD = "inquiries.hold"  # place or release a legal hold
    DELETE = "inquiries.delete"  # delete selected inquiries, delete all spam
    EXPORT = "inquiries.export"  # the CSV export
    PEOPLE = "people.read"  # what is held about a person, and its export
    ERASE = "people.erase"  # a person's erasure
    FORMS = "forms.manage"  # the forms and their editor
    SETTINGS = "settings.manage"  # retention, notifications, cleanup (and the audit log shown there)
    ADMINS = "admins.manage"  # the Admins page: log out or remove an admin; invites
    ACCOUNT = "account"  # one's own account: browsers, passkeys, address, language


ALL = frozenset(Permission)
PER_FORM = frozenset({Permission.READ, Permission.ANSWER, Permission.TRIAGE, Permission.HOLD, Permission.DELETE,
                      Permission.EXPORT, Permission.PEOPLE, Permission.ERASE})


def permissions_for(admin: Admin) -> frozenset[Permission]:
    """Every permission ``admin`` holds, on at least one form for those in ``PER_FORM`` (today: all)."""
    return ALL


def forms_for(admin: Admin, permission: Permission) -> frozenset[int] | None:
    """The ids of the forms on which ``admin`` holds ``permission``; None for every form (today: always)."""
    return None


def may(admin: Admin, permission: Permission, form_id: int | None = None) -> bool:
    """Whether ``admin`` holds ``permission`` (on form ``form_id``, when one is named)."""
    if permission not in permissions_for(admin):
        return False
    if form_id is None or permission not in PER_FORM:
        return True
    forms = forms_for(admin, permission)
    return forms is None or form_id in forms
