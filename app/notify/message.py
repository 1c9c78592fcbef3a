"""What a notification says, built at send time from the inquiry (nothing is stored).

By default no personal data: the inquiry's number, when it arrived and the
link to it. With content included (an admin setting): name, address and
message too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from flask import current_app
from flask_babel import gettext as _

from app import i18n
from app.forms import answers as form_answers
from app.models import Delivery, Form, Inquiry


@dataclass(frozen=True)
class Notice:
    """The facts of one notification: a new inquiry (``inquiry`` set) or a test."""

    delivery: Delivery
    inquiry: Inquiry | None
    include_content: bool
    form: Form | None = None  # the inquiry's form

    @property
    def is_test(self) -> bool:
        """An admin's "Send a test notification"."""
        return self.inquiry is None

    @property
    def url(self) -> str:
        """Where an admin reads it: the inquiry, or the Notifications page for a test."""
        origin = current_app.config["ORIGIN"]
        return f"{origin}/admin/notifications" if self.is_test else f"{origin}/admin/inquiries/{self.inquiry.id}"


def local_time(moment: datetime) -> str:
    """``2026-12-02 14:05 (Europe/Berlin)`` in ``SUNDOWN_TIME_ZONE``, written the notification language's way."""
    return f"{i18n.local_datetime(moment)} ({current_app.config['TIME_ZONE']})"


def subject(notice: Notice) -> str:
    """The e-mail's subject line."""
    if notice.is_test:
        return _("Test notification from Sundown")
    return _("New inquiry #%(id)s", id=notice.inquiry.id)


def text_body(notice: Notice) -> str:
    """The e-mail's plain-text body."""
    if notice.is_test:
        lines = [_("This is a test notification: e-mail notifications of new inquiries work."), "", notice.url]
        return "\n".join(lines) + "\n"
    inquiry = notice.inquiry
    lines = [_("New inquiry #%(id)s received %(time)s", id=inquiry.id, time=local_time(inquiry.created_at)),
             "", notice.url]
    if notice.form is not None:
        lines.insert(1, _("Form: %(form)s", form=notice.form.slug))
    if notice.include_content:
        rows = form_answers.rows_of(inquiry)
        if rows is None:
            lines += ["", _("Name: %(name)s", name=inquiry.name), _("E-mail: %(email)s", email=inquiry.email), "",
                      inquiry.message]
        else:
            lines += ["", *(f"{label}: {words}" for label, words in rows)]
    return "\n".join(lines) + "\n"


PAYLOAD_VERSION = 2  # docs/notifications.md documents each version's shape


def webhook_payload(notice: Notice, now: datetime) -> dict:
    """The webhook's JSON: ``version``, ``inquiry.received`` (or ``test``), ``timestamp`` and ``data``.

    ``data`` names the form (``form``: its slug); with content included it
    also carries ``name``, ``email`` and ``message`` as before, and
    ``answers``: every answer by field key (a list for several choices, true
    or false for a consent).
    """
    if notice.is_test:
        return {"version": PAYLOAD_VERSION, "type": "test", "timestamp": now.isoformat(), "data": {"url": notice.url}}
    inquiry = notice.inquiry
    data = {"id": inquiry.id, "received_at": inquiry.created_at.isoformat(), "url": notice.url,
            "form": notice.form.slug if notice.form is not None else None}
    if notice.include_content:
        data.update(name=inquiry.name, email=inquiry.email, message=inquiry.message,
                    answers=form_answers.by_key(inquiry))
    return {"version": PAYLOAD_VERSION, "type": "inquiry.received", "timestamp": now.isoformat(), "data": data}
