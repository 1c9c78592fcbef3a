"""One mailbox, however its address is written: the identity key of an e-mail address.

``Grace.Hopper+news@GoogleMail.com`` and ``gracehopper@gmail.com`` reach the
same person, so any limit per address, and the check that an answer comes
from the person who wrote, compares this key: the address case folded, its
sub-address (``+tag``, RFC 5233) dropped, and for providers that ignore dots
in the local part (``DOTLESS``) the dots dropped and the domain's alias
mapped to one name. Never shown and never stored in clear: a key only.
"""

from __future__ import annotations

DOTLESS = {"gmail.com": "gmail.com", "googlemail.com": "gmail.com"}


def mailbox_key(address: str | None) -> str | None:
    """The identity key of ``address``; None when it is not ``local@domain``."""
    if not address or address.count("@") != 1:
        return None
    local, domain = address.strip().casefold().split("@")
    local = local.split("+", 1)[0]
    if domain in DOTLESS:
        local, domain = local.replace(".", ""), DOTLESS[domain]
    return f"{local}@{domain}" if local and domain else None
