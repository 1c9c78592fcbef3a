"""A short, readable browser name from a User-Agent string, e.g. "Chrome 156 on Linux".

Shown on the account page so an admin can recognise each login; it is a
label, never a security decision, so a small table of patterns is enough.
"""

from __future__ import annotations

import re

# Order matters: Edge and Opera also say "Chrome", Chrome also says "Safari".
_BROWSERS = [
    ("Edge", re.compile(r"Edg(?:e|A|iOS)?/(\d{1,4})")),
    ("Opera", re.compile(r"(?:OPR|Opera)/(\d{1,4})")),
    ("Firefox", re.compile(r"(?:Firefox|FxiOS)/(\d{1,4})")),
    ("Chrome", re.compile(r"(?:Chrome|CriOS)/(\d{1,4})")),
    ("Safari", re.compile(r"Version/(\d{1,4})(?:\.\d+)*(?: Mobile/\S+)? Safari/")),
]

_SYSTEMS = [
    ("iOS", re.compile(r"iPhone|iPad|iPod")),
    ("Android", re.compile(r"Android")),
    ("ChromeOS", re.compile(r"CrOS")),
    ("Windows", re.compile(r"Windows")),
    ("macOS", re.compile(r"Macintosh|Mac OS X")),
    ("Linux", re.compile(r"Linux|X11")),
]

UNKNOWN = "Unknown browser"


def browser_name(user_agent: str | None) -> str:
    """ "Chrome 156 on Linux", "Safari 18 on iOS", or "Unknown browser"."""
    agent = user_agent or ""
    browser = _first_browser(agent)
    system = next((name for name, pattern in _SYSTEMS if pattern.search(agent)), None)
    if browser and system:
        return f"{browser} on {system}"
    if browser or system:
        return browser or f"{UNKNOWN} on {system}"
    return UNKNOWN


def _first_browser(agent: str) -> str | None:
    for name, pattern in _BROWSERS:
        match = pattern.search(agent)
        if match:
            return f"{name} {match.group(1)}"
    return None
