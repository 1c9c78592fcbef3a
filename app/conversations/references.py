"""How an answer finds its inquiry: a signed tag in the reply address, or the signed thread id.

Every reply and acknowledgement carries both, and either matches:

* ``Reply-To: replies+i42-5f0c…@example.org`` (``SUNDOWN_INBOUND_ADDRESS`` with
  a sub-address, RFC 5233): whatever the person's client does with headers,
  their answer is addressed to the inquiry. Mail servers deliver ``+tag`` to
  the base mailbox, so one mailbox (or one pipe) receives every thread.
* ``In-Reply-To``/``References``: the thread id ``<inquiry-42.5f0c…@domain>``
  and the reply's own ``Message-ID``: kept by clients that drop or rewrite a
  sub-address, and by forwarders that rewrite the envelope.

Both carry the same keyed hash (``SUNDOWN_SECRET_KEY``, 64 bits), so nobody
can write into another inquiry's thread by guessing a number, and nothing
is stored per inquiry: an address is checked by recomputing its hash, and
when the inquiry is deleted the address simply matches nothing any more.
The tag is lowercase, since some mail servers fold the local part.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Iterable

from flask import current_app

from app.replies.message import thread_id

_TAG = re.compile(r"\+i(\d{1,12})-([0-9a-f]{16})@", re.IGNORECASE)
_THREAD = re.compile(r"<inquiry-(\d{1,12})\.[0-9a-f]{16}@[^>\s]{1,200}>")


def _digest(inquiry_id: int) -> str:
    """The thread id's keyed hash for ``inquiry_id`` (16 hex digits)."""
    return thread_id(inquiry_id).split(".", 1)[1].split("@", 1)[0]


def configured() -> bool:
    """Whether answers come back to Sundown (``SUNDOWN_INBOUND_ADDRESS`` is set)."""
    return bool(current_app.config.get("INBOUND_ADDRESS"))


def reply_address(inquiry_id: int) -> str | None:
    """The address a person's answer about ``inquiry_id`` goes to; None when answers do not come back."""
    base = current_app.config.get("INBOUND_ADDRESS")
    if not base:
        return None
    local, _at, domain = base.rpartition("@")
    return f"{local}+i{inquiry_id}-{_digest(inquiry_id)}@{domain}"


def from_addresses(addresses: Iterable[str]) -> int | None:
    """The inquiry whose signed tag one of ``addresses`` carries, if the tag's hash is right."""
    for address in addresses:
        for found in _TAG.finditer(address or ""):
            inquiry_id = int(found.group(1))
            if hmac.compare_digest(found.group(2).lower(), _digest(inquiry_id)):
                return inquiry_id
    return None


def from_references(references: Iterable[str]) -> int | None:
    """The inquiry whose thread id one of ``references`` is, exactly as Sundown wrote it."""
    for reference in references:
        found = _THREAD.fullmatch(reference.strip())
        if found and hmac.compare_digest(reference.strip(), thread_id(int(found.group(1)))):
            return int(found.group(1))
    return None
