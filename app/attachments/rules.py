"""What an attachment may be: its type read from its bytes, its name made safe to show and to download.

Types come from the content (the ``filetype`` library's signatures, and
UTF-8 text with no control characters as ``text/plain``), never from the
name or the browser's claim. The name a visitor's file had is kept for
display: path parts, control characters and characters no file system
takes are removed, and its extension follows the type found (``named_for``):
an HTML page named ``invoice.pdf`` is text, and is kept as
``invoice.pdf.txt``, so no program opens it as a page or a document.
Downloads carry the name in a ``Content-Disposition`` header both as ASCII
and as RFC 5987 UTF-8.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from typing import IO
from urllib.parse import quote

import filetype
from flask_babel import format_decimal

TEXT = "text/plain"
DEFAULT_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf", TEXT)
# Every type ``detect`` can name: what SUNDOWN_ATTACHMENT_TYPES may list.
KNOWN_TYPES = frozenset({kind.mime for kind in filetype.types} | {TEXT})
# Shown in the admin's page as an image: formats browsers decode as images only, never SVG (scripts).
PREVIEWED = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
HEAD_SIZE = 8192  # filetype reads at most the first 8 KB
READ_SIZE = 64 * 1024
NAME_LENGTH = 200
_UNSAFE = re.compile(r'[\x00-\x1f\x7f"*/:<>?\\|]+')
_SPACES = re.compile(r"\s+")
_TEXT_CONTROLS = frozenset(range(32)) - {9, 10, 12, 13}
# The extensions a plain text file keeps: none that a system opens with a program (.html, .hta, .bat, .url, .svg).
TEXT_EXTENSIONS = ("txt", "text", "log", "md")
# Other spellings of a detected type's extension (``filetype`` names one: jpg, tif).
EXTENSION_ALIASES = {"image/jpeg": ("jpeg", "jpe", "jfif"), "image/tiff": ("tiff",), "image/heic": ("heif",)}


def parse_types(value: str | list[str]) -> tuple[str, ...]:
    """The allowed types from a setting (comma-separated or a list); ValueError for one ``detect`` cannot name."""
    items = value if isinstance(value, list) else str(value).split(",")
    types = tuple(dict.fromkeys(item.strip().lower() for item in items if item.strip()))
    if not types or not set(types) <= KNOWN_TYPES:
        raise ValueError(value)
    return types


def detect(stream: IO[bytes]) -> str | None:
    """The type of the file in ``stream`` by its content, or None when it is none known; reads it from the
    start and leaves it there."""
    stream.seek(0)
    kind = filetype.guess(stream.read(HEAD_SIZE))
    stream.seek(0)
    if kind is not None:
        return kind.mime
    found = TEXT if _is_text(stream) else None
    stream.seek(0)
    return found


def _is_text(stream: IO[bytes]) -> bool:
    """UTF-8 all through, with no control characters but tab, line breaks and form feed."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    while piece := stream.read(READ_SIZE):
        if not _TEXT_CONTROLS.isdisjoint(piece):
            return False
        try:
            decoder.decode(piece)
        except UnicodeDecodeError:
            return False
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def clean_name(name: str | None) -> str:
    """A file's name safe to show and to offer as a download's: no folders, control, format or reserved characters,
    at most ``NAME_LENGTH`` characters with its extension kept; "file" when nothing is left."""
    base = unicodedata.normalize("NFC", (name or "").replace("\\", "/").rsplit("/", 1)[-1])
    # Format characters (bidi overrides, zero-width ones) could show "invoice\u202efdp.exe" as "invoiceexe.pdf".
    base = "".join(char for char in base if unicodedata.category(char) != "Cf")
    base = _SPACES.sub(" ", _UNSAFE.sub("_", base)).strip(" .")
    if len(base) > NAME_LENGTH:
        stem, dot, extension = base.rpartition(".")
        keep = extension if dot and len(extension) <= 10 else ""
        base = base[: NAME_LENGTH - len(keep) - 1].rstrip(" .") + "." + keep if keep else base[:NAME_LENGTH]
    return base or "file"


def extensions(kind: str) -> tuple[str, ...]:
    """The extensions a file of type ``kind`` may have, lowercase, the usual one first."""
    if kind == TEXT:
        return TEXT_EXTENSIONS
    own = [each.extension for each in filetype.types if each.mime == kind]
    return tuple(dict.fromkeys([*own, *EXTENSION_ALIASES.get(kind, ())]))


def named_for(name: str, kind: str) -> str:
    """``name`` (cleaned by ``clean_name``) with an extension of type ``kind``: kept when it has one, else the
    type's usual one added (``x.hta`` becomes ``x.hta.txt``, ``photo.jpg`` holding a PNG ``photo.jpg.png``),
    at most ``NAME_LENGTH`` characters."""
    stem, dot, extension = name.rpartition(".")
    allowed = extensions(kind)
    if (dot and stem and extension.lower() in allowed) or not allowed:
        return name
    added = "." + allowed[0]
    return name[: NAME_LENGTH - len(added)].rstrip(" .") + added


def disposition(kind: str, name: str) -> str:
    """A ``Content-Disposition`` value: ``kind`` (attachment or inline) with ``name`` as ASCII and as UTF-8."""
    fallback = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().replace('"', "_") or "file"
    return f"{kind}; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


def file_size(size: int) -> str:
    """``size`` bytes as a person reads it: bytes, KB or MB, in the page's number format."""
    if size < 1024:
        return f"{format_decimal(size)} B"
    if size < 1024 * 1024:
        return f"{format_decimal(round(size / 1024, 1))} KB"
    return f"{format_decimal(round(size / (1024 * 1024), 1))} MB"
