"""Attachments' bytes in the database, in pieces: written with their inquiry, read a piece at a time.

A file is written in ``CHUNK_SIZE`` pieces inside the inquiry's own write
transaction (``app.inquiries.store``), so an inquiry is saved with all its files or
with none. Reading never loads a file whole: a download, the People
export's zip and the backup each take one piece per query.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from sqlalchemy import Engine, func, insert, select
from sqlalchemy.orm import Session

from app.attachments.uploads import Upload
from app.core import clock
from app.models import Attachment, AttachmentChunk

CHUNK_SIZE = 256 * 1024


def save(session: Session, inquiry_id: int, uploads: Iterable[Upload]) -> None:
    """Store ``uploads`` as inquiry ``inquiry_id``'s files, a piece at a time (in the caller's transaction)."""
    for upload in uploads:
        attachment_id = session.execute(
            insert(Attachment)
            .values(
                inquiry_id=inquiry_id,
                field_key=upload.field_key,
                name=upload.name,
                content_type=upload.content_type,
                size=upload.size,
                created_at=clock.now(),
            )
            .returning(Attachment.id)
        ).scalar_one()
        upload.stream.seek(0)
        seq = 0
        while piece := upload.stream.read(CHUNK_SIZE):
            session.execute(insert(AttachmentChunk).values(attachment_id=attachment_id, seq=seq, data=piece))
            seq += 1


def of_inquiry(session: Session, inquiry_id: int) -> list[Attachment]:
    """Inquiry ``inquiry_id``'s files, in the order they were sent."""
    return list(session.scalars(select(Attachment).where(Attachment.inquiry_id == inquiry_id).order_by(Attachment.id)))


def of_inquiries(session: Session, inquiry_ids: list[int]) -> dict[int, list[Attachment]]:
    """The files of each of ``inquiry_ids`` (those with none left out)."""
    found: dict[int, list[Attachment]] = {}
    if inquiry_ids:
        for attachment in session.scalars(
            select(Attachment).where(Attachment.inquiry_id.in_(inquiry_ids)).order_by(Attachment.id)
        ):
            if attachment.inquiry_id is not None:  # always, by the query: a held e-mail's file has none
                found.setdefault(attachment.inquiry_id, []).append(attachment)
    return found


def counts(session: Session, inquiry_ids: list[int]) -> dict[int, int]:
    """How many files each of ``inquiry_ids`` has (those with none left out), in one query by the index."""
    if not inquiry_ids:
        return {}
    rows = session.execute(
        select(Attachment.inquiry_id, func.count())
        .where(Attachment.inquiry_id.in_(inquiry_ids))
        .group_by(Attachment.inquiry_id)
    )
    return {inquiry_id: count for inquiry_id, count in rows if inquiry_id is not None}


def one(session: Session, inquiry_id: int, attachment_id: int) -> Attachment | None:
    """File ``attachment_id`` if it belongs to inquiry ``inquiry_id``."""
    return session.scalar(select(Attachment).where(Attachment.id == attachment_id, Attachment.inquiry_id == inquiry_id))


def chunks(engine: Engine, attachment_id: int) -> Iterator[bytes]:
    """File ``attachment_id``'s bytes, a piece per query on a connection of its own, so a long download
    holds no transaction open (a file deleted meanwhile just ends)."""
    seq = 0
    while True:
        with engine.connect() as connection:
            piece = connection.scalar(
                select(AttachmentChunk.data).where(
                    AttachmentChunk.attachment_id == attachment_id, AttachmentChunk.seq == seq
                )
            )
        if piece is None:
            return
        yield bytes(piece)
        seq += 1
