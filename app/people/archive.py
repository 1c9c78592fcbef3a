"""A person's export with the files they sent: one zip, streamed, no file ever whole in memory.

The zip holds ``person.json`` (the JSON export, ``records``), then each file
it lists, at the ``path`` it gives (``records.file_path``), its bytes read
a piece per query (``store.chunks``). ``zipfile`` writes into a ``Drain``
that is emptied after every write, so memory holds one piece (256 KB) and
a small record per file for the central directory, whatever the files weigh.

How the entries are written, and why:

* ``person.json`` is deflated: it is text, and shrinks several times. The
  files are stored: most of what a form takes is compressed already (images,
  PDF), so deflating them would cost the worker CPU on every byte of a long
  download and save next to nothing.
* The stream cannot seek back, so each entry's sizes and CRC follow its
  bytes (a data descriptor) and every entry is ZIP64 (``force_zip64``): an
  entry's size is not in its header, and a large export has the same shape
  as a small one. Unzip tools read the central directory, which has them all.

The files are those ``person.json`` lists, read with the same pages. If the
person changes meanwhile (an erasure), ``records.PersonChanged`` stops the
stream, as in the JSON export: a page that misses an inquiry, or a file
whose bytes end short of its size. The server then drops the connection, and
the client gets a failed download, never a complete-looking half.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime

from flask import Flask
from sqlalchemy import Engine

from app.attachments import store
from app.core import clock, db
from app.models import Attachment
from app.people import records

PERSON_JSON = "person.json"
FILE_MODE = 0o600 << 16  # what unzip gives each file it extracts: personal data, readable by its owner only


class Drain:
    """A write-only file for ``zipfile``: no ``tell`` or ``seek``, so the zip streams; ``take`` empties it."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def write(self, data) -> int:
        """Keep ``data`` until the next ``take`` (the compressor writes empty pieces: those are dropped)."""
        if len(data):
            self._parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        """Nothing to flush: ``take`` hands the bytes on."""

    def close(self) -> None:
        """Nothing to close (``zipfile`` leaves a file it was given open)."""

    def take(self) -> Iterator[bytes]:
        """What was written since the last ``take`` (nothing when nothing was: never an empty chunk)."""
        if self._parts:
            data = b"".join(self._parts)
            self._parts.clear()
            yield data


def stream_zip(app: Flask, address: str) -> Iterator[bytes]:
    """The zip export of ``address``: ``person.json``, then every file it lists, in chunks."""
    with app.app_context():
        moment = clock.now()
    engine, drain, files = db.engine_of(app), Drain(), []
    with zipfile.ZipFile(drain, "w", allowZip64=True) as archive:
        with archive.open(_entry(PERSON_JSON, moment, zipfile.ZIP_DEFLATED), "w", force_zip64=True) as entry:
            for chunk, listed in records.json_parts(app, address):
                entry.write(chunk)
                files.extend(listed)
                yield from drain.take()
        for attachment in files:
            yield from _write_file(archive, drain, engine, attachment)
    yield from drain.take()  # the central directory


def _write_file(archive: zipfile.ZipFile, drain: Drain, engine: Engine, attachment: Attachment) -> Iterator[bytes]:
    written = 0
    info = _entry(records.file_path(attachment), attachment.created_at, zipfile.ZIP_STORED)
    with archive.open(info, "w", force_zip64=True) as entry:
        for piece in store.chunks(engine, attachment.id):
            entry.write(piece)
            written += len(piece)
            yield from drain.take()
    if written != attachment.size:
        raise records.PersonChanged(f"file #{attachment.id} went while the export streamed")
    yield from drain.take()


def _entry(name: str, moment: datetime, compression: int) -> zipfile.ZipInfo:
    """An entry named ``name``, dated ``moment`` in UTC (a zip stores no time zone)."""
    info = zipfile.ZipInfo(name, date_time=moment.astimezone(UTC).timetuple()[:6])
    info.compress_type = compression
    info.external_attr = FILE_MODE
    return info
