"""Triage: where the work on an inquiry stands (open, waiting, closed), whom it is assigned to, its tags and
the team's internal notes.

State and assignment are one ``InquiryTriage`` row per inquiry, written
only when someone changes them (no row: open, unassigned), so the intake
writes nothing more. Each change is one statement (an upsert that changes
the row only when the value differs), so two admins racing change it once
and the caller audits only a change. Tags are those an owner defined
(``Tag``); notes are never sent to anyone. All of it goes with its
inquiry (``ON DELETE CASCADE``): a delete, an erasure and the cleanup take
it along, and the People export includes it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from sqlalchemy import ColumnElement, delete, exists, insert, select, update
from sqlalchemy.orm import Session

from app.core import db, dialect
from app.models import Admin, Inquiry, InquiryState, InquiryTag, InquiryTriage, Note, Tag

NOTE_MAX = 5000
TAG_MAX = 40


def triage_of(session: Session, ids: list[int]) -> dict[int, InquiryTriage]:
    """The triage rows of the inquiries ``ids`` that have one."""
    if not ids:
        return {}
    return {
        row.inquiry_id: row for row in session.scalars(select(InquiryTriage).where(InquiryTriage.inquiry_id.in_(ids)))
    }


def set_state(session: Session, inquiry_id: int, state: InquiryState, now: datetime) -> bool:
    """Put the inquiry in ``state``; whether that changed it.

    A change records on the inquiry when it was closed (``closed_at``), or
    clears it when it is reopened: a form whose retention counts from
    closing counts from there.
    """
    changed = _upsert(session, inquiry_id, now, state=InquiryState(state).value)
    if changed:
        closed_at = now if state == InquiryState.CLOSED else None
        session.execute(
            update(Inquiry).where(Inquiry.id == inquiry_id).values(closed_at=closed_at),
            execution_options={"synchronize_session": False},
        )
    return changed


def assign(session: Session, inquiry_id: int, admin_id: int | None, now: datetime) -> bool:
    """Assign the inquiry to ``admin_id`` (None: to nobody); whether that changed it."""
    return _upsert(session, inquiry_id, now, assigned_to=admin_id)


def _upsert(session: Session, inquiry_id: int, now: datetime, **values) -> bool:
    """Write one value, changing the row only when it differs; whether it changed.

    Back to the default (open, nobody), an update: an inquiry without a row
    already has it. Otherwise an upsert whose update is conditional, so of
    two admins racing the second finds the value set and changes nothing.
    """
    ((column, value),) = values.items()
    current = getattr(InquiryTriage, column)
    if value is None or value == InquiryState.OPEN:
        differs = current.is_not(None) if value is None else current != value
        return (
            db.rowcount(
                session.execute(
                    update(InquiryTriage)
                    .where(InquiryTriage.inquiry_id == inquiry_id, differs)
                    .values(changed_at=now, **values),
                    execution_options={"synchronize_session": False, "preserve_rowcount": True},
                )
            )
            == 1
        )
    statement = dialect.upsert(session, InquiryTriage).values(inquiry_id=inquiry_id, changed_at=now, **values)
    return (
        db.rowcount(
            session.execute(
                statement.on_conflict_do_update(
                    index_elements=[InquiryTriage.inquiry_id],
                    set_={column: getattr(statement.excluded, column), "changed_at": statement.excluded.changed_at},
                    where=current.is_(None) | (current != value),
                )
            )
        )
        == 1
    )


def tags_of(session: Session, ids: list[int]) -> dict[int, list[Tag]]:
    """The tags on each of the inquiries ``ids``, by name."""
    found: dict[int, list[Tag]] = {}
    if ids:
        for inquiry_id, tag in session.execute(
            select(InquiryTag.inquiry_id, Tag).join(Tag).where(InquiryTag.inquiry_id.in_(ids)).order_by(Tag.name)
        ):
            found.setdefault(inquiry_id, []).append(tag)
    return found


def set_tags(session: Session, inquiry_id: int, tag_ids: set[int]) -> tuple[list[str], list[str]]:
    """Make the inquiry's tags exactly the existing ones of ``tag_ids``; the names added and removed."""
    names = dict(session.execute(select(Tag.id, Tag.name)).all())
    wanted = {tag_id for tag_id in tag_ids if tag_id in names}
    now_on = set(session.scalars(select(InquiryTag.tag_id).where(InquiryTag.inquiry_id == inquiry_id)))
    added, removed = sorted(wanted - now_on), sorted(now_on - wanted)
    if removed:
        session.execute(delete(InquiryTag).where(InquiryTag.inquiry_id == inquiry_id, InquiryTag.tag_id.in_(removed)))
    if added:
        session.execute(insert(InquiryTag), [{"inquiry_id": inquiry_id, "tag_id": tag_id} for tag_id in added])
    return sorted(names[each] for each in added), sorted(names[each] for each in removed)


def add_note(session: Session, inquiry_id: int, admin: Admin, body: str, now: datetime) -> Note:
    """Add an internal note by ``admin`` (caller commits)."""
    note = Note(inquiry_id=inquiry_id, admin_id=admin.id, admin_name=admin.name, body=body, created_at=now)
    session.add(note)
    return note


def notes_of(session: Session, ids: list[int]) -> dict[int, list[Note]]:
    """The notes on each of the inquiries ``ids``, oldest first."""
    found: dict[int, list[Note]] = {}
    if ids:
        for note in session.scalars(select(Note).where(Note.inquiry_id.in_(ids)).order_by(Note.created_at, Note.id)):
            found.setdefault(note.inquiry_id, []).append(note)
    return found


def notes_text(notes: Iterable[Note]) -> str:
    """Notes as one cell of an export: each its time (UTC), its author, then its text; a blank line between."""
    return "\n\n".join(
        f"{note.created_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} {note.admin_name}\n{note.body}" for note in notes
    )


def all_tags(session: Session) -> list[Tag]:
    """Every tag, by name."""
    return list(session.scalars(select(Tag).order_by(Tag.name)))


def in_state(state: InquiryState) -> ColumnElement[bool]:
    """The inquiries in ``state`` (open: those with no row too)."""
    marked = exists().where(InquiryTriage.inquiry_id == Inquiry.id, InquiryTriage.state == state)
    if state != InquiryState.OPEN:
        return marked
    return ~exists().where(InquiryTriage.inquiry_id == Inquiry.id, InquiryTriage.state != InquiryState.OPEN)


def assigned_to(admin_id: int | None) -> ColumnElement[bool]:
    """The inquiries assigned to ``admin_id``; with None, those assigned to nobody."""
    if admin_id is None:
        return ~exists().where(InquiryTriage.inquiry_id == Inquiry.id, InquiryTriage.assigned_to.is_not(None))
    return exists().where(InquiryTriage.inquiry_id == Inquiry.id, InquiryTriage.assigned_to == admin_id)


def tagged(tag_id: int) -> ColumnElement[bool]:
    """The inquiries with the tag ``tag_id``."""
    return exists().where(InquiryTag.inquiry_id == Inquiry.id, InquiryTag.tag_id == tag_id)
