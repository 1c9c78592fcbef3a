"""A person's answer told to the admin the inquiry is assigned to, at their own address (kind ``assignee``).

The site's recipients hear of an answer in an inquiry's thread through the
``message`` deliveries; the inquiry's assignee (``app.inquiries.triage``)
hears of it too, by e-mail at ``Admin.email``, through one more outbox row.
It is the very e-mail the recipients get (the same subject and body, the
person's words only when the site includes content): the assignee learns
nothing the recipients' e-mail does not say.

Who that is, and whether they are told, is read at send time, as the
recipients are (``app.notify.recipients``): nobody when the inquiry is
unassigned since, the admin has no address, no longer reads the inquiry's
form (a form taken from a responder, a role changed), or when the address
is already among those the form's e-mail goes to: told once, not twice.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Admin, AdminRole, InquiryTriage
from app.notify import recipients
from app.notify import settings as notify_settings
from app.notify.channels import email
from app.notify.message import Notice


def has_one(session: Session, inquiry_id: int) -> bool:
    """Whether the inquiry is assigned to an admin with an address (whom ``to_tell`` decides at send time)."""
    assigned = (
        select(Admin.id)
        .join(InquiryTriage, InquiryTriage.assigned_to == Admin.id)
        .where(InquiryTriage.inquiry_id == inquiry_id, Admin.email.is_not(None))
    )
    return session.scalar(assigned) is not None


def to_tell(
    session: Session, listed: list[Notice], config: notify_settings.Notifications, scopes: recipients.Scopes
) -> dict[int, str]:
    """For each of the ``assignee`` notices ``listed`` whose assignee is told, by delivery id, their address."""
    if not listed:
        return {}
    admins = _assignees(session, [notice.received.id for notice in listed])
    found = {}
    for notice in listed:
        admin = admins.get(notice.received.id)
        if admin is None or not admin.email or not reads(admin, notice.received.form_id):
            continue
        if admin.email.casefold() not in _told(notice, config, scopes):
            found[notice.delivery.id] = admin.email
    return found


def reads(admin: Admin, form_id: int | None) -> bool:
    """Whether ``admin`` reads the inquiries of the form ``form_id`` (one of no form: owners only), as the
    inbox's scope has it: an owner every form, any other role (one the code does not know too) the forms
    given to them, as ``app.notify.recipients`` reads it."""
    if (admin.role or AdminRole.OWNER) == AdminRole.OWNER:
        return True
    return form_id is not None and form_id in admin.form_ids


def _assignees(session: Session, inquiry_ids: list[int]) -> dict[int, Admin]:
    rows = session.execute(
        select(InquiryTriage.inquiry_id, Admin)
        .join(Admin, Admin.id == InquiryTriage.assigned_to)
        .where(InquiryTriage.inquiry_id.in_(inquiry_ids))
    ).all()
    return {inquiry_id: admin for inquiry_id, admin in rows}


def _told(notice: Notice, config: notify_settings.Notifications, scopes: recipients.Scopes) -> set[str]:
    """The addresses, case folded, the form's e-mail of the answer goes to (none without e-mail in force)."""
    own = config.for_form(notice.form)
    if not email.CHANNEL.configured(own):
        return set()
    return {address.casefold() for address in recipients.of(own.emails, scopes, notice.received.form_id)}
