"""The one pipeline both ways in use: raw bytes in, a stored (or held, or refused) message out.

``POST /internal/mail`` (``app.web.internal``) and the IMAP fetch
(``app.conversations.imap``) both call ``accept``. The size limit
(``SUNDOWN_INBOUND_MAX_BYTES``) is checked before parsing; the parse
(``app.conversations.parse``) refuses what it will not read; the message is
then matched and stored in one short write transaction. Each outcome and
refusal is counted on ``/metrics`` (``app.core.metrics``).
"""

from __future__ import annotations

import logging

from flask import current_app

from app.conversations import parse, store
from app.core import db, metrics

log = logging.getLogger(__name__)


class TooLarge(ValueError):
    """A message over ``SUNDOWN_INBOUND_MAX_BYTES``."""


def accept(raw: bytes) -> store.Stored:
    """Parse, match and store one raw e-mail; ``TooLarge`` or ``parse.Unreadable`` when refused."""
    config = current_app.config
    if len(raw) > config["INBOUND_MAX_BYTES"]:
        metrics.count_inbound_refused("too_large")
        raise TooLarge(len(raw))
    try:
        parsed = parse.parse(raw, config["ATTACHMENT_MAX_BYTES"], tuple(config["ATTACHMENT_TYPES"]))
    except parse.Unreadable:
        metrics.count_inbound_refused("unreadable")
        raise
    with db.transaction(write=True) as session:
        stored = store.receive(session, parsed)
    metrics.count_inbound(stored.outcome)
    # Never an address or content in the log: the outcome, the kind, the ids.
    log.info(
        "inbound message %s: %s (%s), inquiry %s", stored.message_id, stored.outcome, stored.kind, stored.inquiry_id
    )
    return stored
