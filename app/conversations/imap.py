"""The IMAP mailbox, fetched with no scheduler: after ordinary requests, through one atomic claim.

When ``SUNDOWN_IMAP_URL`` is set, each response asks whether a fetch may be
due (this process's memory: nothing due means no database work at all);
if so the fetch is handed to the background runner, off the visitor's
connection, and waits for a quiet moment. The claim is the cleanup's
(``app.cleanup.claim``) on its own settings row, ``last_imap_fetch_at``:
one conditional write lets one process in the whole deployment fetch, at
most every ``SUNDOWN_IMAP_INTERVAL`` seconds, and a fetch whose process
died is taken over when its lease (``LEASE_MS``) runs out.

A fetch takes at most ``BATCH`` messages, oldest first. Each goes through
the same pipeline as ``POST /internal/mail`` (``inbound.accept``), is
committed, and only then flagged ``\\Deleted``; the mailbox is expunged at
the end, so the mail server keeps no copy of what Sundown stored. A message
that stops between commit and expunge is fetched again and skipped as a
duplicate (its ``Message-ID``). One that Sundown refuses (too large,
unreadable) cannot be bounced from here: a note of it (its headers' sender
and subject) is held apart for owners, and it is deleted too.

TLS is always verified (``SUNDOWN_IMAP_CA_FILE`` for a private CA).
"""

from __future__ import annotations

import imaplib
import logging
import re
import ssl
import time
from collections import Counter
from collections.abc import Callable

from flask import Flask, current_app

from app.cleanup import claim
from app.conversations import inbound, parse, store
from app.core import background, clock, db, metrics
from app.core.background import Memory
from app.core.parsing import ImapServer, parse_imap_url

log = logging.getLogger(__name__)

JOB = "imap"
KEY = "last_imap_fetch_at"
LEASE_MS = 5 * 60 * 1000
BATCH = 50
START_WAIT = 1.0
TIMEOUT = 30
_SIZE = re.compile(rb"RFC822\.SIZE (\d+)")


class ImapMemory(Memory):
    """When this process may next find a fetch due."""

    EXTENSION = "sundown.imap"


def init_app(app: Flask) -> None:
    """With ``SUNDOWN_IMAP_URL`` set, look for a due fetch after every request."""
    if not app.config.get("IMAP_URL"):
        return
    ImapMemory.install(app)
    background.after_response(app, JOB, _due, _fetch_when_quiet)


def _due() -> str | None:
    return "after-request" if ImapMemory.current().is_due() else None


def _fetch_when_quiet(_reason: str, should_stop: Callable[[], bool]) -> None:
    background.activity_of(current_app).wait_for_quiet(time.monotonic() + START_WAIT, should_stop)
    fetch_if_due(should_stop)


def fetch_if_due(should_stop: Callable[[], bool] = lambda: False) -> Counter | None:
    """Take the claim and fetch; the outcomes counted, or None when the claim was not this caller's."""
    now_ms = clock.epoch_ms(clock.now())
    interval_ms = current_app.config["IMAP_INTERVAL"] * 1000
    with db.transaction(write=True) as session:
        won = claim.take(session, now_ms, interval_ms, LEASE_MS, key=KEY)
    ImapMemory.current().next_due_ms = now_ms + interval_ms
    if not won:
        return None
    try:
        return fetch(should_stop)
    except (OSError, imaplib.IMAP4.error):  # ssl.SSLError is an OSError
        metrics.count_imap_error()
        raise
    finally:
        with db.transaction(write=True) as session:
            claim.release(session, now_ms, now_ms, key=KEY)


def connect(server: ImapServer) -> imaplib.IMAP4:
    """A logged-in client on the mailbox, over TLS checked against the system's or the given CAs."""
    context = ssl.create_default_context(cafile=current_app.config.get("IMAP_CA_FILE"))
    if server.security == "tls":
        client: imaplib.IMAP4 = imaplib.IMAP4_SSL(server.host, server.port, ssl_context=context, timeout=TIMEOUT)
    else:
        client = imaplib.IMAP4(server.host, server.port, timeout=TIMEOUT)
        client.starttls(ssl_context=context)
    client.login(server.username, server.password)
    return client


def fetch(should_stop: Callable[[], bool] = lambda: False) -> Counter:
    """Import up to ``BATCH`` messages, deleting each once stored; the outcomes counted."""
    server = parse_imap_url(current_app.config["IMAP_URL"])
    outcomes: Counter = Counter()
    client = connect(server)
    try:
        client.select(f'"{server.mailbox}"')
        _status, data = client.uid("SEARCH", "ALL")
        for uid in (data[0] or b"").decode().split()[:BATCH]:
            if should_stop():
                break
            outcomes[_import_one(client, uid)] += 1
            client.uid("STORE", uid, "+FLAGS", "(\\Deleted)")
        client.expunge()
    finally:
        client.logout()
    if outcomes:
        log.info("IMAP fetch: %s", dict(outcomes))
    return outcomes


def _import_one(client: imaplib.IMAP4, uid: str) -> str:
    """Store message ``uid`` (or a note of it when refused); its outcome."""
    _status, sized = client.uid("FETCH", uid, "(RFC822.SIZE)")
    found = _SIZE.search(b" ".join(part if isinstance(part, bytes) else part[0] for part in sized if part))
    if found and int(found.group(1)) > current_app.config["INBOUND_MAX_BYTES"]:
        metrics.count_inbound_refused("too_large")
        return _note(_headers(client, uid), "too_large")
    _status, fetched = client.uid("FETCH", uid, "(BODY.PEEK[])")
    raw = next((part[1] for part in fetched if isinstance(part, tuple)), b"")
    try:
        return inbound.accept(raw).outcome
    except (inbound.TooLarge, parse.Unreadable):
        return _note(raw.split(b"\r\n\r\n", 1)[0][: 64 * 1024], "unreadable")


def _headers(client: imaplib.IMAP4, uid: str) -> bytes:
    _status, fetched = client.uid("FETCH", uid, "(BODY.PEEK[HEADER])")
    return next((part[1] for part in fetched if isinstance(part, tuple)), b"")[: 64 * 1024]


def _note(headers: bytes, reason: str) -> str:
    """Hold apart a note of a refused message: its headers' sender and subject, no body, no file."""
    try:
        parsed = parse.parse(headers + b"\r\n\r\n", 0, ())
    except parse.Unreadable:
        parsed = parse.Parsed(None, "", "", None, [], [])
    parsed.text, parsed.files, parsed.recipients, parsed.references = "", [], [], []
    with db.transaction(write=True) as session:
        store.hold(session, parsed, reason)
    return "refused"
