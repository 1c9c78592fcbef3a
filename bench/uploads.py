"""Memory under concurrent uploads: eight inquiries of 10 MB of files each, sent at once.

A form with a file field is added to a fresh database of each kind; one
gunicorn with 2 workers of 4 threads (eight requests at once) serves it.
After a warm-up round (imports, every thread's database connection and
its page cache), each round resets every worker's peak RSS (``/proc/PID/clear_refs``, 5),
sends ``UPLOADS`` multipart submissions at once, each with ``FILES`` files
that fill the shipped per-inquiry limit (10 MB, random incompressible bytes
behind a PDF or PNG header, so they pass the check by content), and reads
each worker's peak afterwards. ``upload_rss_growth_ratio`` is the workers'
peak growth summed ÷ the bytes in flight (80 MB): the bodies are spooled to
disk by ``app.web.intake`` and each file again by Werkzeug, and pieces of 256 KB
go to the database, so memory must stay well under what is uploaded: at
most half of it. What remains is per request, not per byte: the pieces in
flight, each thread's buffers and, on SQLite, each connection's page cache
(2 MB by default) filled by its ten megabytes of pieces.

Control on SQLite: ``uploads_in_memory`` (``bench.wsgi``: the body and each
file kept in memory, never spooled) must fail the figure.
"""

from __future__ import annotations

import random
import threading
import uuid

import sqlalchemy as sa

from app.config import DEFAULTS
from app.models import Attachment, Form
from bench.client import Connection
from bench.report import Control
from bench.servers import memory_kb, reset_peak, serve

KINDS = ("sqlite", "postgresql")
UPLOADS = 8  # at once: 2 workers × 4 threads
FILES = 3  # per upload, together the most an inquiry may send
MAX_BYTES = DEFAULTS["ATTACHMENT_MAX_BYTES"]
HEADERS = (
    (b"%PDF-1.7\n", "scan.pdf", "application/pdf"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "photo.png", "image/png"),
)
FILE_FIELD = {"key": "files", "type": "file", "label": {"en": "Files"}, "max": FILES}
SLUG = "support"
GOAL = "≤ 0.5"


def run(ctx) -> None:
    """Both databases; then the in-memory control on SQLite."""
    bodies = [_body(random.Random(seed)) for seed in range(UPLOADS)]
    control = Control("uploads kept in memory, not spooled", "uploads_in_memory")
    for kind in KINDS:
        _measure(ctx, kind, "shipped", bodies, ctx.sizes["upload_rounds"])
    control.figures.append(_measure(ctx, "sqlite", "uploads_in_memory", bodies, ctx.sizes["control_rounds"]))
    ctx.report.control(control)


def _measure(ctx, kind: str, variant: str, bodies: list[tuple[bytes, str]], rounds: int):
    """``rounds`` rounds of ``UPLOADS`` uploads at once on a fresh database; report the figure."""
    database = ctx.database(kind, f"uploads_{variant}")
    try:
        _add_form(database)
        growths: list[float] = []
        with serve(database.url, ctx.workdir, f"uploads-{variant}-{kind}", variant, workers=2, threads=4) as server:
            workers = server.workers()
            assert _send(bodies, server.port) == [201] * UPLOADS, "the warm-up uploads were refused"
            for _ in range(rounds):
                for worker in workers:
                    reset_peak(worker)
                before = {worker: memory_kb(worker)["VmRSS"] for worker in workers}
                statuses = _send(bodies, server.port)
                assert statuses == [201] * UPLOADS, f"uploads answered {statuses}"
                growths.append(sum(memory_kb(w)["VmHWM"] - before[w] for w in workers) / 1024)
        stored = _stored(database)
    finally:
        database.drop()
    in_flight = sum(len(body) for body, _ in bodies) / 2**20
    extra = {"variant": variant} if variant != "shipped" else {}
    return ctx.report.add(
        "upload_rss_growth_ratio",
        max(growths) / in_flight,
        GOAL,
        kind,
        f"{UPLOADS} uploads at once of {FILES} files, {in_flight:.0f} MB in flight; the workers' peak RSS grew "
        f"{', '.join(f'{g:.1f}' for g in growths)} MB; {stored} files stored",
        samples=f"{rounds} rounds",
        **extra,
    )


def _add_form(database) -> None:
    """The form ``SLUG``: Contact's fields (migration 0009's form, id 1) and a file field."""
    table = Form.__table__
    with database.engine.begin() as conn:
        contact = conn.execute(sa.select(table).where(table.c.id == 1)).mappings().one()
        conn.execute(
            table.insert().values(
                slug=SLUG,
                title={"en": "Support"},
                description={},
                fields=[*contact["fields"], FILE_FIELD],
                email_field=contact["email_field"],
                enabled=True,
                created_at=contact["created_at"],
                updated_at=contact["updated_at"],
            )
        )


def _stored(database) -> int:
    with database.engine.connect() as conn:
        return conn.scalar(sa.select(sa.func.count()).select_from(Attachment.__table__))


def _body(chooser: random.Random) -> tuple[bytes, str]:
    """A multipart submission: the text fields and ``FILES`` files that fill the limit; (body, boundary)."""
    boundary = uuid.UUID(int=chooser.getrandbits(128)).hex
    text = {"name": "Ada Lovelace", "email": "ada@example.com", "message": "The order documents, attached."}
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode()
        for key, value in text.items()
    ]
    size = (MAX_BYTES - 4096) // FILES  # the multipart framing is not counted against the limit
    for n in range(FILES):
        header, name, content_type = HEADERS[n % len(HEADERS)]
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
            f"Content-Type: {content_type}\r\n\r\n".encode()
            + header
            + chooser.randbytes(size - len(header))
            + b"\r\n"
        )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), boundary


def _send(bodies: list[tuple[bytes, str]], port: int) -> list[int]:
    """POST each body at once, each on its own connection; their statuses, in order."""
    statuses = [0] * len(bodies)
    go = threading.Barrier(len(bodies))

    def send(n: int) -> None:
        body, boundary = bodies[n]
        connection = Connection(port, timeout=120)
        go.wait()
        statuses[n], _ = connection.request(
            "POST",
            f"/api/forms/{SLUG}/inquiries",
            body,
            {"Content-Type": f"multipart/form-data; boundary={boundary}", "Accept": "application/json"},
        )
        connection.close()

    threads = [threading.Thread(target=send, args=(n,)) for n in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses
