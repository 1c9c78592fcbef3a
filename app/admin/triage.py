"""Triage on an inquiry's page: its state, whom it is assigned to, its tags, the team's internal notes.

Each is a plain HTML form (no JavaScript), a POST with the CSRF token that
needs ``inquiries.triage`` on the inquiry's form, and each change is one
audit entry that names the inquiry and no message content (a note's text
is never in the audit log; a tag's name is, as ``inquiry #N: ...``, so
that it is scrubbed with the inquiry). An inquiry can be assigned only to
an admin who may read its form. Notes are for the team: no e-mail ever
includes them (``app.replies`` and ``app.notify`` read nothing of them).
"""

from __future__ import annotations

from flask import abort, flash, redirect, request, url_for
from flask_babel import gettext as _
from flask_login import current_user

from app import audit
from app.admin import bp
from app.admin.inbox import render_detail
from app.admin.inquiries import get_writable_inquiry_or_403
from app.auth import permissions
from app.auth.permissions import Permission
from app.core import clock, db
from app.inquiries import triage
from app.models import Admin, AuditAction, InquiryState


@bp.post("/inquiries/<int:inquiry_id>/state")
def change_state(inquiry_id: int):
    """Put the inquiry in a state: open, waiting or closed."""
    session = db.get_session(write=True)
    get_writable_inquiry_or_403(inquiry_id)
    try:
        state = InquiryState(request.form.get("state", ""))
    except ValueError:
        abort(400, _("Choose a state: open, waiting or closed."))
    if triage.set_state(session, inquiry_id, state, clock.now()):
        audit.record(session, current_user, AuditAction.STATE_CHANGED, 1, f"inquiry #{inquiry_id}: {state}")
    session.commit()
    flash(_("State saved."))
    return _back(inquiry_id)


@bp.post("/inquiries/<int:inquiry_id>/assign")
def assign(inquiry_id: int):
    """Assign the inquiry to an admin who may read its form (``admin_id``; empty: to nobody)."""
    session = db.get_session(write=True)
    inquiry = get_writable_inquiry_or_403(inquiry_id)
    field = request.form.get("admin_id", "")
    assignee = session.get(Admin, int(field)) if field.isdigit() else None
    if field and (assignee is None or not permissions.may(assignee, Permission.READ, inquiry.form_id)):
        abort(400, _("Choose an admin who can see this inquiry's form."))
    if triage.assign(session, inquiry_id, assignee.id if assignee else None, clock.now()):
        audit.record(
            session,
            current_user,
            AuditAction.ASSIGNED,
            1,
            f"inquiry #{inquiry_id}: {assignee.name if assignee else '(nobody)'}",
        )
    session.commit()
    flash(_("Assigned to %(name)s.", name=assignee.name) if assignee else _("Assigned to nobody."))
    return _back(inquiry_id)


@bp.post("/inquiries/<int:inquiry_id>/tags")
def change_tags(inquiry_id: int):
    """Make the inquiry's tags those ticked (the tags an owner defined)."""
    session = db.get_session(write=True)
    get_writable_inquiry_or_403(inquiry_id)
    wanted = {int(value) for value in request.form.getlist("tags") if value.isdigit()}
    added, removed = triage.set_tags(session, inquiry_id, wanted)
    if added or removed:
        change = ", ".join([f"+{name}" for name in added] + [f"-{name}" for name in removed])
        audit.record(
            session, current_user, AuditAction.TAGGED, len(added) + len(removed), f"inquiry #{inquiry_id}: {change}"
        )
    session.commit()
    flash(_("Tags saved."))
    return _back(inquiry_id)


@bp.post("/inquiries/<int:inquiry_id>/notes")
def add_note(inquiry_id: int):
    """Add an internal note: for the team only, never sent."""
    session = db.get_session(write=True)
    inquiry = get_writable_inquiry_or_403(inquiry_id)
    body = request.form.get("body", "").strip()
    if not body or len(body) > triage.NOTE_MAX:
        error = _("Write a note of 1 to %(max)d characters.", max=triage.NOTE_MAX)
        return render_detail(inquiry, {"note": error}, note_draft=body), 422
    triage.add_note(session, inquiry_id, current_user, body, clock.now())
    audit.record(session, current_user, AuditAction.NOTE_ADDED, 1, f"inquiry #{inquiry_id}")
    session.commit()
    flash(_("Note added."))
    return _back(inquiry_id)


def _back(inquiry_id: int):
    return redirect(url_for("admin.detail", inquiry_id=inquiry_id) + "#triage", 303)
