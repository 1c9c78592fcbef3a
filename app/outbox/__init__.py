"""The transactional outbox: deliveries written with what they carry, sent after responses, finished once.

Each module does one thing:

* ``store``: the rows (``deliveries``): enqueued in the caller's transaction, the leased claim, release,
  and ``finish``: done, retried with backoff, or failed (the schedule is over, or the outcome permanent).
* ``handlers``: who sends each kind of delivery (``register``), and the ``Batch`` they send in.
* ``deliver``: the send loop: claim, hand each row to its kind's handler, record.
* ``hook`` and ``state``: a pass after the response when something may be due (``hook.wake()``).

Clients register their handlers at init: ``app.notify`` (a new inquiry's
notifications, the capped digest, an admin's test) and ``app.replies``
(replies and acknowledgements). This package imports neither.
"""

from __future__ import annotations

from flask import Flask

from app.outbox import hook, state


def init_app(app: Flask) -> None:
    """Give the app its outbox memory (no handlers yet) and its after-response hook."""
    state.install(app)
    hook.init_app(app)
