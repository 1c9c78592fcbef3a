"""Every name templates get beyond Flask's and its extensions': the filters, the globals, the context.

A name a template uses is found here and followed to the module that
implements it; ``create_app`` registers them all through ``init_app``.
Flask itself adds ``url_for``, ``request``, ``session``, ``g`` and
``get_flashed_messages``; Flask-Babel ``_``, ``gettext`` and ``ngettext``;
Flask-WTF ``csrf_token``; Flask-Login ``current_user``.

A global that reads the database is a function, called only by the page
that shows it, so no other page pays for it and an error page can skip it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask

from app import attachments, forms
from app.admin import display, guard, labels, workflow
from app.admin.inbox import unread_inquiries
from app.admin.notifications import deliveries_failing
from app.admin.replies import state_words as reply_state_words
from app.attachments import rules as attachment_rules
from app.cleanup import alarm as cleanup_alarm
from app.core import i18n
from app.forms import store as form_store
from app.inquiries import retention
from app.models import CleanupStatus, ReplyKind, ReplyStatus
from app.replies import sending as reply_sending

FILTERS: dict[str, Callable[..., Any]] = {
    "local_time": i18n.local_time,  # a moment in TIME_ZONE, the language's way
    "local_date": i18n.local_date,
    "number": i18n.number,
    "days": i18n.days,  # "180 days", in the language's plural
    "file_size": attachment_rules.file_size,
    "first_line": display.first_line,  # a message's first line, shortened for the inbox
    "preview": display.preview,  # the first line of the message or of the first long answer
    "who": display.who,  # the name, else the address, else "Inquiry #N"
    "inquiry_title": display.inquiry_title,
    "mailto": display.mailto,
    "browser": display.browser,  # a user agent as "Firefox 133 on Linux"
    "inquiry_count": display.inquiry_count,
    "match_count": display.match_count,  # "1 inquiry matches “tax”."
    "label": labels.label,  # words for a stored code (cleanup target, audit action ...)
    "spam_check": labels.spam_check,  # words for why an inquiry is in spam (Inquiry.spam_checks)
    "reply_link": workflow.reply_link,  # mailto: with the subject and the message quoted
    "reply_state": reply_state_words,  # "Queued", "Sent" ... (also in replies.json, for static/replies.js)
}

GLOBALS: dict[str, Any] = {
    "words": form_store.words,  # an admin's text in the request's language
    "field_aria": forms.field_aria,
    "input_aria": forms.input_aria,
    "file_limits": attachments.file_limits,
    "previewed_types": attachment_rules.PREVIEWED,  # file types an admin sees inline
    "CleanupStatus": CleanupStatus,  # templates compare a run's status with it, never with bare strings
    "ReplyKind": ReplyKind,  # a reply's kind and state, compared with these, never with bare strings
    "ReplyStatus": ReplyStatus,
    "REPLY_RETRYING": reply_sending.RETRYING,
    "min_days": retention.MIN_DAYS,
    "max_days": retention.MAX_DAYS,
    "can": guard.can,  # can("inquiries.delete"): whether the logged-in admin holds a permission
    "unread_inquiries": unread_inquiries,  # the admin navigation's count (a query)
    "deliveries_failing": deliveries_failing,  # the admin pages' banner (a query)
    "cleanup_overdue": cleanup_alarm.overdue_now,  # the owners' banner (remembered a minute per process)
}

# Run at every render: values that depend on the request.
CONTEXT: tuple[Callable[[], dict[str, Any]], ...] = (
    i18n.page_language,  # <html lang>, the language links, the scripts' messages
)


def init_app(app: Flask) -> None:
    """Register every filter, global and context function above on ``app``."""
    app.jinja_env.filters.update(FILTERS)
    app.jinja_env.globals.update(GLOBALS)
    for function in CONTEXT:
        app.context_processor(function)
