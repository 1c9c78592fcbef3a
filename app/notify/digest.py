"""The optional digests: at most one e-mail, or one chat message per service, per interval, listing the
inquiries since the last.

With a digest interval of N minutes (for e-mail any number, for each chat
channel each inquiry, an hour or a day), an inquiry's row on that channel is
enqueued due at the end of its window (windows aligned to the epoch, the
same in every process). The first of the window's rows to be claimed takes
the other due ones of its channel along, and one message lists them all;
each row is still recorded on its own, so a failed digest retries like any
delivery. Past the hourly cap, e-mail and chat rows wait for the end of the
hour the same way (``DeliveryKind.CAPPED``). Webhooks are never batched. A
form with recipients (or chat URLs) of its own gets one message per inquiry
on that channel: a digest lists only inquiries that go to the same place.
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
# The hourly cap's counter in ``rate_limits``: inquiries notified by e-mail or chat (``notify-email`` before
# chat; migration 0025 renamed the rows counting the hour of an upgrade).
CAP_BUCKET = "notify-messages"


def window_end(now: datetime, minutes: int) -> datetime:
    """The end of the digest window ``now`` falls in (a window includes its start, not its end)."""
    seconds = minutes * 60
    return datetime.fromtimestamp((math.floor(now.timestamp() / seconds) + 1) * seconds, UTC)


CHAT_CHOICES = (0, 60, 24 * 60)  # a chat channel's digest: each inquiry, one message an hour, one a day


def cappable(channel: str) -> bool:
    """Whether ``channel``'s messages wait for a digest past the hourly cap (e-mail and chat; not webhooks)."""
    return channel != DeliveryChannel.WEBHOOK


def own_place(form, channel: str) -> bool:
    """Whether ``form`` sends ``channel``'s messages to a place of its own (recipients, chat URLs)."""
    if form is None:
        return False
    return form.notify_emails is not None if channel == DeliveryChannel.EMAIL else bool(form.notify_urls)


def minutes_of(config: Notifications, form, channel: str = DeliveryChannel.EMAIL) -> int:
    """The digest interval of ``channel`` for inquiries to ``form`` under ``config``; 0 for none."""
    if not cappable(channel) or own_place(form, channel):
        return 0
    return config.digest_minutes if channel == DeliveryChannel.EMAIL else config.chat_digest.get(channel, 0)


def batches(config: Notifications, form, channel: str = DeliveryChannel.EMAIL) -> bool:
    """Whether inquiry messages on ``channel`` under ``config`` wait for a digest: an interval is set and
    they go to the site's place (a form with its own gets one message per inquiry)."""
    return minutes_of(config, form, channel) > 0


def applies(notice: Notice, config: Notifications) -> bool:
    """Whether this delivery goes out in a digest: an inquiry's e-mail or chat message to the site's place
    with an interval set, or one held back by the hourly cap (``DeliveryKind.CAPPED``)."""
    kind = notice.delivery.kind
    listed = (DeliveryKind.INQUIRY, DeliveryKind.CAPPED, DeliveryKind.SPAM)
    if not cappable(notice.delivery.channel) or kind not in listed:
        return False  # a test goes on its own
    return kind == DeliveryKind.CAPPED or batches(config, notice.form, notice.delivery.channel)


def claim_companions(
    session: Session,
    first_id: int,
    now: datetime,
    lease_until: datetime,
    kinds: tuple[str, ...] = (DeliveryKind.INQUIRY, DeliveryKind.CAPPED),
    channel: str = DeliveryChannel.EMAIL,
) -> dict[int, datetime]:
    """The other inquiries' rows on ``channel`` to the site's place to list (up to ``MAX_LISTED``): those this
    sender already holds (``lease_until``) and those due now, leased here; their ids and leases."""
    held = (Delivery.status == DeliveryStatus.PENDING) & (Delivery.lease_until == lease_until)
    own_column = Form.notify_emails if channel == DeliveryChannel.EMAIL else Form.notify_urls
    own_recipients = select(Form.id).where(own_column.is_not(None))
    candidates = session.execute(
        select(Delivery.id, Delivery.lease_until)
        .join(Inquiry, Inquiry.id == Delivery.inquiry_id)
        .where(
            or_(store.due_now(now), held),
            Delivery.channel == channel,
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
