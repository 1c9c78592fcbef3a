"""Who opened which inquiry, and what each admin has read: one ``InquiryView`` row per admin and inquiry.

Opening an inquiry's page records that admin's opening (first and last
time) and makes it read for them; "Mark read" and "Mark unread" change
their own mark only. So reading is each admin's own: no admin opening a
page changes what another sees, and the rows are the record of who opened
what. Each write is one statement (an upsert or a conditional update) in
the caller's short write transaction, so two tabs racing write one row.

The rows go with their inquiry and their admin (``ON DELETE CASCADE``):
whatever deletes an inquiry (the cleanup, an admin, an erasure) deletes
them in the same statement.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, exists, func, select, update
from sqlalchemy.orm import Session

from app.core import db, dialect
from app.models import Inquiry, InquiryView


def opened(session: Session, inquiry_id: int, admin_id: int, now: datetime) -> None:
    """Record that ``admin_id`` opened the inquiry at ``now``; it is read for them from then on (if it was
    not already)."""
    statement = dialect.upsert(session, InquiryView).values(
        inquiry_id=inquiry_id, admin_id=admin_id, first_opened_at=now, last_opened_at=now, read_at=now
    )
    fresh = statement.excluded
    session.execute(
        statement.on_conflict_do_update(
            index_elements=[InquiryView.inquiry_id, InquiryView.admin_id],
            set_={
                # the stored value when there is one: the first opening, and the read since then, stay
                "first_opened_at": func.coalesce(InquiryView.first_opened_at, fresh.first_opened_at),
                "last_opened_at": fresh.last_opened_at,
                "read_at": func.coalesce(InquiryView.read_at, fresh.read_at),
            },
        )
    )


def mark_read(session: Session, inquiry_id: int, admin_id: int, now: datetime) -> bool:
    """Make the inquiry read for ``admin_id`` (not an opening); whether that changed anything."""
    statement = dialect.upsert(session, InquiryView).values(inquiry_id=inquiry_id, admin_id=admin_id, read_at=now)
    return (
        db.rowcount(
            session.execute(
                statement.on_conflict_do_update(
                    index_elements=[InquiryView.inquiry_id, InquiryView.admin_id],
                    set_={"read_at": statement.excluded.read_at},
                    where=InquiryView.read_at.is_(None),
                )
            )
        )
        == 1
    )


def mark_unread(session: Session, inquiry_id: int, admin_id: int) -> bool:
    """Make the inquiry unread for ``admin_id`` again (the record of their openings stays); whether it was read."""
    return (
        db.rowcount(
            session.execute(
                update(InquiryView)
                .where(
                    InquiryView.inquiry_id == inquiry_id,
                    InquiryView.admin_id == admin_id,
                    InquiryView.read_at.is_not(None),
                )
                .values(read_at=None),
                execution_options={"synchronize_session": False, "preserve_rowcount": True},
            )
        )
        == 1
    )


def unread_for_everyone(session: Session, inquiry_id: int) -> None:
    """Make the inquiry unread for every admin (a person's new message in its conversation); the record of
    their openings stays."""
    session.execute(
        update(InquiryView)
        .where(InquiryView.inquiry_id == inquiry_id, InquiryView.read_at.is_not(None))
        .values(read_at=None),
        execution_options={"synchronize_session": False},
    )


def unread_by(admin_id: int) -> ColumnElement[bool]:
    """The inquiries ``admin_id`` has not read (a lookup of their row by the table's key, per inquiry)."""
    return ~exists().where(
        InquiryView.inquiry_id == Inquiry.id, InquiryView.admin_id == admin_id, InquiryView.read_at.is_not(None)
    )


def read_ids(session: Session, admin_id: int, ids: list[int]) -> set[int]:
    """Which of the inquiries ``ids`` (a page of them) ``admin_id`` has read."""
    if not ids:
        return set()
    return set(
        session.scalars(
            select(InquiryView.inquiry_id).where(
                InquiryView.admin_id == admin_id, InquiryView.inquiry_id.in_(ids), InquiryView.read_at.is_not(None)
            )
        )
    )


def of(session: Session, inquiry_id: int, admin_id: int) -> InquiryView | None:
    """``admin_id``'s row for the inquiry: their openings and read mark; None if they never had either."""
    return session.get(InquiryView, (inquiry_id, admin_id))
