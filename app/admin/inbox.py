"""The inbox list and the detail page of one inquiry; the list of any folder (the Spam page too)."""

from __future__ import annotations

from datetime import timedelta

from flask import render_template, request
from flask_babel import gettext as _
from flask_login import current_user
from sqlalchemy import ColumnElement, func, select, true
from sqlalchemy.orm import Session
from werkzeug.exceptions import BadRequest

from app import cleanup
from app.admin import bp, guard, workflow
from app.admin.inquiries import (
    SHOW,
    Count,
    Cursor,
    count_capped,
    get_inquiry_or_404,
    in_scope,
    inbox_page,
    listed,
    unread_count,
)
from app.attachments import store as attachment_store
from app.auth import permissions
from app.auth.permissions import Permission
from app.conversations import references, thread
from app.core import clock, db
from app.forms import answers as form_answers
from app.forms import store as form_store
from app.inquiries import access, reads, retention, search, signals, triage
from app.models import Admin, Form, Inquiry, InquiryState
from app.notify.channels import email
from app.replies import compose, sending
from app.replies import message as reply_message

MAX_QUERY_LENGTH = 254
MIN_QUERY_LENGTH = search.TRIGRAM  # shorter text cannot use the index, and would read every message


@bp.get("/")
def inbox():
    """Visible inquiries, newest first, 50 a page; searched, and filtered to unread or unanswered."""
    return folder_page(retention.INBOX, "admin.inbox", "admin_inbox")


@bp.get("/inquiries/<int:inquiry_id>")
def detail(inquiry_id: int):
    """The whole inquiry (opening it records this admin's opening and makes it read for them), reply,
    answered, hold and delete; "Not spam" for spam.

    Only an admin's own navigation counts as opening it: a link or image on
    another site that makes the browser load the page (``Sec-Fetch-Site``
    cross-site or same-site) does not. A browser that sends no such header
    is trusted.
    """
    if request.headers.get("Sec-Fetch-Site", "same-origin") in ("same-origin", "none"):
        workflow.record_opening(inquiry_id)
    return render_detail(get_inquiry_or_404(inquiry_id))


def render_detail(
    inquiry,
    errors: dict | None = None,
    reply_draft: compose.Draft | None = None,
    reply_errors: dict | None = None,
    note_draft: str = "",
) -> str:
    """The detail page of ``inquiry``, with the form ``errors`` to show (the hold's or the note's, or the
    composer's ``reply_errors`` with what was written)."""
    session = db.get_session()
    form = session.get(Form, inquiry.form_id) if inquiry.form_id is not None else None
    replies, files = sending.of_inquiry(session, inquiry.id), attachment_store.of_inquiry(session, inquiry.id)
    return render_template(
        "admin/detail.html",
        **_triage_of(session, inquiry),
        note_draft=note_draft,
        accesses=access.of_inquiry(session, inquiry.id),
        inquiry=inquiry,
        errors=errors or {},
        replies=replies,
        thread=thread.entries(session, inquiry.id, replies, files),
        can_reply=compose.available(inquiry),
        reply_draft=reply_draft or compose.draft(inquiry, form),
        reply_errors=reply_errors or {},
        smtp_configured=email.configured(),
        deletion_due=retention.deletion_due(session, inquiry),
        answered_by=workflow.answered_by_name(inquiry),
        answers=form_answers.rows_of(inquiry),
        mine=reads.of(session, inquiry.id, current_user.id),
        form=form,
        attachments=thread.form_files(files),
        answers_come_back=references.configured(),
        reply_address=compose.reply_to(current_user.email, inquiry.id),
        reply_sender=reply_message.sender(),
    )


def _triage_of(session, inquiry) -> dict:
    """What the triage card of the detail page shows."""
    row = triage.triage_of(session, [inquiry.id]).get(inquiry.id)
    admins = session.scalars(select(Admin).order_by(Admin.name))
    return {
        "state": row.state if row else InquiryState.OPEN,
        "assigned_to": row.assigned_to if row else None,
        "tags": triage.tags_of(session, [inquiry.id]).get(inquiry.id, []),
        "all_tags": triage.all_tags(session),
        "notes": triage.notes_of(session, [inquiry.id]).get(inquiry.id, []),
        "states": list(InquiryState),
        "assignees": [admin for admin in admins if permissions.may(admin, Permission.READ, inquiry.form_id)],
    }


