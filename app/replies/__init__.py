"""Answering people: an admin's reply from the inbox, and a form's acknowledgement, sent by e-mail.

Each module does one thing:

* ``message``: the e-mail as sent, built with the ``email`` package's policy; every value a visitor
  gave is stripped of line breaks and control characters before it reaches a header.
* ``compose``: the composer on the detail page: the draft (the message quoted) and its checks.
* ``sending``: a reply queued through the outbox (``deliveries``, kind ``reply`` or ``ack``), and its
  state as the inquiry's page shows it; ``delivery``: the outbox's handler of those rows, which mails
  each to the person and keeps the outcome on the reply.
* ``ack``: the acknowledgement of a new inquiry, its texts per language, and its caps.

The composer's route is ``app.admin.replies``, with every page under /admin.

A reply is part of its inquiry's data (``replies``, ``ON DELETE CASCADE``): the cleanup, an admin's
delete and an erasure take it along; a legal hold keeps it.
"""

from __future__ import annotations

from flask import Flask

from app.outbox import handlers
from app.replies import delivery


def init_app(app: Flask) -> None:
    """Give the outbox its handler of replies and acknowledgements (the outbox is set up first)."""
    handlers.register(app, delivery.KINDS, delivery.HANDLER)
