"""The Spam page, /admin/spam: what ``app.inquiries.spam`` filed as spam, "Not spam", "Spam" (from the inbox),
"Delete all spam", and the list of words and domains that send an inquiry to spam.

Every action is in the audit log (who, when, how many; never content).
Moving an inquiry to the inbox enqueues its notifications (``app.notify``),
in the same transaction: spam is never notified while it is spam. Each move
either way teaches the learned score (``app.inquiries.learned``).
"""

from __future__ import annotations

from flask import flash, redirect, render_template, request, url_for
from flask_babel import lazy_gettext as _l
from flask_babel import ngettext
from flask_login import current_user
from sqlalchemy import delete, func, select, update

from app import audit, notify
from app.admin import bp
from app.admin.actions import selected_ids
from app.admin.inbox import folder_page
from app.admin.inquiries import in_scope
from app.auth.permissions import Permission
from app.core import db
from app.inquiries import gone, learned, retention, signals, tally
from app.inquiries.spam import Reason
from app.models import AuditAction, Inquiry, InquiryStatus, TallyKind

NOTHING_SELECTED = _l("Select at least one inquiry to move to the inbox.")
NOTHING_SELECTED_SPAM = _l("Select at least one inquiry to move to spam.")
NOTHING_MOVED = _l("Nothing moved: the selected inquiries are no longer in the spam folder.")
NO_SPAM = _l("There is no spam to delete.")


@bp.get("/spam")
def spam():
    """Inquiries filed as spam, newest first, 50 a page, with the same search as the inbox."""
    return folder_page(retention.SPAM, "admin.spam", "admin_spam")


@bp.post("/spam/not-spam")
def not_spam():
    """Move the selected spam inquiries to the inbox (``back=detail``: return to the one inquiry)."""
    ids = selected_ids()
    if not ids:
        flash(str(NOTHING_SELECTED), "warning")
        return redirect(url_for("admin.spam"), 303)
    session = db.get_session(write=True)
    moved_ids = list(
        session.scalars(
            update(Inquiry)
            .where(Inquiry.id.in_(ids), retention.visible_now(session, retention.SPAM), in_scope(Permission.TRIAGE))
            .values(status=InquiryStatus.INBOX)
            .returning(Inquiry.id),
            execution_options={"synchronize_session": False},
        )
    )
    moved = len(moved_ids)
    notify.enqueue_inquiries(session, sorted(moved_ids))
    learned.train_inquiries(session, moved_ids, as_spam=False)
    # One entry per inquiry, so each shows in its person's record (People), however many moved at once.
    for inquiry_id in sorted(moved_ids):
        audit.record(session, current_user, AuditAction.MARKED_NOT_SPAM, 1, f"inquiry #{inquiry_id}")
    session.commit()
    flash(_moved_message(moved) if moved else str(NOTHING_MOVED), "message" if moved else "error")
    if request.form.get("back") == "detail" and len(ids) == 1 and moved:
        return redirect(url_for("admin.detail", inquiry_id=ids[0]), 303)
    return redirect(url_for("admin.spam"), 303)


@bp.post("/spam/mark")
def mark_spam():
    """Move the selected inbox inquiries to spam (``back=detail``: return to the one inquiry)."""
    ids = selected_ids()
    if not ids:
        flash(str(NOTHING_SELECTED_SPAM), "warning")
        return redirect(url_for("admin.inbox"), 303)
    session = db.get_session(write=True)
    moved_ids = sorted(
        session.scalars(
            update(Inquiry)
            .where(Inquiry.id.in_(ids), retention.visible_now(session, retention.INBOX), in_scope(Permission.TRIAGE))
            .values(status=InquiryStatus.SPAM, spam_checks=[Reason.MARKED_BY_ADMIN.value])
            .returning(Inquiry.id),
            execution_options={"synchronize_session": False},
        )
    )
    notify.cancel_inquiries(session, moved_ids)
    learned.train_inquiries(session, moved_ids, as_spam=True)
    for inquiry_id in moved_ids:
        audit.record(session, current_user, AuditAction.MARKED_SPAM, 1, f"inquiry #{inquiry_id}")
    session.commit()
    flash(ngettext("Moved %(num)s inquiry to spam.", "Moved %(num)s inquiries to spam.", len(moved_ids)))
    if request.form.get("back") == "detail" and len(ids) == 1 and moved_ids:
        return redirect(url_for("admin.detail", inquiry_id=ids[0]), 303)
    return redirect(url_for("admin.inbox"), 303)


