"""Notifications of new inquiries: e-mail and signed webhooks from a transactional outbox.

Each module does one thing:

* ``settings``: the operator's (environment) and the admins' (``settings`` table) settings.
* ``outbox``: rows enqueued with the inquiry; the leased claim; retries with backoff.
* ``deliver``: the send loop; ``message``: what a notification says; ``digest``: the e-mail digest.
* ``email`` and ``webhook``: the two channels.
* ``hook`` and ``state``: a pass after the response when something may be due.
* ``health``: what the admin pages show (``POST /internal/deliver`` is in ``app.web.internal``).

Views call ``enqueue_inquiry(session, inquiry)`` inside the transaction that
saves (or un-spams) an inquiry.
"""

from __future__ import annotations

from flask import Flask, current_app
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.core import clock, metrics, ratelimit
from app.models import Form, Inquiry
from app.notify import digest, hook, outbox, settings, state


def init_app(app: Flask) -> None:
    """Give the app its delivery state and its after-response hook."""
    state.install(app)
    hook.init_app(app)


def enqueue_inquiries(session: Session, inquiry_ids: list[int], form: Form | None = None) -> int:
    """Enqueue one delivery per channel in force for each inquiry, in the caller's transaction; how many.

    The channels are each inquiry's form's (``Notifications.for_form``): pass ``form`` when every inquiry
    answered it (a submission); otherwise their forms are read. The pass after the response sends them
    (``hook.wake``).
    """
    if not inquiry_ids:
        return 0
    site = settings.for_new_inquiries(session)
    groups = [(form, inquiry_ids)] if form is not None else _by_form(session, inquiry_ids)
    count = 0
    for each_form, ids in groups:
        config = site.for_form(each_form)
        channels = config.channels
        if not channels:
            continue
        # With a digest, e-mails to the site's recipients wait for the end of their window; the rest go at
        # once, unless the hourly cap is reached: then they wait for the end of the hour, and go as one.
        batched = ["email"] if digest.batches(config, each_form) and "email" in channels else []
        due = digest.window_end(clock.now(), config.digest_minutes) if batched else None
        kind = outbox.INQUIRY
        if "email" in channels and not batched and _over_hourly_cap(session, len(ids)):
            batched, kind = ["email"], outbox.CAPPED
            due = digest.window_end(clock.now(), digest.CAP_WINDOW_MINUTES)
            metrics.count_capped_notifications(len(ids))
        outbox.enqueue(session, ids, [channel for channel in channels if channel not in batched])
        outbox.enqueue(session, ids, batched, due=due, kind=kind)
        count += len(channels) * len(ids)
    if count:
        hook.wake()
    return count


def _over_hourly_cap(session: Session, count: int) -> bool:
    """Count ``count`` e-mails against ``SUNDOWN_NOTIFY_HOURLY_CAP``; whether the hour's cap is passed."""
    cap = [ratelimit.Limit(current_app.config["NOTIFY_HOURLY_CAP"], 3600)]
    return any(ratelimit.hit("notify-email", "all", cap, session) is not None for _ in range(count))


def _by_form(session: Session, inquiry_ids: list[int]) -> list[tuple[Form | None, list[int]]]:
    rows = session.execute(select(Inquiry.id, Inquiry.form_id).where(Inquiry.id.in_(inquiry_ids))).all()
    forms = {each.id: each for each in session.scalars(select(Form).where(
        Form.id.in_({form_id for _id, form_id in rows if form_id is not None})))}
    grouped: dict[int | None, list[int]] = {}
    for inquiry_id, form_id in rows:
        grouped.setdefault(form_id, []).append(inquiry_id)
    return [(forms.get(form_id), sorted(ids)) for form_id, ids in grouped.items()]
