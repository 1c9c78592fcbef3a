"""Changes to inquiries: delete one or many (after a confirmation), place or release a hold.

They act on an inquiry in either folder; a deletion started on the Spam
page (``folder=spam``) returns there.
"""

from __future__ import annotations

from flask import abort, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import ngettext
from flask_login import current_user
from sqlalchemy import delete, func, select, update
from werkzeug.exceptions import BadRequest

from app import audit
from app.admin import bp
from app.admin.inbox import render_detail
from app.admin.inquiries import get_writable_inquiry_or_403, in_scope
from app.auth.permissions import Permission
from app.core import clock, db
from app.inquiries import gone, tally
from app.inquiries.retention import visible_now
from app.models import AuditAction, Inquiry, InquiryStatus, TallyKind

MAX_SELECTION = 500
MAX_REASON_LENGTH = 200


@bp.post("/inquiries/delete")
def delete_inquiries():
    """First POST shows the confirmation page; the POST with ``confirm=1`` deletes.

    Held inquiries are never deleted; they are counted and reported instead.
    """
    ids = selected_ids()
    if not ids:
        flash(_("Select at least one inquiry to delete."), "warning")
        return redirect(_list_url(), 303)
    deletable, held = _count_selection(ids)
    if deletable == 0:
        flash(_nothing_to_delete(held), "error")
        return redirect(_back_to(ids), 303)
    if request.form.get("confirm") != "1":
        return render_template(
            "admin/confirm_delete.html",
            ids=ids,
            deletable=deletable,
            held=held,
            back=_back_to(ids),
            folder=_folder(),
        )
    deleted = _delete(ids, held)
    flash(_deleted_message(deleted, held))
    return redirect(_list_url(), 303)


@bp.post("/inquiries/<int:inquiry_id>/hold")
def place_hold(inquiry_id: int):
    """Put an inquiry on legal hold with a short reason: it is kept past retention."""
    db.get_session(write=True)
    inquiry = get_writable_inquiry_or_403(inquiry_id)
    reason = request.form.get("reason", "").strip()
    error = _reason_error(reason)
    if error:
        return render_detail(inquiry, {"reason": error}), 422
    _update_visible(inquiry_id, legal_hold=True, hold_reason=reason, hold_by=current_user.name, held_at=clock.now())
    audit.record(db.get_session(), current_user, AuditAction.HOLD_PLACED, 1, f"inquiry #{inquiry_id}: {reason}")
    db.get_session().commit()
    flash(_("Legal hold placed: this inquiry is kept until the hold is released."))
    return redirect(url_for("admin.detail", inquiry_id=inquiry_id), 303)


@bp.post("/inquiries/<int:inquiry_id>/release")
def release_hold(inquiry_id: int):
    """Release a legal hold: the inquiry falls under the retention policy again."""
    db.get_session(write=True)
    if not get_writable_inquiry_or_403(inquiry_id).legal_hold:
        flash(_("This inquiry is not on legal hold."), "warning")
        return redirect(url_for("admin.detail", inquiry_id=inquiry_id), 303)
    _update_visible(inquiry_id, legal_hold=False, hold_reason=None, hold_by=None, held_at=None)
    session = db.get_session()
    audit.record(session, current_user, AuditAction.HOLD_RELEASED, 1, f"inquiry #{inquiry_id}")
    session.commit()
    if session.scalar(select(Inquiry.id).where(Inquiry.id == inquiry_id, visible_now(session, None))) is None:
        flash(_("Hold released. The inquiry is past retention: it is hidden now and deleted at the next cleanup."))
        return redirect(url_for("admin.inbox"), 303)
    flash(_("Hold released."))
    return redirect(url_for("admin.detail", inquiry_id=inquiry_id), 303)


def _update_visible(inquiry_id: int, **values) -> None:
    """Update one inquiry if it is still visible; a 404 if a cleanup or a colleague removed it meanwhile."""
    session = db.get_session()
    result = session.execute(
        update(Inquiry).where(Inquiry.id == inquiry_id, visible_now(session, None)).values(**values),
        execution_options={"synchronize_session": False},
    )
    if db.rowcount(result) != 1:
        session.rollback()
        abort(404, _("This inquiry was deleted in the meantime."))


def selected_ids() -> list[int]:
    """The ids of the inquiries ticked in a list (field ``ids``); 400 when malformed or too many."""
    values = request.form.getlist("ids")
    if len(values) > MAX_SELECTION:
        raise BadRequest(_("Select at most %(max)s inquiries at once.", max=MAX_SELECTION))
    try:
        return sorted({int(value) for value in values})
    except ValueError:
        raise BadRequest(_("The selection is malformed; reload the inbox and try again.")) from None


def _count_selection(ids: list[int]) -> tuple[int, int]:
    """How many of ``ids`` are visible and deletable, and how many are held."""
    session = db.get_session(write=True)
    counts = dict(
        session.execute(
            select(Inquiry.legal_hold, func.count())
            .where(Inquiry.id.in_(ids), visible_now(session, None), in_scope(Permission.DELETE))
            .group_by(Inquiry.legal_hold)
        ).all()
    )
    return counts.get(False, 0), counts.get(True, 0)


def _delete(ids: list[int], held: int) -> int:
    session = db.get_session()
    # The hold is checked again in the DELETE itself: a hold placed after the
    # confirmation page still protects the inquiry.
    removed = list(
        session.execute(
            delete(Inquiry)
            .where(
                Inquiry.id.in_(ids),
                Inquiry.legal_hold.is_(False),
                visible_now(session, None),
                in_scope(Permission.DELETE),
            )
            .returning(Inquiry.id, Inquiry.form_id),
            execution_options={"synchronize_session": False},
        )
    )
    deleted = [inquiry_id for inquiry_id, _form in removed]
    detail = f"{held} on legal hold kept" if held else ""
    entry = audit.record(session, current_user, AuditAction.DELETED, len(deleted), detail)
    tally.add(session, TallyKind.DELETED, tally.per_form(form_id for _id, form_id in removed), entry.created_at)
    audit.scrub(session, deleted, "(deleted)")  # only those deleted: a held one keeps its hold's reason
    session.commit()
    if deleted:
        gone.forget_after_response()
    return len(deleted)


def _folder() -> str:
    """The list a deletion started from: ``spam`` or ``inbox``."""
    return InquiryStatus.SPAM if request.form.get("folder") == InquiryStatus.SPAM else InquiryStatus.INBOX


def _list_url() -> str:
    return url_for("admin.spam" if _folder() == InquiryStatus.SPAM else "admin.inbox")


def _back_to(ids: list[int]) -> str:
    if len(ids) == 1:
        return url_for("admin.detail", inquiry_id=ids[0])
    return _list_url()


def _nothing_to_delete(held: int) -> str:
    if held:
        return _("Nothing deleted: inquiries on legal hold cannot be deleted until the hold is released.")
    return _("Nothing deleted: the selected inquiries no longer exist.")


def _reason_error(reason: str) -> str | None:
    if not reason:
        return "Give a short reason for the hold."
    if len(reason) > MAX_REASON_LENGTH:
        return f"Keep the reason under {MAX_REASON_LENGTH} characters."
    return None


def _deleted_message(deleted: int, held: int) -> str:
    message = ngettext("Deleted %(num)s inquiry.", "Deleted %(num)s inquiries.", deleted)
    if held:
        message += " " + ngettext("%(num)s inquiry on legal hold kept.", "%(num)s inquiries on legal hold kept.", held)
    return message
