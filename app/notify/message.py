"""What a notification says, built at send time from the inquiry (nothing is stored).

By default no personal data: the inquiry's number, when it arrived, the
link to it and how many files came with it. With content included (an admin
setting): name, address and message too, and each file's name and size
(and type, in the webhook). Never a file's bytes, and never a link to one:
a file is read on its inquiry's admin page.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from flask import current_app
from flask_babel import gettext as _
from flask_babel import ngettext

from app.attachments.rules import file_size
from app.core import i18n
from app.forms import answers as form_answers
from app.models import Attachment, Delivery, Form, InboundMessage, Inquiry


@dataclass(frozen=True)
class File:
    """A file that came with an inquiry, as a notification names it: no bytes, no link."""

    name: str
    content_type: str
    size: int  # bytes

    @classmethod
    def of(cls, attachment: Attachment) -> File:
        """The facts of ``attachment`` a notification may tell."""
        return cls(attachment.name, attachment.content_type, attachment.size)


@dataclass(frozen=True)
class Notice:
    """The facts of one notification: a new inquiry (``inquiry`` set) or a test."""

    delivery: Delivery
    inquiry: Inquiry | None
    include_content: bool
    form: Form | None = None  # the inquiry's form
    files: tuple[File, ...] = ()  # the inquiry's, in the order they were sent
    answer: InboundMessage | None = None  # the person's answer a ``message`` delivery tells of
    listed: tuple[Notice, ...] = ()  # a chat digest's inquiries, this one first (``app.notify.digest``)

    @property
    def is_test(self) -> bool:
        """An admin's "Send a test notification"."""
        return self.inquiry is None

    @property
    def received(self) -> Inquiry:
        """The new inquiry this notifies of (a test has none)."""
        if self.inquiry is None:
            raise ValueError("a test notification notifies of no inquiry")
        return self.inquiry

    @property
    def url(self) -> str:
        """Where an admin reads it: the inquiry, or the Notifications page for a test."""
        origin = current_app.config["ORIGIN"]
        if self.listed:
            return f"{origin}/admin/"
        return f"{origin}/admin/notifications" if self.is_test else f"{origin}/admin/inquiries/{self.received.id}"


def local_time(moment: datetime) -> str:
    """``2026-12-02 14:05 (Europe/Berlin)`` in ``SUNDOWN_TIME_ZONE``, written the notification language's way."""
    return f"{i18n.local_datetime(moment)} ({current_app.config['TIME_ZONE']})"


def subject(notice: Notice) -> str:
    """The e-mail's subject line."""
    if notice.is_test:
        return _("Test notification from Sundown")
    if notice.answer is not None:
        return _("New message in inquiry #%(id)s", id=notice.received.id)
    return _("New inquiry #%(id)s", id=notice.received.id)


def text_body(notice: Notice) -> str:
    """The e-mail's plain-text body."""
    if notice.is_test:
        lines = [_("This is a test notification: e-mail notifications of new inquiries work."), "", notice.url]
        return "\n".join(lines) + "\n"
    if notice.answer is not None:
        return answer_body(notice)
    inquiry = notice.received
    lines = [_("New inquiry #%(id)s received %(time)s", id=inquiry.id, time=local_time(inquiry.created_at))]
    if notice.form is not None:
        lines.append(_("Form: %(form)s", form=notice.form.slug))
    if notice.files:
        lines.append(files_line(notice))
    lines += ["", notice.url]
    if notice.include_content:
        rows = form_answers.rows_of(inquiry)
        if rows is None:
            lines += [
                "",
                _("Name: %(name)s", name=inquiry.name),
                _("E-mail: %(email)s", email=inquiry.email),
                "",
                inquiry.message,
            ]
        else:
            lines += ["", *(f"{label}: {words}" for label, words in rows)]
    return "\n".join(lines) + "\n"


def answer_body(notice: Notice) -> str:
    """The e-mail's body for a person's answer: when, the link, and with content included what they wrote."""
    answer = notice.answer
    if answer is None:
        raise ValueError("not a notice of an answer")
    lines = [
        _(
            "New message in inquiry #%(id)s received %(time)s",
            id=notice.received.id,
            time=local_time(answer.received_at),
        ),
        "",
        notice.url,
    ]
    if notice.include_content:
        lines += ["", _("E-mail: %(email)s", email=answer.sender), answer.subject, "", answer.body]
    return "\n".join(lines) + "\n"