def folder_page(policy: retention.Policy, endpoint: str, trigger: str) -> tuple[str, int]:
    """One folder's list page: its rows, the count of matches, the search and filters, the pager."""
    typed, query, query_error = search_arg()
    show = request.args.get("show", "")
    if show and show not in SHOW:
        raise BadRequest(_("Unknown filter: show unread or unanswered inquiries, or every inquiry."))
    session = db.get_session()
    forms = [each for each in form_store.all_forms(session) if guard.may(Permission.READ, each.id)]
    form = form_arg(forms)
    triaged, narrowed = triage_filters()
    where = listed(session, policy, query, show, form.id if form else None, reader=current_user.id) & in_scope()
    page = inbox_page(session, after=_cursor_arg("after"), before=_cursor_arg("before"), where=where & narrowed)
    ids = [row.id for row in page.rows]
    cleanup.trigger(trigger)
    return render_template(
        "admin/inbox.html",
        typed=typed,
        query_error=query_error,
        spam_matches=_spam_matches(session, policy, query, form, page.rows),
        triaged=triaged,
        other_filters={k: v for k, v in triaged.items() if k != "assigned"},
        states=list(InquiryState),
        all_tags=triage.all_tags(session),
        triage_rows=triage.triage_of(session, ids),
        row_tags=triage.tags_of(session, ids),
        page=page,
        query=query,
        show=show,
        folder=policy.status,
        endpoint=endpoint,
        forms=forms,
        form=form.slug if form else "",
        form_slugs={each.id: each.slug for each in forms},
        matches=count_capped(session, where & narrowed),
        file_counts=attachment_store.counts(session, [row.id for row in page.rows]),
        read_ids=reads.read_ids(session, current_user.id, [row.id for row in page.rows]),
        spam_count=count_capped(session, listed(session, retention.SPAM) & in_scope()),
        spam_days=retention.spam_retention_days(session),
        **_spam_context(session),
    ), (400 if query_error else 200)


def search_arg() -> tuple[str, str, str]:
    """The search as typed, the search to run (empty when it cannot be run) and why it cannot; a search
    too short to use the index is explained on the page, and one longer than any field is refused."""
    typed = request.args.get("q", "").strip()
    if len(typed) > MAX_QUERY_LENGTH:
        raise BadRequest(_("The search is too long (at most %(limit)d characters).", limit=MAX_QUERY_LENGTH))
    if 0 < len(typed) < MIN_QUERY_LENGTH:
        return typed, "", _("Search for at least %(limit)d characters.", limit=MIN_QUERY_LENGTH)
    return typed, typed, ""


def _spam_matches(session: Session, policy: retention.Policy, query: str, form: Form | None, rows) -> Count | None:
    """How many spam inquiries match a search that found nothing in the inbox (None when not asked)."""
    if rows or not query or policy.status != retention.INBOX.status:
        return None
    found = count_capped(
        session, listed(session, retention.SPAM, query, form_id=form.id if form else None) & in_scope()
    )
    return found if found.value else None


def triage_filters() -> tuple[dict[str, str], ColumnElement[bool]]:
    """The triage filters asked for (``state``, ``assigned``: mine or unassigned, ``tag``: an id), as the
    arguments to keep across links and the condition they make; a 400 for a value not offered."""
    chosen = {name: request.args.get(name, "") for name in ("state", "assigned", "tag")}
    condition: ColumnElement[bool] = true()
    if chosen["state"]:
        if chosen["state"] not in set(InquiryState):
            raise BadRequest(_("Unknown state: choose open, waiting or closed, or any state."))
        condition &= triage.in_state(InquiryState(chosen["state"]))
    if chosen["assigned"]:
        if chosen["assigned"] not in ("mine", "unassigned"):
            raise BadRequest(_("Unknown filter: show the inquiries assigned to you, or those assigned to nobody."))
        condition &= triage.assigned_to(current_user.id if chosen["assigned"] == "mine" else None)
    if chosen["tag"]:
        if not chosen["tag"].isdigit():
            raise BadRequest(_("Unknown tag: choose one of the list, or any tag."))
        condition &= triage.tagged(int(chosen["tag"]))
    return {name: value for name, value in chosen.items() if value}, condition


def _spam_context(session: Session) -> dict:
    """What the inbox and the Spam page show of spam beside their list: how many arrived in spam in the
    last seven days, the list of words, and each form's own spam retention."""
    week = session.scalar(
        select(func.count())
        .select_from(Inquiry)
        .where(
            retention.visible_now(session, retention.SPAM),
            Inquiry.created_at >= clock.now() - timedelta(days=7),
            in_scope(),
        )
    )
    own = [
        (form.slug, form_store.words(form.title), form.spam_retention_days)
        for form in form_store.all_forms(session)
        if form.spam_retention_days
    ]
    return {"spam_week": week, "spam_words": signals.stored_words(session), "form_spam_days": own}


def form_arg(forms: list[Form]) -> Form | None:
    """The form named by the ``form`` argument (a slug), None for every form; 400 for an unknown one."""
    slug = request.args.get("form", "")
    if not slug:
        return None
    found = next((each for each in forms if each.slug == slug), None)
    if found is None:
        raise BadRequest(_("Unknown form: choose one of the list, or every form."))
    return found


def unread_inquiries():
    """``unread_inquiries()`` for the admin navigation, the inquiries this admin has not read: counted only when
    a page asks, for a logged-in admin who may read inquiries."""
    if not guard.may(Permission.READ):
        return None
    return unread_count(db.get_session(), current_user.id)


def _cursor_arg(name: str) -> Cursor | None:
    token = request.args.get(name)
    return Cursor.decode(token) if token else None
