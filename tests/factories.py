"""Factories: the rows tests arrange, with sensible defaults, built in one place.

``inquiry(clock, ...)`` gives the column values of one inquiry received some
days before ``clock()``: the injected clock, or ``wall_clock`` for a real
server; ``add_inquiries`` stores such values in one statement.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from app.attachments import store
from app.attachments.uploads import Upload
from app.models import DEFAULT_FORM_ID, Attachment, Inquiry

Clock = Callable[[], datetime]


def wall_clock() -> datetime:
    """The real time, which a real server runs on."""
    return datetime.now(UTC)


def inquiry(clock: Clock, days_old: float = 1, **values) -> dict:
    """One inquiry received ``days_old`` days before ``clock()``; ``values`` set any column."""
    row = {
        "name": "Ada",
        "email": "ada@example.com",
        "message": "Hello",
        "legal_hold": False,
        "created_at": clock() - timedelta(days=days_old),
        "form_id": DEFAULT_FORM_ID,
    }
    return {**row, **values}


def aged_inquiries(clock: Clock, ages_in_days: Iterable[float], **values) -> list[dict]:
    """One inquiry per age in ``ages_in_days``, in that order."""
    return [inquiry(clock, days_old, **values) for days_old in ages_in_days]


def numbered_inquiries(clock: Clock, count: int, **values) -> list[dict]:
    """``count`` inquiries ``Name 0``, ``Name 1``... received a second apart from a day ago."""
    start = clock() - timedelta(days=1)
    return [
        inquiry(
            clock,
            **{
                "name": f"Name {i}",
                "email": f"p{i}@example.com",
                "message": f"Message {i}\nline two",
                "created_at": start + timedelta(seconds=i),
                **values,
            },
        )
        for i in range(count)
    ]


def add_inquiries(session: Session, rows: Iterable[dict]) -> list[int]:
    """Insert ``rows`` (column values) in one statement and commit; their ids, in order."""
    rows = [
        {**row, "email_key": row["email"].lower() or None} if "email" in row and "email_key" not in row else row
        for row in rows
    ]  # as intake stores it (lookup.key_of)
    if not rows:
        return []
    result = session.execute(insert(Inquiry).returning(Inquiry.id, sort_by_parameter_order=True), rows)
    ids = list(result.scalars())
    session.commit()
    return ids


def add_file(
    session: Session, inquiry_id: int, data: bytes, name: str = "note.txt", content_type: str = "text/plain"
) -> int:
    """Store ``data`` as a file of inquiry ``inquiry_id``, in pieces as intake stores it, and commit; its id."""
    store.save(session, inquiry_id, [Upload("files", name, content_type, len(data), io.BytesIO(data))])
    session.commit()
    return session.scalar(
        select(Attachment.id).where(Attachment.inquiry_id == inquiry_id).order_by(Attachment.id.desc()).limit(1)
    )
