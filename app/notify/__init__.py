"""Notifications of new inquiries: e-mail and signed webhooks, through the outbox (``app.outbox``).

Each module does one thing:

* ``settings``: the operator's (environment) and the admins' (``preferences`` table)
  settings; ``state``: the settings new inquiries are enqueued under, read once a second.
* ``channels``: one module per channel (``email``, ``webhook``, the six chat services), one protocol,
  the one registry.
* ``sending``: the handler the outbox sends this package's deliveries with; ``message``: what a
  notification says; ``digest``: the digests (e-mail and chat) and the hourly cap's hold.
* ``log``: the delivery log of the Notifications page (the last 30 days, paged).
* ``health``: what the admin pages show (``POST /internal/deliver`` is in ``app.web.internal``).

Views call ``enqueue_inquiries(session, inquiry_ids)`` inside the transaction that
saves (or un-spams) inquiries, ``cancel_inquiries`` in the one that moves them to spam;
``app.conversations`` calls ``enqueue_message(session, inquiry_id)`` in the one that puts a
person's answer into its inquiry's conversation.
"""

from __future__ import annotations

from flask import Flask, current_app
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.core import clock, metrics, ratelimit
from app.inquiries import forecast_store
from app.models import DeliveryChannel, DeliveryKind, Form, Inquiry
from app.notify import assignee, channels, digest, sending, settings, spamnote, state, warning
from app.notify.channels import email
from app.outbox import handlers, hook, store

CAP_SECONDS = 3600  # SUNDOWN_NOTIFY_HOURLY_CAP's window
_CAP_COUNTED_LAST = "notify_cap_counted_last"  # session.info: inquiries planned, their count left for the end


def init_app(app: Flask) -> None:
    """Give the app its settings memory, the metrics' channel labels, and the outbox its handler of
    notifications (the outbox is set up first)."""
    state.install(app)
    metrics.declare_delivery_channels(channel.name for channel in channels.CHANNELS)
    handlers.register(app, sending.KINDS, sending.HANDLER)
    handlers.register(app, warning.KINDS, warning.HANDLER)
    forecast_store.on_stored(app, _warn_before_first_deletion)


def _warn_before_first_deletion(snapshot: forecast_store.Snapshot) -> None:
    """Warn, after a stored forecast, of forms about to lose inquiries for the first time (``app.notify.warning``);
    the warning counts against the hourly cap like every e-mail."""
    warning.decide(snapshot.forecast, _one_over_cap)


def _one_over_cap(session: Session) -> bool:
    if _over_hourly_cap(session, 1):
        metrics.count_capped_notifications(1)
        return True
    return False


def enqueue_inquiries(
    session: Session, inquiry_ids: list[int], form: Form | None = None, cap_counted_last: bool = False
) -> int:
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
        names = channels.in_force(site.for_form(each_form))
        plan = _plan(session, site.for_form(each_form), each_form, names, len(ids), cap_counted_last)
        for (due, kind), group in plan.items():
            store.enqueue(session, ids, group, due=due, kind=kind)
        count += len(names) * len(ids)
    if count:
        hook.wake()
    return count


def _plan(
    session: Session,
    config: settings.Notifications,
    form: Form | None,
    names: list[str],
    count: int,
    cap_counted_last: bool,
) -> dict[tuple, list[str]]:
    """The channels of ``count`` inquiries grouped by when they are due and as what.

    With a digest on a channel, its rows wait for the end of their window;
    the rest go at once, unless the hourly cap is reached: then e-mail and
    chat wait for the end of the hour, and go as one (webhooks go at once).
    """
    now = clock.now()
    plan: dict[tuple, list[str]] = {}
    waiting = {name: digest.minutes_of(config, form, name) for name in names}
    cappable = [name for name in names if digest.cappable(name) and not waiting[name]]
    if not cappable:
        capped = False
    elif cap_counted_last:
        capped = _cap_reached(session, count)
        session.info[_CAP_COUNTED_LAST] = session.info.get(_CAP_COUNTED_LAST, 0) + count
    else:
        capped = _over_hourly_cap(session, count)
    if capped:
        metrics.count_capped_notifications(count)
    for name in names:
        if waiting[name]:
            key: tuple = (digest.window_end(now, waiting[name]), DeliveryKind.INQUIRY)
        elif capped and name in cappable:
            key = (digest.window_end(now, digest.CAP_WINDOW_MINUTES), DeliveryKind.CAPPED)
        else:
            key = (None, DeliveryKind.INQUIRY)
        plan.setdefault(key, []).append(name)
    return plan


