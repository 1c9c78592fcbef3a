"""The backlog with files: expired inquiries' attachments deleted under live traffic, a few megabytes a batch.

The same realistic backlog as ``bench.backlog`` (its template of
``backlog_files_sizes`` rows), with files added to a copy of it: one
inquiry in ``SHARE`` (expired, held and recent alike, seeded) carries
``FILES`` files of ``FILE_BYTES`` each (log-uniform, so most are a few
hundred kilobytes and some near the top), random incompressible bytes
stored in ``CHUNK_SIZE`` pieces as intake stores them. The copy is made once
per size on each database (the same files on both) and kept in
``bench/.data`` beside the plain template, under a name carrying the plain
template's key and a hash of this module (the generator).

Then the alternated trials of ``bench.backlog`` on it (one plain ``DELETE``
of the expired inquiries, which cascades to their files, against the
cleanup, whose ``attachment_chunks`` target deletes the files' pieces at
most ``FILE_BATCH_BYTES`` a batch before the ``inquiries`` target deletes
the rows), reported under ``<kind>@<size>/files`` with the plain backlog's
goals (p99 during ÷ idle ≤ 3, no stall over 250 ms, no failed submission,
rows/s ≥ 0.5 × one DELETE), and ``backlog_file_mb_per_s``: the expired
files' megabytes each run deleted ÷ its duration (trend).

Control on SQLite, one run on the control size's copy with
``control_seconds`` of time budget, which must fail the latency figures:
``files_in`` (the pieces chosen as ``attachment_id IN`` the files of every
expired inquiry, a read of every expired inquiry inside each batch's write
lock; judged in full mode only). ``files_by_cascade`` (the
``attachment_chunks`` target removed, each batch deleting its inquiries'
files by cascade) was dropped to fit the full run in its time: it failed
the same latency figures in every full run (p99 11–17×, waits of 1.1–1.5 s).
"""

from __future__ import annotations

import hashlib
import math
import random
import time
from datetime import timedelta
from pathlib import Path

import sqlalchemy as sa

from app.attachments.store import CHUNK_SIZE
from app.config import DEFAULTS
from app.models import Attachment, AttachmentChunk, Inquiry
from bench import backlog
from bench.context import CACHE, template_key
from bench.databases import Database, utcnow
from bench.report import Control

KINDS = ("sqlite", "postgresql")
SHARE = 20  # one inquiry in SHARE carries files
FILES = (1, 3)  # files per such inquiry, uniform
FILE_BYTES = (50 * 1024, 2 * 1024 * 1024)  # each file's size, log-uniform
BURST = 24  # expired inquiries next to each other that each carry the most an inquiry may send
BURST_FILES = 3  # in this many files
MAX_BYTES = DEFAULTS["ATTACHMENT_MAX_BYTES"]  # 10 MB: the shipped most an inquiry may send
SITE_DAYS = 180  # the shipped retention: the files of inquiries older than this (and not held) are deleted
TYPES = (("photo.jpg", "image/jpeg"), ("scan.pdf", "application/pdf"), ("screenshot.png", "image/png"))
CONTROLS = (("file pieces chosen from a list of every expired inquiry's files (attachment_id IN ...)", "files_in"),)


def run(ctx) -> None:
    """At each size, alternated trials on both databases with files present; then the control (SQLite)."""
    for rows in ctx.sizes["backlog_files_sizes"]:
        for kind in KINDS:
            template = files_template(ctx, kind, rows)
            expired = expired_files(template)
            trials = backlog.alternated(ctx, template, "files_", ctx.sizes["rate"], rows)
            label = f"{backlog.sized(kind, rows)}/files"
            backlog.report_trials(ctx, label, trials, rows)
            _report_bytes(ctx, label, trials, expired)
    template = files_template(ctx, "sqlite", ctx.sizes["backlog_files_sizes"][0])
    for name, variant in CONTROLS:
        trial = backlog._trial(
            ctx, template, "cleanup", variant, variant=variant, budget=ctx.sizes["control_seconds"], short_idle=True
        )
        control = Control(name, variant)
        control.figures += backlog.report_latency(ctx, "sqlite", [trial], [], variant=variant)
        backlog.judge(ctx, control)


