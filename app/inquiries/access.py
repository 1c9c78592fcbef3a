"""Who opened what: an inquiry's page, its files, the CSV export, a person's export (``Access`` rows).

Each is one small insert in its own short write transaction, written by
the GET that shows or sends the data (the one kind of write a GET makes
besides the opener's own read mark). A row names an inquiry by its number
only, never its text, so it outlives the inquiry as the audit log does and
the cleanup deletes it after ``SUNDOWN_AUDIT_RETENTION_DAYS`` with the
audit log (``app.cleanup.targets``). The inquiry's page shows its rows; the
People export lists those of the person's inquiries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from app.core import clock, db
from app.models import Access, AccessKind, Admin

SHOWN = 50  # the newest accesses an inquiry's page lists


def record(admin: Admin, kind: AccessKind, inquiry_ids: Sequence[int | None], count: int = 1) -> None:
    """Record that ``admin`` opened ``kind`` of each of ``inquiry_ids`` ([None] for the CSV export), now, in
    a short write transaction of its own."""
    with db.transaction(write=True) as session:
        add(session, admin, kind, inquiry_ids, count)


def add(session: Session, admin: Admin, kind: AccessKind, inquiry_ids: Sequence[int | None], count: int = 1) -> None:
    """``record`` in the caller's write transaction."""
    now = clock.now()
    session.execute(
        insert(Access),
        [
            {
                "admin_id": admin.id,
                "admin_name": admin.name,
                "kind": AccessKind(kind).value,
                "inquiry_id": inquiry_id,
                "count": count,
                "created_at": now,
            }
            for inquiry_id in inquiry_ids
        ],
    )


def of_inquiry(session: Session, inquiry_id: int, limit: int = SHOWN) -> list[Access]:
    """The newest accesses to one inquiry first."""
    return list(
        session.scalars(
            select(Access)
            .where(Access.inquiry_id == inquiry_id)
            .order_by(Access.created_at.desc(), Access.id.desc())
            .limit(limit)
        )
    )


def of_inquiries(session: Session, ids: list[int]) -> dict[int, list[Access]]:
    """Every access to each of the inquiries ``ids``, oldest first (a person's export)."""
    found: dict[int, list[Access]] = {}
    if ids:
        for row in session.scalars(
            select(Access).where(Access.inquiry_id.in_(ids)).order_by(Access.created_at, Access.id)
        ):
            found.setdefault(cast(int, row.inquiry_id), []).append(row)  # asked by id: never None
    return found
