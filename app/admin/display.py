"""How the admin pages show messages (filters, registered by app.templating); times and numbers: app.core.i18n."""

from __future__ import annotations

from urllib.parse import quote
from zoneinfo import ZoneInfo

from flask import current_app
from flask_babel import format_decimal, ngettext
from flask_babel import gettext as _

from app.auth.browser import browser_name
from app.forms import answers

FIRST_LINE_MAX = 120


def local_zone() -> ZoneInfo:
    """The configured display time zone (``TIME_ZONE``, an IANA name such as Europe/Paris)."""
    return ZoneInfo(current_app.config["TIME_ZONE"])


def first_line(message: str) -> str:
    """The message's first non-empty line, shortened for the inbox table."""
    line = next((part.strip() for part in message.splitlines() if part.strip()), "")
    if len(line) > FIRST_LINE_MAX:
        return line[: FIRST_LINE_MAX - 1] + "…"
    return line


def who(inquiry) -> str:
    """Who sent an inquiry, for its link and its page: the name, else the address, else "Inquiry #N"."""
    return inquiry.name.strip() or inquiry.email or _("Inquiry #%(id)d", id=inquiry.id)


def inquiry_title(inquiry) -> str:
    """The detail page's heading: "Inquiry from <name or address>", or "Inquiry #N" for one with neither."""
    if inquiry.name.strip() or inquiry.email:
        return _("Inquiry from %(name)s", name=who(inquiry))
    return who(inquiry)


def preview(inquiry) -> str:
    """The inbox's message column: the first line of what the inquiry says (``answers.summary``)."""
    return first_line(answers.summary(inquiry))


def mailto(address: str) -> str:
    """A ``mailto:`` URL for ``address``, encoded (RFC 6068): a ``?`` or ``&`` in it adds no header."""
    return f"mailto:{quote(address, safe='@')}"


def browser(user_agent: str | None) -> str:
    """A user agent as a short browser name, e.g. ``Firefox 133 on Linux`` (``app.auth.browser``)."""
    return browser_name(user_agent)


def inquiry_count(count) -> str:
    """A count of inquiries from ``inquiries.count_capped``.

    ``1 inquiry``, ``42 inquiries``, ``more than 1,000 inquiries``.
    """
    if count.more:
        return ngettext(
            "more than %(shown)s inquiry",
            "more than %(shown)s inquiries",
            count.value,
            shown=format_decimal(count.value),
        )
    return ngettext("%(shown)s inquiry", "%(shown)s inquiries", count.value, shown=format_decimal(count.value))


def match_count(count, query: str) -> str:
    """How many inquiries match a search, in the language's plural: ``1 inquiry matches “tax”.``,
    ``42 inquiries match “tax”.``, ``More than 1,000 inquiries match “tax”.``"""
    shown = format_decimal(count.value)
    if count.more:
        return ngettext(
            "More than %(shown)s inquiry matches “%(query)s”.",
            "More than %(shown)s inquiries match “%(query)s”.",
            count.value,
            shown=shown,
            query=query,
        )
    return ngettext(
        "%(shown)s inquiry matches “%(query)s”.",
        "%(shown)s inquiries match “%(query)s”.",
        count.value,
        shown=shown,
        query=query,
    )
