"""A submission checked against a form's fields, and how its answers are stored.

``check`` returns the clean answers and a message per invalid field, in the
visitor's language; the HTML form and the JSON API share it. ``stored``
turns clean answers into an inquiry's columns:

* ``email``: the form's e-mail field (the one People and notifications use),
  or empty when the form has none;
* ``name``: the field keyed ``name``, if any;
* ``message``: the one other answer, or every other answer as
  ``Label: value`` paragraphs, so that search, export and notifications
  read every form's inquiries the same way;
* ``answers``: each field as it was asked (key, type, label in the default
  language, a consent's wording as shown, a choice's words), with its value,
  or ``in`` naming the column that holds it, so nothing is stored twice when
  one column does.

A file field's files are checked by ``app.attachments.uploads``; here its
answer is the list of the files' names, and it stays out of ``message``.

Fields the form does not know (a form moved from Formspree, Basin or
Netlify keeps its own names) are kept as other answers (``extras``), never
dropped: in ``answers`` by their name, and in ``message`` when the form's
fields do not hold it. ``_subject`` and ``_replyto`` are such services'
names for a subject line and the person's address: kept the same way, and
``_replyto`` is the inquiry's e-mail when the form's own is empty.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import date
from typing import Any
from urllib.parse import urlsplit

from flask_babel import gettext as _

from app.forms.fields import CHOICE_TYPES, Field, text_in
from app.inquiries.validation import clean_email, clean_text

TEL_CHARACTERS = frozenset("0123456789 +-().")
# Names that are the page's or a service's instructions, not answers (``app.web.public`` reads ``_next``).
NOT_ANSWERS = frozenset({"website", "_gotcha", "altcha", "rendered", "csrf_token", "form", "_next", "_language"})
MAX_EXTRAS, MAX_EXTRA_KEY, MAX_EXTRA_VALUE = 20, 60, 5000
REPLY_TO = "_replyto"
CHECKED = frozenset({"on", "yes", "true", "1"})

Answer = str | list[str] | bool


def check(fields: tuple[Field, ...], data: Any) -> tuple[dict[str, Answer], dict[str, str]]:
    """``(clean, errors)`` for a submission: ``data`` is the request's form (a MultiDict) or a JSON object."""
    clean: dict[str, Answer] = {}
    errors: dict[str, str] = {}
    for each in fields:
        value, error = _check_one(each, data)
        if error:
            errors[each.key] = error
        else:
            clean[each.key] = value
    return clean, errors


def extras(fields: tuple[Field, ...], data: Any) -> dict[str, str]:
    """The answers in ``data`` to no field of the form, by name: text, numbers and lists of them, at most
    ``MAX_EXTRAS``, each cut to ``MAX_EXTRA_VALUE`` characters; empty ones and the page's own left out."""
    if not isinstance(data, Mapping):
        return {}
    known = {each.key for each in fields} | NOT_ANSWERS
    found: dict[str, str] = {}
    for key in data:
        if not isinstance(key, str) or key in known or not key.strip() or len(found) >= MAX_EXTRAS:
            continue
        words = (
            ", ".join(_words(value) for value in _many(data, key) if _words(value))
            if hasattr(data, "getlist") or isinstance(data.get(key), list)
            else _words(data.get(key))
        )
        if words.strip():
            found[key[:MAX_EXTRA_KEY]] = words[:MAX_EXTRA_VALUE]
    return found


def _words(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (str, int, float)):
        return str(value).replace("\x00", "").strip()
    return ""


def raw_values(fields: tuple[Field, ...], data: Mapping) -> dict[str, Answer]:
    """What the visitor typed, by key, to show the form again with it."""
    values: dict[str, Answer] = {}
    for each in fields:
        if each.type == "checkboxes":
            values[each.key] = _many(data, each.key)
        else:
            raw = data.get(each.key, "")
            values[each.key] = raw if isinstance(raw, str) else ""
    return values


def _many(data: Any, key: str) -> list[str]:
    if hasattr(data, "getlist"):
        return data.getlist(key)
    raw = data.get(key)
    if isinstance(raw, str):
        return [raw]
    return raw if isinstance(raw, list) else []


