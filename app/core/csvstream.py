"""What both CSV exports share: pages of a fixed size, spreadsheet-safe cells, chunks, the download.

The inbox's export (``app.admin.export``) and a person's (``app.people.records``)
both stream: a chunk per page of rows, never the whole file in memory.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator

from flask import Response

PAGE_SIZE = 200
BOM = "\ufeff"  # so that spreadsheets read the file as UTF-8
# OWASP CSV injection: a cell starting with one of these characters may run as a formula.
FORMULA_TRIGGERS = "=+-@\t\r\n"
FORMULA_TRIGGER_SET = frozenset(FORMULA_TRIGGERS)


def neutralise(value: str | None) -> str:
    """A free-text cell made safe for spreadsheets: a leading formula trigger gets a ``'``."""
    if not value:
        return ""
    return "'" + value if value[0] in FORMULA_TRIGGER_SET else value


class Chunks:
    """A CSV writer whose output is taken a chunk at a time; the first chunk is the BOM and ``header``."""

    def __init__(self, header: Iterable[str]) -> None:
        self._buffer = io.StringIO()
        self.writer = csv.writer(self._buffer)
        self._buffer.write(BOM)
        self.writer.writerow(header)

    def take(self) -> bytes:
        """What was written since the last chunk, UTF-8 encoded."""
        text = self._buffer.getvalue()
        self._buffer.seek(0)
        self._buffer.truncate()
        return text.encode("utf-8")


def download(body: Iterator[bytes], filename: str, mimetype: str) -> Response:
    """A streamed UTF-8 attachment: never cached, never buffered by a proxy (``X-Accel-Buffering``)."""
    # A text/* mimetype gets "; charset=utf-8" from werkzeug itself (Response has no charset since 3.0).
    return Response(
        body,
        mimetype=mimetype,
        headers={
            "Content-Disposition": f'attachment; filename="{filename}"',
            "Cache-Control": "no-store",
            "X-Accel-Buffering": "no",
        },
    )
