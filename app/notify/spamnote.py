"""Spam is never silent: the recipients of a form's notifications hear how many of its inquiries went to spam.

The first inquiry a form's spam folder receives in a window enqueues one e-mail delivery of kind ``spam``
(``app.notify.note_spam``), due at the window's end: a day, or the digest's interval when the form's
e-mails go in the site's digest. One counter upsert per spam inquiry decides which is first
(``app.core.ratelimit``, whose windows are the digest's: aligned to the epoch). No scheduler: the
outbox's pass after responses sends it when due, like a digest.

It goes in the digest when one is configured (``app.notify.digest`` lists it after the inquiries), else
alone: per form, how many of the window's inquiries are in spam, the dates they will be deleted (the
form's own spam retention, else the site's) and a link to the Spam page. Never a word of what they
said, nor who sent it. Its row goes with the window's first spam inquiry: deleted from the Spam page
before the note went, the note goes with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage

from flask import current_app
from flask_babel import gettext as _
from flask_babel import ngettext
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.core import i18n
from app.forms import store as form_store
from app.inquiries import retention
from app.models import DeliveryKind, Inquiry, InquiryStatus
from app.notify import digest
from app.notify.channels import email
from app.notify.message import Notice
from app.notify.settings import Notifications

DAY_MINUTES = 24 * 60  # without a digest, one note a day at most per form
BUCKET = "spam-note"  # the counter's bucket: one hit per spam inquiry, per form and window


def window_minutes(config: Notifications, form) -> int:
    """The note's window for ``form`` under ``config``: the digest's interval when its e-mails wait for
    the digest, else a day."""
    return config.digest_minutes if digest.batches(config, form) else DAY_MINUTES


def is_note(notice: Notice) -> bool:
    """Whether ``notice`` is a spam note rather than an inquiry's notification."""
    return notice.delivery.kind == DeliveryKind.SPAM


@dataclass(frozen=True)
class Count:
    """A form's spam in one window: how many are still there, and between which dates they go."""

    title: str
    slug: str | None
    count: int
    first_deleted: datetime
    last_deleted: datetime

    def line(self) -> str:
        """One line of the note: the form, the count and the deletion date or dates."""
        first, last = i18n.local_date(self.first_deleted), i18n.local_date(self.last_deleted)
        when = first if first == last else _("%(first)s to %(last)s", first=first, last=last)
        return ngettext(
            "%(form)s: %(num)d inquiry went to spam; it will be deleted on %(when)s.",
            "%(form)s: %(num)d inquiries went to spam; they will be deleted on %(when)s.",
            self.count,
            form=self.title,
            when=when,
        )

    @property
    def url(self) -> str:
        """The Spam page, showing this form's spam."""
        origin = current_app.config["ORIGIN"]
        return f"{origin}/admin/spam" + (f"?form={self.slug}" if self.slug else "")


def counts(session: Session, notices: list[Notice], config: Notifications) -> list[Count]:
    """The count of each note of ``notices`` (the others are left out), read now: inquiries moved out of
    spam or deleted meanwhile are not counted; a window with none left gives no line."""
    found = []
    for notice in notices:
        if not is_note(notice):
            continue
        first = notice.received
        minutes = window_minutes(config.for_form(notice.form), notice.form)
        end = digest.window_end(first.created_at, minutes)
        count, oldest, newest = session.execute(
            select(func.count(), func.min(Inquiry.created_at), func.max(Inquiry.created_at)).where(
                Inquiry.status == InquiryStatus.SPAM,
                Inquiry.form_id.is_(None) if first.form_id is None else Inquiry.form_id == first.form_id,
                Inquiry.created_at >= end - timedelta(minutes=minutes),
                Inquiry.created_at < end,
            )
        ).one()
        if not count:
            continue
        own = notice.form.spam_retention_days if notice.form is not None else None
        days = timedelta(days=own or retention.retention_days(session, retention.SPAM))
        title = form_store.words(notice.form.title) if notice.form is not None else "—"
        slug = notice.form.slug if notice.form is not None else None
        found.append(Count(title, slug, count, _aware(oldest) + days, _aware(newest) + days))
    return found


def lines(found: list[Count]) -> str:
    """The note's paragraph: a line and a link per form (the digest's last paragraph, or the whole note);
    nothing when no form's spam is left to tell of."""
    if not found:
        return ""
    parts = [_("Went to spam, and notified to nobody else:")]
    for count in found:
        parts += [count.line(), count.url]
    return "\n".join(parts)


def build(notice: Notice, found: list[Count], recipients: list[str], now: datetime) -> EmailMessage:
    """The note alone: its Message-ID is the row's key; no Reply-To (spam's sender is nobody to answer)."""
    message = email.build(notice, recipients, now)
    del message["Reply-To"]
    del message["Subject"]
    total = sum(count.count for count in found)
    message["Subject"] = ngettext("%(num)d inquiry went to spam", "%(num)d inquiries went to spam", total)
    message.set_content(lines(found) + "\n")
    return message


def _aware(moment: datetime) -> datetime:
    """SQLite gives back the aggregate of a time column without its zone; it is UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
