"""The audit log's free text outlives no inquiry: entries about a deleted inquiry keep who, what and when.

An entry about one inquiry with text of its own (a hold's reason) reads
``inquiry #N: text``. When inquiry N is erased, deleted by an admin or by the
cleanup, its entries keep their action, admin and time, and the text becomes
``(erased)`` or ``(deleted)``. The audit log itself is kept
``SUNDOWN_AUDIT_RETENTION_DAYS`` (at least a year), then the cleanup deletes
its entries like any other target.
"""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.models import AuditEntry, Inquiry

WITH_TEXT = AuditEntry.detail.like("inquiry #%:%")


def scrub(session: Session, ids: list[int], word: str = "(erased)") -> int:
    """Replace the free text of the entries about inquiries ``ids`` by ``word``; how many changed.

    One read of the entries that carry text and one update of those about
    ``ids``: many inquiries do not scan the audit log once each.
    """
    gone = set(ids)
    if not gone:
        return 0
    entries = session.execute(select(AuditEntry.id, AuditEntry.detail).where(WITH_TEXT)).all()
    return _replace(session, [(entry_id, inquiry_id) for entry_id, detail in entries
                              if (inquiry_id := inquiry_of(detail)) in gone], word)


def scrub_deleted(session: Session) -> int:
    """The entries with text about inquiries that no longer exist (the cleanup deleted them): scrubbed."""
    entries = [(entry_id, inquiry_of(detail)) for entry_id, detail in
               session.execute(select(AuditEntry.id, AuditEntry.detail).where(WITH_TEXT)).all()
               if not detail.endswith(": (erased)") and not detail.endswith(": (deleted)")]
    named = {inquiry_id for _entry, inquiry_id in entries if inquiry_id is not None}
    if not named:
        return 0
    existing = set(session.scalars(select(Inquiry.id).where(Inquiry.id.in_(named))))
    return _replace(session, [(entry, inquiry_id) for entry, inquiry_id in entries
                              if inquiry_id is not None and inquiry_id not in existing], "(deleted)")


def _replace(session: Session, entries: list[tuple[int, int]], word: str) -> int:
    if entries:
        session.execute(update(AuditEntry), [{"id": entry_id, "detail": f"inquiry #{inquiry_id}: {word}"}
                                             for entry_id, inquiry_id in entries])  # by primary key, one executemany
    return len(entries)


def inquiry_of(detail: str) -> int | None:
    """The N of an audit detail ``inquiry #N: ...``; None for any other."""
    number = detail.removeprefix("inquiry #").partition(":")[0]
    return int(number) if number.isdigit() else None
