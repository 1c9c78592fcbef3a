"""The composer on an inquiry's page: the draft an admin starts from, and the checks of what they send.

Plain text only. The draft's subject is ``Re:`` and the form's title; its
body leaves room above the person's message, quoted (``> ``) under a line
saying who wrote it and when; the admin edits all of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import current_app
from flask_babel import gettext as _

from app.conversations import references
from app.core.i18n import local_time
from app.forms import store as form_store
from app.models import Form, Inquiry, InquiryStatus
from app.notify.channels.email import configured
from app.replies.message import header_text

SUBJECT_MAX = 200
BODY_MAX = 20_000


@dataclass(frozen=True)
class Draft:
    """What the composer shows: the subject and body (a draft, or what was sent back with errors)."""

    subject: str
    body: str


def available(inquiry: Inquiry) -> bool:
    """Whether a reply can be sent from the inbox: an e-mail server is set, the inquiry has an address and
    is in the inbox (spam is moved there first)."""
    return configured() and bool(inquiry.email) and inquiry.status == InquiryStatus.INBOX


def draft(inquiry: Inquiry, form: Form | None) -> Draft:
    """The composer's starting text: ``Re: <form title>``, and the message quoted under who wrote it."""
    title = form_store.words(form.title) if form is not None else ""
    subject = _("Re: %(topic)s", topic=title) if title else _("Your inquiry")
    quoted = [f"> {line}" if line else ">" for line in inquiry.message.splitlines()]
    body = "\n".join(
        [
            "",
            "",
            _(
                "On %(when)s, %(name)s wrote:",
                when=local_time(inquiry.created_at),
                name=header_text(inquiry.name or inquiry.email, 100),
            ),
            *quoted,
        ]
    )
    return Draft(header_text(subject, SUBJECT_MAX), body)


def check(fields) -> tuple[Draft, dict[str, str]]:
    """The subject and body sent from the composer, cleaned, and an error by field (empty when fine)."""
    subject = header_text(fields.get("subject", ""), SUBJECT_MAX + 1)
    body = fields.get("body", "").replace("\r\n", "\n").replace("\r", "\n")
    errors = {}
    if not subject:
        errors["subject"] = _("Write a subject.")
    elif len(subject) > SUBJECT_MAX:
        errors["subject"] = _("The subject is too long (at most %(limit)d characters).", limit=SUBJECT_MAX)
    if not body.strip():
        errors["body"] = _("Write a reply.")
    elif len(body) > BODY_MAX:
        errors["body"] = _("The reply is too long (at most %(limit)d characters).", limit=BODY_MAX)
    return Draft(subject, body), errors


def reply_to(admin_email: str | None, inquiry_id: int) -> str | None:
    """Where the person's answer goes: back into the inquiry's thread when answers come back
    (``SUNDOWN_INBOUND_ADDRESS``), else the admin's own address, else the team's (``SUNDOWN_REPLY_TO``)."""
    return references.reply_address(inquiry_id) or admin_email or current_app.config["REPLY_TO"]