def _report_bytes(ctx, label: str, trials: list[backlog.Trial], expired: tuple[int, int]) -> None:
    """Megabytes of expired files deleted per second by each cleanup run (and by each DELETE)."""
    files, size = expired
    megabytes = size / 1e6
    per_run = {
        method: [megabytes / (t.finished - t.started) for t in trials if t.method == method]
        for method in ("cleanup", "delete")
    }
    runs = per_run["cleanup"]
    ctx.report.add(
        "backlog_file_mb_per_s",
        sorted(runs)[len(runs) // 2],
        "",
        label,
        f"{files} expired files, {megabytes:.0f} MB, in pieces of {CHUNK_SIZE // 1024} KB; cleanup runs "
        f"{_list(runs)} MB/s (rows and files) vs one DELETE {_list(per_run['delete'])} MB/s",
        samples=f"{len(runs)} runs",
    )


def _list(values: list[float]) -> str:
    return ", ".join(f"{v:.1f}" for v in values)


# --- the template with files -----------------------------------------------------


def files_template(ctx, kind: str, rows: int) -> Database:
    """The backlog template of ``rows`` with files added; made once per size and key, kept in ``bench/.data``."""
    name = f"files_template_{rows}_{_key(ctx, rows)}"
    folder = CACHE / "sqlite"
    cached = (
        Database.existing_sqlite(folder, name)
        if kind == "sqlite"
        else Database.existing_postgresql(ctx.cluster(), name)
    )
    if cached is not None:
        print(f"# {kind}: reusing the files template of {rows} expired rows", flush=True)
        return cached
    # Loaded under a working name and renamed when whole, so an interrupted load is never reused.
    database = ctx.template(kind, rows).copy(f"{name}_loading")
    count, size, seconds = add_files(database, ctx.sizes["backlog_files_share"])
    print(
        f"# {kind}: added {count} files ({size / 1e6:.0f} MB) to the template of {rows} expired rows"
        f" in {seconds:.0f} s",
        flush=True,
    )
    database.drop_stale_templates(f"files_template_{rows}_")
    return database.rename(name)


def _key(ctx, rows: int) -> str:
    """The plain template's key and this module's source: a new generator makes new files."""
    digest = hashlib.sha256(f"{template_key(rows)} {ctx.sizes['backlog_files_share']}".encode())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()[:10]


def add_files(database: Database, share: int, seed: int = 1) -> tuple[int, int, float]:
    """Files on one inquiry in ``share`` and on the ``BURST``, in pieces; settle. Returns (files, bytes, seconds)."""
    started = time.perf_counter()
    with database.engine.connect() as conn:
        inquiries = conn.execute(
            sa.select(Inquiry.id, Inquiry.created_at, Inquiry.legal_hold).order_by(Inquiry.id)
        ).all()
    attachments = _attachments(inquiries, share, random.Random(seed))
    with database.engine.begin() as conn:
        conn.execute(Attachment.__table__.insert(), attachments)
        if database.kind == "postgresql":
            conn.exec_driver_sql("SELECT setval(pg_get_serial_sequence('attachments', 'id'), max(id)) FROM attachments")
    pieces = _pieces(attachments, random.Random(seed + 1))
    if database.kind == "sqlite":
        with database.engine.begin() as conn:
            conn.connection.driver_connection.executemany(
                "INSERT INTO attachment_chunks (attachment_id, seq, data) VALUES (?, ?, ?)",
                ((p["attachment_id"], p["seq"], p["data"]) for p in pieces),
            )
    else:
        database.copy_postgresql(pieces, AttachmentChunk.__tablename__, ("attachment_id", "seq", "data"))
    database.settle()
    return len(attachments), sum(a["size"] for a in attachments), time.perf_counter() - started


def _attachments(inquiries, share: int, chooser: random.Random) -> list[dict]:
    """The files' rows: ``FILES`` files on one inquiry in ``share``, and ``BURST`` files of the most an
    inquiry may send on each of the ``BURST`` expired inquiries next to each other in the middle of the
    backlog (oldest first, as the cleanup deletes them)."""
    cutoff = utcnow() - timedelta(days=SITE_DAYS)
    expired = sorted(
        (created_at, inquiry_id) for inquiry_id, created_at, held in inquiries if created_at < cutoff and not held
    )
    middle = len(expired) // 2
    burst = {inquiry_id for _, inquiry_id in expired[middle : middle + BURST]}
    attachments: list[dict] = []

    def add(inquiry_id: int, created_at, size: int) -> None:
        name, content_type = chooser.choice(TYPES)
        attachments.append(
            {
                "id": len(attachments) + 1,
                "inquiry_id": inquiry_id,
                "field_key": "files",
                "name": name,
                "content_type": content_type,
                "size": size,
                "created_at": created_at,
            }
        )

    for inquiry_id, created_at, _held in inquiries:
        if inquiry_id in burst:
            for _ in range(BURST_FILES):
                add(inquiry_id, created_at, MAX_BYTES // BURST_FILES)
        elif chooser.random() < 1 / share:
            for _ in range(chooser.randint(*FILES)):
                add(inquiry_id, created_at, _file_size(chooser))
    return attachments


def _file_size(chooser: random.Random) -> int:
    low, high = FILE_BYTES
    return int(math.exp(chooser.uniform(math.log(low), math.log(high))))


def _pieces(attachments: list[dict], source: random.Random):
    """Each file's random bytes in ``CHUNK_SIZE`` pieces, as ``app.attachments.store.save`` writes them."""
    for attachment in attachments:
        data = source.randbytes(attachment["size"])
        for seq, offset in enumerate(range(0, len(data), CHUNK_SIZE)):
            yield {"attachment_id": attachment["id"], "seq": seq, "data": data[offset : offset + CHUNK_SIZE]}


def expired_files(database: Database) -> tuple[int, int]:
    """(files, bytes) of the inquiries past the shipped retention and not held: what a run deletes."""
    inquiries, table = Inquiry.__table__, Attachment.__table__
    cutoff = utcnow() - timedelta(days=SITE_DAYS)
    query = (
        sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(table.c.size), 0))
        .select_from(table.join(inquiries, inquiries.c.id == table.c.inquiry_id))
        .where(inquiries.c.created_at < cutoff, sa.not_(inquiries.c.legal_hold))
    )
    with database.engine.connect() as conn:
        files, size = conn.execute(query).one()
    return int(files), int(size)
