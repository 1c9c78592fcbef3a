"""An admin's edit of a form, from the editor's plain HTML post, checked.

The editor works without JavaScript: every field is a row of inputs named
``field-<n>-<part>`` (``field_count`` rows, plus one blank row to add a
field), ordered by their ``position`` input and dropped with ``remove``;
a ``move`` button (``<row>-up`` or ``<row>-down``) swaps a row with its
neighbour. Texts are given per language (``<part>-<locale>``). ``read`` turns the post
into a ``Draft`` and a message per bad input, keyed by the input's name, so
the page shows each message next to its input and a summary at the top.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from flask_babel import gettext as _

from app.core import chaturls, parsing
from app.core.chaturls import Target
from app.forms import embed as embed_rules
from app.forms.fields import (
    CHOICE_TYPES,
    KEY,
    MAX_CHOICES,
    MAX_FIELDS,
    MAX_LENGTH,
    MOST_FILES_PER_FIELD,
    RESERVED_KEYS,
    SLUG,
    TEXT_TYPES,
    TYPES,
    Choice,
    Field,
    Texts,
)
from app.inquiries import retention

# The inputs each type needs besides its key, label and help: the editor shows a field only these.
PARTS = {
    "required": frozenset(TYPES) - {"consent"},  # a consent is always required
    "lengths": TEXT_TYPES - {"hidden"},
    "values": frozenset({"number"}),
    "files": frozenset({"file"}),
    "choices": CHOICE_TYPES,
    "default": frozenset({"hidden"}),
    "consent": frozenset({"consent"}),
}
PARTS["min"] = PARTS["lengths"] | PARTS["values"]
PARTS["max"] = PARTS["min"] | PARTS["files"]

TITLE_LENGTH, DESCRIPTION_LENGTH, LABEL_LENGTH, HELP_LENGTH = 120, 1000, 500, 300
ACK_TEXT_LENGTH = 2000


@dataclass
class Draft:
    """A form as the editor holds it: settings and fields, saved or not."""

    slug: str = ""
    title: Texts = field(default_factory=dict)
    description: Texts = field(default_factory=dict)
    enabled: bool = True
    retention_days: int | None = None
    spam_retention_days: int | None = None
    retention_clock: str = "received"  # ``retention.Clock``: from receipt, the thread's last message, or closing
    expiry_action: str = "delete"  # ``retention.Expiry``: what expiry does to its inquiries
    notify_emails: list[str] | None = None
    webhook_url: str | None = None
    notify_urls: list[str] | None = None  # chat URLs besides the site's (secrets in them: shown masked only)
    email_field: str | None = None
    allowed_origins: list[str] | None = None
    thanks_url: str | None = None
    ack_enabled: bool = False  # the acknowledgement (``app.replies.ack``), its texts by locale
    ack_include_message: bool = False
    ack_quote_new: bool = False  # quote the message to an address that has not written before
    ack_texts: Texts = field(default_factory=dict)
    fields: list[Field] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)  # each field's row in the post, so messages find their inputs
    raw: dict[str, str] = field(default_factory=dict)  # inputs as typed, to show them again

    def next_row(self) -> int:
        """The row number of the blank row that adds a field."""
        return max(self.rows, default=-1) + 1

    @classmethod
    def of(cls, form: Any, fields: tuple[Field, ...]) -> Draft:
        """The draft of a stored form."""
        return cls(
            slug=form.slug,
            title=dict(form.title),
            description=dict(form.description or {}),
            enabled=form.enabled,
            retention_days=form.retention_days,
            spam_retention_days=form.spam_retention_days,
            retention_clock=form.retention_clock,
            expiry_action=form.expiry_action,
            ack_quote_new=form.ack_quote_new,
            notify_emails=form.notify_emails,
            webhook_url=form.webhook_url,
            notify_urls=form.notify_urls,
            email_field=form.email_field,
            allowed_origins=form.allowed_origins,
            thanks_url=form.thanks_url,
            ack_enabled=form.ack_enabled,
            ack_include_message=form.ack_include_message,
            ack_texts=dict(form.ack_texts or {}),
            fields=list(fields),
            rows=list(range(len(fields))),
            raw={"notify_urls": chaturls.shown_lines(form.notify_urls or [])},  # never a secret whole
        )


def read(
    data: Any, locales: tuple[str, ...], default_locale: str, chat: tuple[Sequence[str], Sequence[Target]] = ((), ())
) -> tuple[Draft, dict[str, str]]:
    """The draft an editor's post describes, and a message per bad input (keyed by input name). ``chat``: the
    form's saved chat URLs (a line showing one masked keeps it) and those sent to besides (the site's)."""
    errors: dict[str, str] = {}
    draft = Draft(raw={key: value for key, value in data.items()})
    draft.slug = data.get("slug", "").strip().lower()
    if not SLUG.match(draft.slug):
        errors["slug"] = _(
            "Use 1 to 60 lowercase letters, digits and hyphens, starting and ending with a letter or digit."
        )
    draft.title = _texts(data, "title", locales, TITLE_LENGTH, errors)
    if not draft.title.get(default_locale):
        errors[f"title-{default_locale}"] = _("Give the form a title.")
    draft.description = _texts(data, "description", locales, DESCRIPTION_LENGTH, errors)
    draft.enabled = data.get("enabled") == "1"
    draft.retention_days = _days(data, "retention_days", errors)
    draft.spam_retention_days = _days(data, "spam_retention_days", errors)
    draft.retention_clock = data.get("retention_clock", retention.Clock.RECEIVED)
    if draft.retention_clock not in set(retention.Clock):
        errors["retention_clock"] = _("Choose when the retention starts.")
        draft.retention_clock = retention.Clock.RECEIVED
    draft.expiry_action = data.get("expiry_action", retention.Expiry.DELETE)
    if draft.expiry_action not in set(retention.Expiry):
        errors["expiry_action"] = _("Choose what happens to its inquiries at the end of their retention.")
        draft.expiry_action = retention.Expiry.DELETE
    draft.notify_emails = _emails(data, errors)
    draft.webhook_url = _webhook(data, errors)
    draft.notify_urls = _chat_urls(data, chat, errors, draft.raw)
    draft.allowed_origins = _origins(data, errors)
    draft.thanks_url = _thanks_url(data, draft.allowed_origins, errors)
    draft.ack_enabled = data.get("ack_enabled") == "1"
    draft.ack_include_message = data.get("ack_include_message") == "1"
    draft.ack_quote_new = data.get("ack_quote_new") == "1"
    draft.ack_texts = _texts(data, "ack_text", locales, ACK_TEXT_LENGTH, errors)
    draft.fields, draft.rows = _fields(data, locales, default_locale, errors)
    _forget_dropped_rows(draft.raw, draft.rows, errors)
    draft.email_field = _email_field(data, draft.fields, errors)
    return draft, errors


def _texts(data: Any, name: str, locales: tuple[str, ...], limit: int, errors: dict[str, str]) -> Texts:
    """The non-empty texts of ``name`` per locale; one longer than ``limit`` is an error, never cut short."""
    texts = {}
    for locale in locales:
        text = data.get(f"{name}-{locale}", "").strip()
        if len(text) > limit:
            errors[f"{name}-{locale}"] = _(
                "At most %(max)s characters (this has %(count)s).", max=limit, count=len(text)
            )
        if text:
            texts[locale] = text
    return texts


def _days(data: Any, name: str, errors: dict[str, str]) -> int | None:
    raw = data.get(name, "").strip()
    if not raw:
        return None
    days = retention.parse(raw)
    if days is None:
        errors[name] = _(
            "Enter a whole number of days from %(min)s to %(max)s, or leave it empty for the site's.",
            min=retention.MIN_DAYS,
            max=retention.MAX_DAYS,
        )
    return days


def _emails(data: Any, errors: dict[str, str]) -> list[str] | None:
    raw = data.get("notify_emails", "").strip()
    if not raw:
        return None
    try:
        return parsing.parse_emails(raw)
    except ValueError:
        errors["notify_emails"] = _(
            "Enter e-mail addresses separated by commas or lines (at most %(n)s), or leave it empty for the site's.",
            n=parsing.MAX_RECIPIENTS,
        )
        return None


def _chat_urls(
    data: Any, chat: tuple[Sequence[str], Sequence[Target]], errors: dict[str, str], raw: dict[str, str]
) -> list[str] | None:
    """The form's chat URLs (None: none of its own); refused, the saved ones. What the editor shows again is
    each URL masked, never what was typed."""
    stored, besides = chat
    try:
        urls = chaturls.edited(data.get("notify_urls", ""), stored, besides) or None
    except ValueError as error:
        errors["notify_urls"] = chaturls.message_of(error)
        urls = list(stored) or None
    raw["notify_urls"] = chaturls.shown_lines(urls or [])
    return urls


def _webhook(data: Any, errors: dict[str, str]) -> str | None:
    raw = data.get("webhook_url", "").strip()
    if not raw:
        return None
    try:
        return parsing.parse_webhook_url(raw)
    except ValueError:
        errors["webhook_url"] = _("Enter an http:// or https:// URL, or leave it empty for the site's.")
        return None


def _origins(data: Any, errors: dict[str, str]) -> list[str] | None:
    """The sites allowed to embed the form, one per line; None for none."""
    lines = [line.strip() for line in data.get("allowed_origins", "").replace(",", "\n").splitlines()]
    rules = []
    for line in filter(None, lines):
        try:
            rules.append(embed_rules.parse_rule(line))
        except ValueError:
            errors["allowed_origins"] = _(
                "%(line)s is not a site's address: write https://www.example.org, or "
                "https://*.example.org for its subdomains (no path).",
                line=line[:100],
            )
            return None
    if len(rules) > embed_rules.MAX_ORIGINS:
        errors["allowed_origins"] = _("At most %(max)s sites.", max=embed_rules.MAX_ORIGINS)
    return list(dict.fromkeys(rules)) or None


def _thanks_url(data: Any, rules: list[str] | None, errors: dict[str, str]) -> str | None:
    raw = data.get("thanks_url", "").strip()
    if not raw:
        return None
    parts = urlsplit(raw)
    origin = f"{parts.scheme}://{parts.netloc}"
    if (
        parts.scheme not in ("http", "https")
        or not parts.netloc
        or len(raw) > 500
        or not embed_rules.redirectable(raw)
        or not any(embed_rules.matches(rule, origin) for rule in rules or ())
    ):
        errors["thanks_url"] = _(
            "Give an address on one of the allowed sites, or leave it empty for Sundown's thank-you page."
        )
        return None
    return raw


def _rows(data: Any) -> list[int]:
    """The row numbers posted, in the order their ``position`` asks (ties: as posted)."""
    count = data.get("field_count", "0")
    # str.isdigit takes "²" and "١" too, which int() refuses or reads, and int() refuses 4,300 digits or more:
    # a count is a few ASCII digits.
    total = min(int(count), MAX_FIELDS + 1) if count.isascii() and count.isdigit() and len(count) <= 4 else 0
    rows = [row for row in range(total + 1) if f"field-{row}-type" in data]

    def position(row: int) -> tuple[float, int]:
        raw = data.get(f"field-{row}-position", "").strip()
        try:
            value = float(raw) if raw.isascii() else float("nan")
        except ValueError:
            value = float("nan")
        return (value if value == value else float(row + 1)), row  # NaN or not a number: the row's own place

    return _moved(sorted(rows, key=position), data.get("move", ""))


def _moved(rows: list[int], move: str) -> list[int]:
    """``rows`` with the one a Move button names (``<row>-up`` or ``<row>-down``) swapped with its neighbour."""
    row, _dash, way = move.partition("-")
    if not (row.isascii() and row.isdigit() and len(row) <= 4 and int(row) in rows and way in ("up", "down")):
        return rows
    index = rows.index(int(row))
    other = index - 1 if way == "up" else index + 1
    if 0 <= other < len(rows):
        rows[index], rows[other] = rows[other], rows[index]
    return rows


def _fields(
    data: Any, locales: tuple[str, ...], default_locale: str, errors: dict[str, str]
) -> tuple[list[Field], list[int]]:
    fields: list[Field] = []
    rows: list[int] = []
    for row in _rows(data):
        prefix = f"field-{row}-"
        if data.get(prefix + "remove") == "1":
            continue
        key = data.get(prefix + "key", "").strip()
        label = _texts(data, prefix + "label", locales, LABEL_LENGTH, errors)
        if not key and not label and data.get(prefix + "new") == "1":
            continue  # the blank row for a new field, left blank
        parsed = _field(data, prefix, key, label, locales, default_locale, errors)
        if parsed is not None:
            if any(each.key == parsed.key for each in fields):
                errors[prefix + "key"] = _("Another field already has this key.")
            fields.append(parsed)
            rows.append(row)
    if len(fields) > MAX_FIELDS:
        errors["fields"] = _("A form has at most %(max)s fields.", max=MAX_FIELDS)
    return fields, rows


def _forget_dropped_rows(raw: dict[str, str], rows: list[int], errors: dict[str, str]) -> None:
    """Forget what was typed in rows removed or left blank: the blank row that adds a field takes the next
    number, which may be one of theirs, and must come back empty."""
    shown = {*rows, *(_row_of(name) for name in errors)}
    for name in [name for name in raw if name.startswith("field-") and _row_of(name) not in shown]:
        del raw[name]


def _row_of(name: str) -> int | None:
    """The row of an input named ``field-<row>-<part>``; None for any other name."""
    prefix, _dash, rest = name.partition("-")
    row = rest.partition("-")[0]
    return int(row) if prefix == "field" and row.isascii() and row.isdigit() and len(row) <= 4 else None


def _field(
    data: Any,
    prefix: str,
    key: str,
    label: Texts,
    locales: tuple[str, ...],
    default_locale: str,
    errors: dict[str, str],
) -> Field | None:
    kind = data.get(prefix + "type", "")
    if kind not in TYPES:
        errors[prefix + "type"] = _("Choose a field type.")
        return None
    if not KEY.match(key) or key in RESERVED_KEYS:
        errors[prefix + "key"] = _(
            "Use a lowercase letter, then up to 39 lowercase letters, digits or _ "
            "(not website, altcha, rendered, csrf_token or form)."
        )
    if not label.get(default_locale) and kind != "hidden":
        errors[prefix + "label-" + default_locale] = (
            _("Write the exact wording the person agrees to.") if kind == "consent" else _("Give the field a label.")
        )
    minimum, maximum = _bound(data, prefix + "min", errors), _bound(data, prefix + "max", errors)
    if minimum is not None and maximum is not None and minimum > maximum:
        errors[prefix + "max"] = _("The maximum must not be below the minimum.")
    if kind in TEXT_TYPES and maximum is not None and maximum > MAX_LENGTH[kind]:
        errors[prefix + "max"] = _("At most %(max)s characters for this type.", max=MAX_LENGTH[kind])
    if (
        kind == "file"
        and maximum is not None
        and not (1 <= maximum <= MOST_FILES_PER_FIELD and float(maximum).is_integer())
    ):
        errors[prefix + "max"] = _("A file field takes from 1 to %(max)s files.", max=MOST_FILES_PER_FIELD)
    choices = _choices(data, prefix, locales, default_locale, errors) if kind in CHOICE_TYPES else ()
    if kind in CHOICE_TYPES and not choices and prefix + "choices-" + default_locale not in errors:
        errors[prefix + "choices-" + default_locale] = _("Give at least one choice, one per line.")
    return Field(
        key=key,
        type=kind,
        label=label,
        help=_texts(data, prefix + "help", locales, HELP_LENGTH, errors),
        required=kind == "consent" or data.get(prefix + "required") == "1",
        minimum=minimum,
        maximum=maximum,
        choices=choices,
        default=data.get(prefix + "default", "").strip()[:200],
    )


def _bound(data: Any, name: str, errors: dict[str, str]) -> float | None:
    raw = data.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw) if raw.isascii() else float("nan")  # float() reads "٣" as 3: digits are ASCII here
    except ValueError:
        errors[name] = _("Enter a number, or leave it empty.")
        return None
    if value != value or abs(value) > 1e15:  # NaN, or beyond what a person types
        errors[name] = _("Enter a number, or leave it empty.")
        return None
    return int(value) if value.is_integer() else value


def _choices(
    data: Any, prefix: str, locales: tuple[str, ...], default_locale: str, errors: dict[str, str]
) -> tuple[Choice, ...]:
    """One choice per line of the default language's box: ``label`` or ``value | label``; the other
    languages' boxes give the labels line by line, in the same order."""
    lines = [line.strip() for line in data.get(prefix + "choices-" + default_locale, "").splitlines()]
    lines = [line for line in lines if line]
    translated = {
        locale: [line.strip() for line in data.get(prefix + "choices-" + locale, "").splitlines() if line.strip()]
        for locale in locales
        if locale != default_locale
    }
    choices: list[Choice] = []
    for index, line in enumerate(lines):
        value, _bar, label = line.partition("|")
        value, label = value.strip(), (label.strip() if _bar else value.strip())
        labels = {default_locale: label[:LABEL_LENGTH]}
        labels.update(
            {locale: texts[index][:LABEL_LENGTH] for locale, texts in translated.items() if index < len(texts)}
        )
        choices.append(Choice(value[:200], labels))
    values = [choice.value for choice in choices]
    if len(values) != len(set(values)):
        errors[prefix + "choices-" + default_locale] = _("Each choice needs a value of its own.")
    if len(choices) > MAX_CHOICES:
        errors[prefix + "choices-" + default_locale] = _("At most %(max)s choices.", max=MAX_CHOICES)
    return tuple(choices)


def _email_field(data: Any, fields: list[Field], errors: dict[str, str]) -> str | None:
    """The one e-mail field People and notifications use: the chosen one, or the only one."""
    emails = [each.key for each in fields if each.type == "email"]
    if not emails:
        return None
    chosen = data.get("email_field", "").strip()
    if chosen in emails:
        return chosen
    if len(emails) == 1:
        return emails[0]
    errors["email_field"] = _("Choose which e-mail field is the person's address.")
    return None