def _check_one(each: Field, data: Any) -> tuple[Answer, str | None]:
    if each.type == "file":
        return [], None  # its files are checked by app.attachments.uploads
    if each.type == "checkboxes":
        return _check_checkboxes(each, _many(data, each.key))
    raw = data.get(each.key)
    if each.type == "consent":
        given = raw is True or (isinstance(raw, str) and raw.strip().lower() in CHECKED)
        return given, None if given else _("Tick this box to send the form.")
    if each.type == "hidden" and not raw:
        raw = each.default
    minimum = int(each.minimum) if each.minimum is not None and each.type != "number" else 0
    value, error = clean_text(raw, each.type == "textarea", each.max_length(), each.required, minimum)
    if error or not value:
        return value, error
    return value, _TYPED.get(each.type, _as_is)(each, value)


def _check_checkboxes(each: Field, chosen: list[Any]) -> tuple[list[str], str | None]:
    allowed = [choice.value for choice in each.choices]
    if not all(isinstance(item, str) for item in chosen) or not set(chosen) <= set(allowed):
        return [], _("Choose from the options given.")
    if each.required and not chosen:
        return [], _("Choose at least one option.")
    return [value for value in allowed if value in chosen], None


def _as_is(_each: Field, _value: str) -> str | None:
    return None


def _email(_each: Field, value: str) -> str | None:
    return clean_email(value)[1]


def _number(each: Field, value: str) -> str | None:
    try:
        number = float(value)
    except ValueError:
        return _("Enter a number, like 42 or 3.5.")
    if not math.isfinite(number):
        return _("Enter a number, like 42 or 3.5.")
    if each.minimum is not None and number < each.minimum:
        return _("Must be at least %(min)s.", min=_plain(each.minimum))
    if each.maximum is not None and number > each.maximum:
        return _("Must be at most %(max)s.", max=_plain(each.maximum))
    return None


def _tel(_each: Field, value: str) -> str | None:
    digits = sum(char.isdigit() for char in value)
    if not set(value) <= TEL_CHARACTERS or digits < 5:
        return _("Enter a phone number: digits, spaces and + - ( ) only.")
    return None


def _url(_each: Field, value: str) -> str | None:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or any(char.isspace() for char in value):
        return _("Enter a web address starting with https://.")
    return None


def _date(_each: Field, value: str) -> str | None:
    try:
        date.fromisoformat(value)
    except ValueError:
        return _("Enter a date as YYYY-MM-DD.")
    return None if len(value) == 10 else _("Enter a date as YYYY-MM-DD.")


def _choice(each: Field, value: str) -> str | None:
    return None if value in {choice.value for choice in each.choices} else _("Choose from the options given.")


_TYPED = {
    "email": _email,
    "number": _number,
    "tel": _tel,
    "url": _url,
    "date": _date,
    "select": _choice,
    "radio": _choice,
}


def _plain(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)


def normalised(each: Field, value: Answer) -> Answer:
    """A clean answer as stored: an e-mail address normalised, a number without trailing zeros."""
    if each.type == "email" and isinstance(value, str) and value:
        return clean_email(value)[0]
    if each.type == "number" and isinstance(value, str) and value:
        return _plain(float(value))
    return value


