"""The optional e-mail digest: at most one e-mail per interval, listing the inquiries since the last.

With a digest interval of N minutes, an inquiry's e-mail row is enqueued due
at the end of its window (windows aligned to the epoch, the same in every
process). The first of the window's rows to be claimed takes the other due
ones along, and one e-mail lists them all; each row is still recorded on its
own, so a failed digest retries like any e-mail. Webhooks are never batched.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from email.message import EmailMessage

from flask_babel import gettext as _
from flask_babel import ngettext
from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from app.models import Delivery, DeliveryChannel, DeliveryKind, DeliveryStatus, Form, Inquiry
from app.notify.channels import email
from app.notify.message import Notice, files_line, local_time
from app.notify.settings import Notifications
from app.outbox import store

MAX_LISTED = 100


CAP_WINDOW_MINUTES = 60  # e-mails over the hourly cap wait for the end of the hour, then go as one


def window_end(now: datetime, minutes: int) -> datetime:
    """The end of the digest window ``now`` falls in (a window includes its start, not its end)."""
    seconds = minutes * 60
    return datetime.fromtimestamp((math.floor(now.timestamp() / seconds) + 1) * seconds, UTC)


def batches(config: Notifications, form) -> bool:
    """Whether inquiry e-mails under ``config`` wait for a digest: an interval is set and they go to the
    site's recipients (a form with recipients of its own gets one e-mail per inquiry)."""
    return config.digest_minutes > 0 and (form is None or form.notify_emails is None)


def applies(notice: Notice, config: Notifications) -> bool:
    """Whether this delivery goes out in a digest: an inquiry's e-mail to the site's recipients with an
    interval set, or one held back by the hourly cap (``DeliveryKind.CAPPED``)."""
    kind = notice.delivery.kind
    listed = (DeliveryKind.INQUIRY, DeliveryKind.CAPPED, DeliveryKind.SPAM)
    if notice.delivery.channel != DeliveryChannel.EMAIL or kind not in listed:
        return False  # a test goes on its own
    return kind == DeliveryKind.CAPPED or batches(config, notice.form)


def claim_companions(
    session: Session,
    first_id: int,
    now: datetime,
    lease_until: datetime,
    kinds: tuple[str, ...] = (DeliveryKind.INQUIRY, DeliveryKind.CAPPED),
) -> dict[int, datetime]:
    """The other inquiry e-mails to the site's recipients to list (up to ``MAX_LISTED``): those this sender
    already holds (``lease_until``) and those due now, leased here; their ids and leases."""
    held = (Delivery.status == DeliveryStatus.PENDING) & (Delivery.lease_until == lease_until)
    own_recipients = select(Form.id).where(Form.notify_emails.is_not(None))
    candidates = session.execute(
        select(Delivery.id, Delivery.lease_until)
        .join(Inquiry, Inquiry.id == Delivery.inquiry_id)
        .where(
            or_(store.due_now(now), held),
            Delivery.channel == DeliveryChannel.EMAIL,
            Delivery.kind.in_(kinds),
            Delivery.id != first_id,
            or_(Inquiry.form_id.is_(None), Inquiry.form_id.not_in(own_recipients)),
        )
        .order_by(Delivery.id)
        .limit(MAX_LISTED - 1)
    ).all()
    leases = {}
    for delivery_id, lease in candidates:
        mine = lease_until if lease == lease_until else store.claim(session, delivery_id, now)
        if mine is not None:
            leases[delivery_id] = mine
    return leases


def build(notices: list[Notice], recipients: list[str], now: datetime, spam: str = "") -> EmailMessage:
    """One e-mail listing every inquiry of ``notices``, then ``spam``'s paragraph (``app.notify.spamnote``)
    when there is one; its Message-ID is the first row's key."""
    message = email.build(notices[0], recipients, now)
    del message["Reply-To"]  # several inquirers: no single one to reply to
    del message["Subject"]
    message["Subject"] = ngettext("%(num)d new inquiry", "%(num)d new inquiries", len(notices))
    message.set_content(body(notices) + (f"\n{spam}\n" if spam else ""))
    return message


def body(notices: list[Notice]) -> str:
    """The digest's plain text: a paragraph per inquiry, oldest first, its files among its lines
    (``message.files_line``)."""
    paragraphs = []
    for notice in sorted(notices, key=lambda each: each.received.id):
        inquiry = notice.received
        lines = [_("New inquiry #%(id)s received %(time)s", id=inquiry.id, time=local_time(inquiry.created_at))]
        if notice.files:
            lines.append(files_line(notice))
        lines.append(notice.url)
        if notice.include_content:
            lines += [
                _("Name: %(name)s", name=inquiry.name),
                _("E-mail: %(email)s", email=inquiry.email),
                inquiry.message,
            ]
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs) + "\n"
