"""Notifications of new inquiries: e-mail and signed webhooks from a transactional outbox.

Each module does one thing:

* ``settings``: the operator's (environment) and the admins' (``settings`` table) settings.
* ``outbox``: rows enqueued with the inquiry; the leased claim; retries with backoff.
* ``deliver``: the send loop; ``message``: what a notification says; ``digest``: the e-mail digest.
* ``email`` and ``webhook``: the two channels.
* ``hook`` and ``state``: a pass after the response when something may be due.
* ``health``: what the admin pages show (``POST /internal/deliver`` is in ``app.internal``).

Views call ``enqueue_inquiry(session, inquiry)`` inside the transaction that
saves (or un-spams) an inquiry.
"""

from __future__ import annotations

from flask import Flask
from sqlalchemy.orm import Session

from app import clock
from app.notify import digest, hook, outbox, settings, state


def init_app(app: Flask) -> None:
    """Give the app its delivery state and its after-response hook."""
    state.install(app)
    hook.init_app(app)


def enqueue_inquiries(session: Session, inquiry_ids: list[int]) -> int:
    """Enqueue one delivery per channel in force for each inquiry, in the caller's transaction; how many.

    The pass after the response sends them (``hook.wake``).
    """
    config = settings.for_new_inquiries(session)
    channels = config.channels
    if not channels or not inquiry_ids:
        return 0
    # With a digest, e-mails wait for the end of their window; webhooks go at once.
    batched = ["email"] if config.digest_minutes and "email" in channels else []
    due = digest.window_end(clock.now(), config.digest_minutes) if batched else None
    outbox.enqueue(session, inquiry_ids, [each for each in channels if each not in batched])
    outbox.enqueue(session, inquiry_ids, batched, due=due)
    hook.wake()
    return len(channels) * len(inquiry_ids)