def stored(
    fields: tuple[Field, ...],
    email_key: str | None,
    clean: dict[str, Answer],
    locale: str,
    default_locale: str,
    extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The inquiry's ``name``, ``email``, ``message`` and ``answers`` for clean answers and the ``extra``
    ones (``extras``; see the module)."""
    values = {each.key: normalised(each, clean.get(each.key, "")) for each in fields}
    extra = extra or {}
    columns, held_in = _columns(fields, values, email_key, extra, default_locale)
    answers = []
    for each in fields:
        entry: dict[str, Any] = {
            "key": each.key,
            "type": each.type,
            "label": text_in(each.label, default_locale, default_locale),
        }
        if each.type == "consent":
            entry["wording"] = text_in(each.label, locale, default_locale)
        if each.key in held_in:
            entry["in"] = held_in[each.key]
        else:
            entry["value"] = values[each.key]
        if each.type in CHOICE_TYPES and values[each.key]:
            entry["shown"] = shown(each, values[each.key], default_locale)  # the choices' words as they were
        answers.append(entry)
    answers += [{"key": key, "type": "text", "label": key, "value": value} for key, value in extra.items()]
    return {**columns, "answers": answers}


def _columns(
    fields: tuple[Field, ...],
    values: dict[str, Answer],
    email_key: str | None,
    extra: dict[str, str],
    default_locale: str,
) -> tuple[dict[str, str], dict[str, str]]:
    """The name, e-mail and message columns, and which field each column holds."""
    columns = {"name": "", "email": "", "message": ""}
    held_in: dict[str, str] = {}
    if email_key in values:
        columns["email"], held_in[email_key] = str(values[email_key]), "email"
    if not columns["email"] and extra.get(REPLY_TO):
        address, problem = clean_email(extra[REPLY_TO])
        columns["email"] = "" if problem else address
    named = next((each for each in fields if each.key == "name" and each.type == "text"), None)
    if named is not None and named.key not in held_in:
        columns["name"], held_in[named.key] = str(values[named.key]), "name"
    others = [each for each in fields if each.key not in held_in and each.type != "file"]
    if len(others) == 1 and others[0].type in ("text", "textarea") and not extra:
        columns["message"], held_in[others[0].key] = str(values[others[0].key]), "message"
        return columns, held_in
    paragraphs = [
        f"{text_in(each.label, default_locale, default_locale)}: {shown(each, values[each.key], default_locale)}"
        for each in others
        if values[each.key] not in ("", [], False)
    ]
    if len(others) == 1 and others[0].type in ("text", "textarea"):  # the message first, as it was written
        paragraphs = [str(values[others[0].key])] if values[others[0].key] else []
    columns["message"] = "\n\n".join(paragraphs + [f"{key}: {value}" for key, value in extra.items()])
    return columns, held_in


def by_key(inquiry: Any) -> dict[str, Answer]:
    """Every answer by field key, as stored (an inquiry from before forms: its three columns)."""
    entries = inquiry.answers or [{"key": key, "in": key} for key in ("name", "email", "message")]
    return {entry["key"]: entry["value"] if "value" in entry else getattr(inquiry, entry["in"]) for entry in entries}


def summary(inquiry: Any) -> str:
    """What an inquiry says, for a preview or a subject line: its message when one field holds it, else the
    first long-text answer, else the ``Label: value`` paragraphs (a form of short answers only)."""
    entries = inquiry.answers or []
    if not entries or any(entry.get("in") == "message" for entry in entries):
        return inquiry.message
    written = (entry.get("value") for entry in entries if entry.get("type") == "textarea" and "value" in entry)
    return next((value for value in written if isinstance(value, str) and value.strip()), inquiry.message)


def rows_of(inquiry: Any) -> list[tuple[str, str]] | None:
    """An inquiry's answers as ``(label, words)`` pairs, as they were asked; None when its name, e-mail
    and message columns are all its answers (every inquiry before forms, and the Contact form's)."""
    entries = inquiry.answers or []
    if not any("value" in entry for entry in entries):
        return None
    rows = []
    for entry in entries:
        value = entry["value"] if "value" in entry else getattr(inquiry, entry["in"])
        if "shown" in entry:
            words = entry["shown"]
        elif isinstance(value, bool):
            words = _("yes") if value else _("no")
        elif isinstance(value, list):
            words = ", ".join(value)
        else:
            words = str(value)
        rows.append((entry.get("wording") or entry["label"] or entry["key"], words))
    return rows


def shown(each: Field, value: Answer, locale: str) -> str:
    """An answer as words: a choice by its label, a list joined, a consent as yes or no."""
    labels = {choice.value: text_in(choice.label, locale, locale) or choice.value for choice in each.choices}
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    if isinstance(value, list):
        return ", ".join(labels.get(item, item) for item in value)
    return labels.get(value, value) if each.type in CHOICE_TYPES else value
