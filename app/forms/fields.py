"""What a form asks: its fields, their types and limits, their labels in each language.

A form's fields are stored as a JSON list (``Form.fields``); ``load`` reads
it into ``Field`` values and ``dump`` writes them back. Texts an admin
writes (labels, help, choices, a consent's wording) are dicts by locale;
``text_in`` picks the visitor's, falling back to the default language, then
to whatever is there. Nothing here touches the database or the request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

TYPES = (
    "text",
    "email",
    "textarea",
    "number",
    "tel",
    "url",
    "date",
    "select",
    "radio",
    "checkboxes",
    "consent",
    "hidden",
    "file",
)
CHOICE_TYPES = frozenset({"select", "radio", "checkboxes"})
TEXT_TYPES = frozenset({"text", "email", "textarea", "tel", "url", "hidden"})
# The longest answer each type takes when the form sets no maximum; no form may set more.
MAX_LENGTH = {"text": 200, "email": 254, "textarea": 5000, "tel": 40, "url": 2000, "hidden": 200}
KEY = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,58}[a-z0-9])?$")
# Names the form page itself uses: a field may not take them.
RESERVED_KEYS = frozenset({"website", "altcha", "rendered", "csrf_token", "form"})
MAX_FIELDS = 40
FILES_PER_FIELD, MOST_FILES_PER_FIELD = 3, 10  # a file field's number of files: unless set, and at most
MAX_CHOICES = 50

Texts = dict[str, str]  # locale -> text


@dataclass(frozen=True)
class Choice:
    """One option of a choice field: the stored ``value`` and its label per locale."""

    value: str
    label: Texts


@dataclass(frozen=True)
class Field:
    """One question: a ``key`` (the answer's name), a type, its words and its limits.

    ``minimum``/``maximum`` are lengths for text types and values for
    numbers; a file field's ``maximum`` is how many files it takes
    (``app.attachments.uploads``). A consent field's label is its exact wording, stored with the
    answer. A hidden field carries ``default`` unless the page sets it (a
    campaign tag, say).
    """

    key: str
    type: str
    label: Texts
    help: Texts = field(default_factory=dict)
    required: bool = False
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[Choice, ...] = ()
    default: str = ""

    def max_length(self) -> int:
        """The longest text answer taken (text types)."""
        limit = MAX_LENGTH.get(self.type, 200)
        return int(min(self.maximum, limit)) if self.maximum is not None else limit


def text_in(texts: Texts, locale: str, default_locale: str) -> str:
    """``texts`` in ``locale``, else in ``default_locale``, else any; empty when there is none."""
    return texts.get(locale) or texts.get(default_locale) or next((text for text in texts.values() if text), "")


def load(raw: list[dict[str, Any]] | None) -> tuple[Field, ...]:
    """The fields stored as JSON (``dump``'s output)."""
    return tuple(
        Field(
            key=item["key"],
            type=item["type"],
            label=dict(item.get("label") or {}),
            help=dict(item.get("help") or {}),
            required=bool(item.get("required")),
            minimum=item.get("min"),
            maximum=item.get("max"),
            choices=tuple(Choice(c["value"], dict(c.get("label") or {})) for c in item.get("choices") or ()),
            default=item.get("default") or "",
        )
        for item in raw or ()
    )


def dump(fields: tuple[Field, ...] | list[Field]) -> list[dict[str, Any]]:
    """The fields as JSON, for ``Form.fields``; empty parts left out."""
    stored = []
    for each in fields:
        item: dict[str, Any] = {"key": each.key, "type": each.type, "label": each.label}
        if each.help:
            item["help"] = each.help
        if each.required:
            item["required"] = True
        if each.minimum is not None:
            item["min"] = each.minimum
        if each.maximum is not None:
            item["max"] = each.maximum
        if each.choices:
            item["choices"] = [{"value": c.value, "label": c.label} for c in each.choices]
        if each.default:
            item["default"] = each.default
        stored.append(item)
    return stored


def email_fields(fields: tuple[Field, ...]) -> list[Field]:
    """The form's e-mail fields."""
    return [each for each in fields if each.type == "email"]


CONTACT_FIELDS = (
    Field("name", "text", {"en": "Your name"}, required=True, maximum=100),
    Field("email", "email", {"en": "Email address"}, required=True),
    Field("message", "textarea", {"en": "Message"}, required=True, maximum=5000),
)