@bp.post("/spam/words")
def change_spam_words():
    """Save the list of words and domains that count against an inquiry (``app.inquiries.signals``)."""
    session = db.get_session(write=True)
    entries = signals.parse_words(request.form.get("words", ""))
    signals.save_words(session, entries)
    audit.record(session, current_user, AuditAction.SPAM_WORDS_CHANGED, len(entries))
    session.commit()
    flash(ngettext("The list holds %(num)s entry.", "The list holds %(num)s entries.", len(entries)))
    return redirect(url_for("admin.spam", _anchor="spam-words"), 303)


@bp.post("/spam/delete-all")
def delete_all_spam():
    """First POST shows how many would go; the POST with ``confirm=1`` deletes them.

    Only the spam shown on the confirmation page is deleted (ids up to
    ``through``): spam that arrives meanwhile waits for the next decision.
    Spam on legal hold is kept.
    """
    session = db.get_session(write=True)
    spam_now = _deletable_spam(session)
    deletable, newest = session.execute(
        select(func.count(), func.max(Inquiry.id)).select_from(Inquiry).where(spam_now)
    ).one()
    if request.form.get("confirm") != "1":
        if not deletable:
            flash(str(NO_SPAM), "warning")
            return redirect(url_for("admin.spam"), 303)
        return render_template("admin/confirm_delete_spam.html", deletable=deletable, through=newest)
    through = request.form.get("through", "")
    if not (through.isascii() and through.isdigit() and len(through) <= 18):  # isdigit takes "²", int() does not
        return redirect(url_for("admin.spam"), 303)
    form_ids = list(
        session.scalars(
            delete(Inquiry).where(spam_now, Inquiry.id <= int(through)).returning(Inquiry.form_id),
            execution_options={"synchronize_session": False},
        )
    )
    deleted = len(form_ids)
    held = session.scalar(
        select(func.count())
        .select_from(Inquiry)
        .where(
            retention.visible_now(session, retention.SPAM), Inquiry.legal_hold.is_(True), in_scope(Permission.DELETE)
        )
    )
    entry = audit.record(
        session, current_user, AuditAction.SPAM_DELETED, deleted, f"{held} on legal hold kept" if held else ""
    )
    tally.add(session, TallyKind.SPAM_DELETED, tally.per_form(form_ids), entry.created_at)
    audit.scrub_deleted(session)
    session.commit()
    if deleted:
        gone.forget_after_response()
    flash(_deleted_message(deleted, held))
    return redirect(url_for("admin.spam"), 303)


def _deletable_spam(session):
    """Visible spam that this admin may delete (not on legal hold)."""
    return retention.visible_now(session, retention.SPAM) & Inquiry.legal_hold.is_(False) & in_scope(Permission.DELETE)


def _moved_message(moved: int) -> str:
    return ngettext("Moved %(num)s inquiry to the inbox.", "Moved %(num)s inquiries to the inbox.", moved)


def _deleted_message(deleted: int, held: int) -> str:
    message = ngettext(
        "Deleted %(num)s inquiry from the spam folder.", "Deleted %(num)s inquiries from the spam folder.", deleted
    )
    if held:
        message += " " + ngettext("%(num)s on legal hold kept.", "%(num)s on legal hold kept.", held)
    return message
