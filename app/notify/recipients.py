"""Which recipients hear of an inquiry: an address that is a responder's or a viewer's hears only of their forms.

The e-mail recipients are addresses (the site's, or a form's own). One that
is the address of an admin given some forms (``Admin.email``, in any case)
hears only of the inquiries of those forms, in single e-mails and digests
alike: a scoped admin's own mailbox holds no more than their inbox shows. An
owner's address, and one that is no admin's, hears of every form. An address
shared by several admins hears what the widest of them sees.

Read at send time, once per batch (one query): a role or forms changed
meanwhile apply to the next e-mail sent, even one enqueued before. A role the
code does not know is scoped, as ``app.auth.permissions`` treats it.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Admin, AdminForm, AdminRole

Scopes = dict[str, frozenset[int]]  # a scoped admin's address, case folded -> the ids of the forms it hears of


def load(session: Session) -> Scopes:
    """The addresses of the admins given some forms, each with those forms; owners' addresses are left out."""
    rows = session.execute(
        select(Admin.email, Admin.role, AdminForm.form_id)
        .outerjoin(AdminForm, AdminForm.admin_id == Admin.id)
        .where(Admin.email.is_not(None))
    ).all()
    everything: set[str] = set()
    scoped: dict[str, set[int]] = {}
    for address, role, form_id in rows:
        key = str(address).casefold()  # never None: the query asks for addresses
        if (role or AdminRole.OWNER) == AdminRole.OWNER:
            everything.add(key)
            continue
        forms = scoped.setdefault(key, set())
        if form_id is not None:
            forms.add(form_id)
    return {key: frozenset(forms) for key, forms in scoped.items() if key not in everything}


def hears_of(address: str, scopes: Scopes, form_id: int | None) -> bool:
    """Whether ``address`` hears of an inquiry to the form ``form_id`` (None: an inquiry of no form)."""
    forms = scopes.get(address.casefold())
    return forms is None or (form_id is not None and form_id in forms)


def of(addresses: Iterable[str], scopes: Scopes, form_id: int | None) -> list[str]:
    """The ``addresses`` that hear of an inquiry to the form ``form_id``, in their order."""
    return [address for address in addresses if hears_of(address, scopes, form_id)]
