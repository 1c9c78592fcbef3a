"""A submission's files checked against its form's file fields and the limits, before anything is stored.

Each file is read from the temporary file Werkzeug spooled it to (large
ones on disk), so checking never holds a whole file in memory. A refusal
names the field and says what to do; its status says why: 413 the files
are over the size limit in all, 415 one is of a type the form does not
take, 422 too many or none where one is required.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import IO

import filetype
from flask_babel import gettext as _
from flask_babel import ngettext
from werkzeug.datastructures import FileStorage, MultiDict

from app.attachments import rules
from app.forms.fields import FILES_PER_FIELD, Field

# Which refusal a response takes when several fields were refused: the size first, then the type.
_STATUS_ORDER = (413, 415, 422)


@dataclass(frozen=True)
class Upload:
    """A file that passed: the field it came with, its display name, type by content, size, and its bytes."""

    field_key: str
    name: str
    content_type: str
    size: int
    stream: IO[bytes]


@dataclass
class Checked:
    """The files that passed, the message per refused field, and the status the refusal takes (else None)."""

    uploads: list[Upload] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    statuses: set[int] = field(default_factory=set)

    @property
    def status(self) -> int | None:
        """413, 415 or 422 when a file was refused, the most telling first; None when all passed."""
        return next((code for code in _STATUS_ORDER if code in self.statuses), None)

    def refuse(self, key: str, message: str, status: int) -> None:
        """Record ``key``'s first refusal."""
        self.errors.setdefault(key, message)
        self.statuses.add(status)


def files_allowed(each: Field) -> int:
    """How many files field ``each`` takes."""
    return int(each.maximum) if each.maximum is not None else FILES_PER_FIELD


def check(
    fields: tuple[Field, ...], files: MultiDict[str, FileStorage], max_bytes: int, types: tuple[str, ...]
) -> Checked:
    """The files of ``files`` (the request's, a MultiDict of FileStorage) for each file field of ``fields``."""
    checked = Checked()
    total = 0
    for each in fields:
        if each.type != "file":
            continue
        chosen = [item for item in files.getlist(each.key) if item.filename or _size(item.stream)]
        if each.required and not chosen:
            checked.refuse(each.key, _("Attach a file."), 422)
        if len(chosen) > files_allowed(each):
            checked.refuse(
                each.key,
                ngettext("Attach at most %(num)d file.", "Attach at most %(num)d files.", files_allowed(each)),
                422,
            )
            continue
        for item in chosen:
            size = _size(item.stream)
            total += size
            upload = _one(each, item, size, types, checked)
            if upload is not None:
                checked.uploads.append(upload)
            if total > max_bytes:
                checked.refuse(each.key, too_large(max_bytes), 413)
    return checked


def limits_text(most: int, max_bytes: int, types: tuple[str, ...]) -> str:
    """A file field's limits in words, as the page and ``embed.js`` show them under the field."""
    return ngettext(
        "Up to %(num)d file, %(size)s in all: %(types)s.",
        "Up to %(num)d files, %(size)s in all: %(types)s.",
        most,
        size=rules.file_size(max_bytes),
        types=type_names(types),
    )


def too_large(max_bytes: int) -> str:
    """The refusal of files over the limit, which says the typed text was kept."""
    return _(
        "The files are larger than %(size)s in all, so nothing was saved; your text is kept. "
        "Attach smaller files, or fewer.",
        size=rules.file_size(max_bytes),
    )


def _one(each: Field, item, size: int, types: tuple[str, ...], checked: Checked) -> Upload | None:
    name = rules.clean_name(item.filename)
    if size == 0:
        checked.refuse(each.key, _("%(name)s is empty: attach it again.", name=name), 422)
        return None
    kind = rules.detect(item.stream)
    if kind not in types:
        checked.refuse(
            each.key,
            _("%(name)s is not a file this form takes. Attach only %(types)s.", name=name, types=type_names(types)),
            415,
        )
        return None
    return Upload(each.key, rules.named_for(name, kind), kind, size, item.stream)


def type_names(types: tuple[str, ...]) -> str:
    """The allowed types as a person names them: PNG, JPG, PDF, TXT."""
    names = ["TXT" if kind == rules.TEXT else (filetype.get_type(mime=kind).extension.upper()) for kind in types]
    return ", ".join(dict.fromkeys(names))


def _size(stream: IO[bytes]) -> int:
    stream.seek(0, os.SEEK_END)
    size = stream.tell()
    stream.seek(0)
    return size