def note_spam(session: Session, inquiry_id: int, form: Form | None) -> bool:
    """Count an inquiry that went to spam, in the caller's transaction; the window's first (per form, where its
    notifications go by e-mail) enqueues the note saying how many did (``app.notify.spamnote``). Whether
    it did. The note counts against the hourly cap like every e-mail: past it, it is left out."""
    config = settings.for_new_inquiries(session).for_form(form)
    if DeliveryChannel.EMAIL not in channels.in_force(config):
        return False
    minutes = spamnote.window_minutes(config, form)
    window = [ratelimit.Limit(1, minutes * 60)]
    if ratelimit.hit(spamnote.BUCKET, str(form.id if form is not None else 0), window, session) is not None:
        return False
    if _over_hourly_cap(session, 1):
        metrics.count_capped_notifications(1)
        return False
    due = digest.window_end(clock.now(), minutes)
    store.enqueue(session, [inquiry_id], [DeliveryChannel.EMAIL], due=due, kind=DeliveryKind.SPAM)
    hook.wake()
    return True


# What an inquiry's notifications are: moved to spam, those not sent yet are cancelled.
NOTIFICATION_KINDS = (DeliveryKind.INQUIRY, DeliveryKind.CAPPED, DeliveryKind.MESSAGE, DeliveryKind.ASSIGNEE)


def cancel_inquiries(session: Session, inquiry_ids: list[int]) -> int:
    """Cancel, in the caller's transaction, the notifications of ``inquiry_ids`` not sent yet, on every
    channel (those waiting for a digest, a retry or the end of the capped hour); how many. Moved to spam,
    an inquiry notifies nobody; moved back, it is enqueued again (``enqueue_inquiries``)."""
    return store.cancel(session, inquiry_ids, NOTIFICATION_KINDS)


def enqueue_message(session: Session, inquiry_id: int) -> int:
    """Enqueue, in the caller's transaction, one delivery per channel in force for the inquiry's form saying
    that the person answered (kind ``message``), and one e-mail to the inquiry's assignee (kind ``assignee``:
    whether it goes is decided at send time, ``app.notify.assignee``); how many. Never in a digest: past the
    hourly cap the e-mails and chat messages are left out (the inquiry is unread again all the same) and the
    webhook still goes."""
    [(form, _ids)] = _by_form(session, [inquiry_id]) or [(None, [])]
    names = channels.in_force(settings.for_new_inquiries(session).for_form(form))
    assigned = email.configured() and assignee.has_one(session, inquiry_id)
    if (assigned or any(digest.cappable(name) for name in names)) and _over_hourly_cap(session, 1):
        names = [name for name in names if not digest.cappable(name)]
        assigned = False
        metrics.count_capped_notifications(1)
    store.enqueue(session, [inquiry_id], names, kind=DeliveryKind.MESSAGE)
    if assigned:
        store.enqueue(session, [inquiry_id], [DeliveryChannel.EMAIL], kind=DeliveryKind.ASSIGNEE)
    if names or assigned:
        hook.wake()
    return len(names) + int(assigned)


def _over_hourly_cap(session: Session, count: int) -> bool:
    """Count ``count`` inquiries notified by e-mail or chat against ``SUNDOWN_NOTIFY_HOURLY_CAP``; whether
    the hour's cap is passed."""
    cap = [ratelimit.Limit(current_app.config["NOTIFY_HOURLY_CAP"], CAP_SECONDS)]
    return any(ratelimit.hit(digest.CAP_BUCKET, "all", cap, session) is not None for _ in range(count))


def cap_counted_last(session: Session) -> list[ratelimit.Added]:
    """What the hourly cap must count of the inquiries ``enqueue_inquiries(..., cap_counted_last=True)``
    planned in this transaction: a submission adds it in its last statement, with its own limits' hits.

    Every submission counts on the cap's one row, and PostgreSQL holds a row lock until the transaction
    ends: counted as the notifications were planned, the rest of each submission's transaction ran with
    every other one waiting on that row (submissions/s halved with e-mail on; docs/notifications.md). So
    the plan reads the count, without a lock, and the count is added last; submissions in flight at the
    same moment may each pass the cap by one.
    """
    count = session.info.pop(_CAP_COUNTED_LAST, 0)
    return [ratelimit.Added(digest.CAP_BUCKET, "all", CAP_SECONDS, count)] if count else []


def _cap_reached(session: Session, count: int) -> bool:
    """Whether ``count`` more inquiries notified by e-mail or chat would pass the hour's cap, counting those
    this transaction planned already; a read, nothing counted."""
    cap = ratelimit.Limit(current_app.config["NOTIFY_HOURLY_CAP"], CAP_SECONDS)
    counted = ratelimit.count_of(digest.CAP_BUCKET, "all", cap, session)
    return counted + session.info.get(_CAP_COUNTED_LAST, 0) + count > cap.count


def _by_form(session: Session, inquiry_ids: list[int]) -> list[tuple[Form | None, list[int]]]:
    rows = session.execute(select(Inquiry.id, Inquiry.form_id).where(Inquiry.id.in_(inquiry_ids))).all()
    forms: dict[int | None, Form] = {
        each.id: each
        for each in session.scalars(
            select(Form).where(Form.id.in_({form_id for _id, form_id in rows if form_id is not None}))
        )
    }
    grouped: dict[int | None, list[int]] = {}
    for inquiry_id, form_id in rows:
        grouped.setdefault(form_id, []).append(inquiry_id)
    return [(forms.get(form_id), sorted(ids)) for form_id, ids in grouped.items()]