def files_line(notice: Notice) -> str:
    """The files that came with the inquiry, in a line: with content included each one's name and size
    ("Files: shot.png (12 KB), log.txt (3.4 MB)"), otherwise how many ("2 files attached")."""
    if not notice.include_content:
        return ngettext("%(num)d file attached", "%(num)d files attached", len(notice.files))
    listed = ", ".join(_("%(name)s (%(size)s)", name=each.name, size=file_size(each.size)) for each in notice.files)
    return _("Files: %(files)s", files=listed)


PAYLOAD_VERSION = 3  # docs/notifications.md documents each version's shape


def webhook_payload(notice: Notice, now: datetime) -> dict:
    """The webhook's JSON: ``version``, ``inquiry.received`` (or ``test``), ``timestamp`` and ``data``.

    ``data`` names the form (``form``: its slug) and counts the inquiry's
    files (``file_count``); with content included it also carries ``name``,
    ``email`` and ``message`` as before, ``answers``: every answer by field
    key (a list for several choices, true or false for a consent), and
    ``files``: each file's ``name``, ``type`` and ``size`` in bytes (no link:
    the receiver reads a file on the inquiry's page, ``url``).
    """
    if notice.is_test:
        return {"version": PAYLOAD_VERSION, "type": "test", "timestamp": now.isoformat(), "data": {"url": notice.url}}
    if notice.answer is not None:
        return answer_payload(notice, now)
    inquiry = notice.received
    data = {
        "id": inquiry.id,
        "received_at": inquiry.created_at.isoformat(),
        "url": notice.url,
        "form": notice.form.slug if notice.form is not None else None,
        "file_count": len(notice.files),
    }
    if notice.include_content:
        data.update(
            name=inquiry.name,
            email=inquiry.email,
            message=inquiry.message,
            answers=form_answers.by_key(inquiry),
            files=[{"name": each.name, "type": each.content_type, "size": each.size} for each in notice.files],
        )
    return {"version": PAYLOAD_VERSION, "type": "inquiry.received", "timestamp": now.isoformat(), "data": data}


def chat_lines(notice: Notice) -> list[str]:
    """A chat message's lines, in the notification language: the headline, the form, with content included
    the sender's name and the message's first line (never the whole message), the files; the link is the
    caller's to place (each service shows one its own way)."""
    if notice.is_test:
        return [subject(notice)]
    if notice.listed:
        return digest_lines(notice.listed)
    lines = [subject(notice)]
    if notice.form is not None:
        lines.append(_("Form: %(form)s", form=notice.form.slug))
    if notice.include_content and notice.inquiry is not None:
        first = next((line.strip() for line in notice.inquiry.message.splitlines() if line.strip()), "")
        lines.append(_("Name: %(name)s", name=notice.inquiry.name))
        if first:
            lines.append(first if len(first) <= FIRST_LINE else first[: FIRST_LINE - 1] + "…")
    if notice.files:
        lines.append(files_line(notice))
    return lines


def digest_lines(notices: tuple[Notice, ...]) -> list[str]:
    """A chat digest's lines: how many, then a line per inquiry (oldest first) with its form and files."""
    lines = [ngettext("%(num)d new inquiry", "%(num)d new inquiries", len(notices))]
    for each in sorted(notices, key=lambda notice: notice.received.id):
        inquiry = each.received
        words = [_("New inquiry #%(id)s received %(time)s", id=inquiry.id, time=local_time(inquiry.created_at))]
        if each.form is not None:
            words.append(_("Form: %(form)s", form=each.form.slug))
        if each.files:
            words.append(files_line(each))
        lines.append(" · ".join(words))
    return lines


FIRST_LINE = 200  # characters of the message's first line a chat message quotes


def answer_payload(notice: Notice, now: datetime) -> dict:
    """The webhook's JSON for a person's answer (``inquiry.message``): the inquiry's ``id``, ``received_at``
    (the answer's), ``url`` and ``form``; with content included ``email``, ``subject`` and ``message``."""
    answer = notice.answer
    if answer is None:
        raise ValueError("not a notice of an answer")
    data = {
        "id": notice.received.id,
        "received_at": answer.received_at.isoformat(),
        "url": notice.url,
        "form": notice.form.slug if notice.form is not None else None,
    }
    if notice.include_content:
        data.update(email=answer.sender, subject=answer.subject, message=answer.body)
    return {"version": PAYLOAD_VERSION, "type": "inquiry.message", "timestamp": now.isoformat(), "data": data}
