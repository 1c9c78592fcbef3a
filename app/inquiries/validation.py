"""The checks of a submitted text and e-mail address, shared by every form, HTML and JSON (``app.forms.answers``)."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from email_validator import EmailNotValidError, validate_email
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l

# Plain words, not the email library's sentences (which name "@-signs" and
# "domain labels", in English only): the library's message is matched by its
# beginning, and anything not listed gets the general message.
INVALID_EMAIL = _l("Enter a valid email address, like name@example.com.")
EMAIL_MESSAGES = (
    ("An email address must have an @-sign.", _l("Enter a valid email address: it needs an @, like name@example.com.")),
    (
        "There must be something before the @-sign.",
        _l("Enter a valid email address: add the part before the @, like name@example.com."),
    ),
    (
        "There must be something after the @-sign.",
        _l("Enter a valid email address: add the part after the @, like name@example.com."),
    ),
    (
        "The part after the @-sign is not valid. It should have a period.",
        _l("Enter a valid email address: the part after the @ needs a dot, like name@example.com."),
    ),
    ('The email address has the "full-width" at-sign', _l("Use the ordinary @ sign, not the full-width ＠.")),
    ('The email address has the "small commercial at"', _l("Use the ordinary @ sign, not the small ﹫.")),
    ("An email address cannot have two periods in a row.", _l("An email address cannot have two dots in a row.")),
    ("An email address cannot start with a period.", _l("An email address cannot start with a dot.")),
    ("An email address cannot end with a period.", _l("An email address cannot end with a dot.")),
    ("The email address is too long", _l("This email address is too long.")),
    (
        "The part after the @-sign is a special-use or reserved name",
        _l("This domain cannot receive email: check the part after the @."),
    ),
)


def clean_text(
    raw: Any, multiline: bool, max_length: int, required: bool = True, min_length: int = 0
) -> tuple[str, str | None]:
    """``raw`` trimmed (line ends as ``\n``), and the message when it is not an acceptable text (else None)."""
    if raw is None:
        raw = ""
    if not isinstance(raw, str):
        return "", _("Must be text.")
    value = raw.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not value:
        return value, _("This field is required.") if required else None
    if len(value) < min_length:
        return value, _("Must be at least %(min)s characters (this is %(num)s).", min=min_length, num=len(value))
    if len(value) > max_length:
        return value, _("Must be at most %(max)s characters (this is %(num)s).", max=max_length, num=len(value))
    if _has_forbidden_characters(value, multiline):
        return value, _("Contains characters that are not allowed.")
    return value, None


# Unicode's control characters (category Cc: U+0000-U+001F, U+007F-U+009F) and lone surrogates (Cs): one
# regular expression rather than a category lookup per character, which cost a submission ~0.5 ms.
_FORBIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_FORBIDDEN_MULTILINE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")  # tab and line feed allowed


def _has_forbidden_characters(value: str, multiline: bool) -> bool:
    return (_FORBIDDEN_MULTILINE if multiline else _FORBIDDEN).search(value) is not None


def clean_email(value: str) -> tuple[str, str | None]:
    """``value`` normalised as intake stores it, and the message when it is not a valid address (else None).

    Valid means an address Sundown can answer, too (``answerable``): the
    replies and acknowledgements to it are built by the same rule.
    """
    try:
        address = _normalized(value)
    except EmailNotValidError as error:
        return value, email_message(str(error))
    return address, None if answerable(address) else str(INVALID_EMAIL)


def answerable(address: str) -> bool:
    """Whether a reply or an acknowledgement can be addressed to ``address`` (``app.replies.message``): one a
    header carries as it is, with an @, at most 254 characters, no control, space or line separator, and no
    ``=?``, which opens an encoded word that the ``email`` package decodes in a header.

    The e-mail library accepts ``eve=?utf-8?q?x?=1@example.org`` (``=`` and ``?`` may be in an address);
    a reply to it is never built, so intake refuses it rather than store an address it cannot answer.
    """
    return (
        0 < len(address) <= 254
        and "@" in address
        and "=?" not in address
        and not any(char.isspace() or unicodedata.category(char) in ("Cc", "Zl", "Zp") for char in address)
    )


def normalize_email(value: str) -> str | None:
    """``value`` as intake stores it (domain lowercased and IDNA-checked, Unicode NFC), or None if invalid.

    The one normaliser: intake stores this form, and the People page and
    erasures look a person up by it.
    """
    try:
        return _normalized(value)
    except EmailNotValidError:
        return None


def _normalized(value: str) -> str:
    return validate_email(value.strip(), check_deliverability=False).normalized


def email_message(library_message: str) -> str:
    """The words (in this request's language) for the email library's English ``library_message``."""
    for start, message in EMAIL_MESSAGES:
        if library_message.startswith(start):
            return str(message)
    return str(INVALID_EMAIL)
