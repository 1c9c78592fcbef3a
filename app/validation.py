"""Validation of an inquiry, shared by the HTML form and the JSON API."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

from email_validator import EmailNotValidError, validate_email

FIELDS = {"name": 100, "email": 254, "message": 5000}
MULTILINE = {"message"}
# Plain words, not the email library's sentence (which names "@-signs" and "domain labels").
INVALID_EMAIL = "Enter a valid email address, like name@example.com."


def validate_inquiry(data: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """Return ``(clean, errors)``: trimmed values, and a message per invalid field."""
    clean: dict[str, str] = {}
    errors: dict[str, str] = {}
    for field, max_length in FIELDS.items():
        value, error = _clean_text(data.get(field), field in MULTILINE, max_length)
        if error is None and field == "email":
            value, error = _clean_email(value)
        if error:
            errors[field] = error
        else:
            clean[field] = value
    return clean, errors


def _clean_text(raw: Any, multiline: bool, max_length: int) -> tuple[str, str | None]:
    if raw is None:
        raw = ""
    if not isinstance(raw, str):
        return "", "Must be text."
    value = raw.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not value:
        return value, "This field is required."
    if len(value) > max_length:
        return value, f"Must be at most {max_length} characters (this is {len(value)})."
    if _has_forbidden_characters(value, multiline):
        return value, "Contains characters that are not allowed."
    return value, None


def _has_forbidden_characters(value: str, multiline: bool) -> bool:
    allowed = {"\n", "\t"} if multiline else set()
    for char in value:
        category = unicodedata.category(char)
        if category == "Cs" or (category == "Cc" and char not in allowed):
            return True
    return False


def _clean_email(value: str) -> tuple[str, str | None]:
    normalized = normalize_email(value)
    return (value, INVALID_EMAIL) if normalized is None else (normalized, None)


def normalize_email(value: str) -> str | None:
    """``value`` as intake stores it (domain lowercased and IDNA-checked, Unicode NFC), or None if invalid.

    The one normaliser: intake stores this form, and the People page and
    erasures look a person up by it.
    """
    try:
        return validate_email(value.strip(), check_deliverability=False).normalized
    except EmailNotValidError:
        return None
