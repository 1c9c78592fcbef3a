"""Where a redirect may go: the one rule for ``next`` after login and after a language switch."""

from __future__ import annotations

from urllib.parse import urlsplit


def safe_next(value) -> str | None:
    """``value`` if it is a local path (``/...``, no scheme, host or backslash); else None."""
    if not isinstance(value, str) or not value.startswith("/") or value.startswith("//"):
        return None
    if "\\" in value or any(ord(ch) < 32 for ch in value):
        return None
    parts = urlsplit(value)
    return value if not parts.scheme and not parts.netloc else None
