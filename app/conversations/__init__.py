"""Conversations: people's answers by e-mail come back into their inquiry's thread (docs/conversations.md).

Each module does one thing:

* ``references``: the signed reply address and thread id a person's answer is matched by.
* ``parse``: a raw e-mail read defensively (bounded, headers decoded once, automatic mail recognised).
* ``text``: plain text, HTML reduced to text by the ``nh3`` sanitiser, quoted history folded.
* ``store``: matching, storing in the thread or holding apart, the effects on the inquiry.
* ``inbound``: the one pipeline, for ``POST /internal/mail`` and the IMAP fetch.
* ``imap``: the IMAP mailbox fetched after ordinary requests, through one atomic claim.

A message is part of its inquiry's data (``inbound_messages``, ``ON DELETE
CASCADE``, its files with it); held-apart ones are deleted by the cleanup
after ``app.cleanup.targets.HELD_KEEP``.
"""

from __future__ import annotations

from flask import Flask

from app.conversations import imap


def init_app(app: Flask) -> None:
    """The IMAP fetch after responses, when a mailbox is set."""
    imap.init_app(app)
