"""The audit log: who did what, when and to how many; never message content.

Every entry is written by ``record``, with its action an ``AuditAction``
(``app.models``): the admin pages, the passkey enrollment, the operator's
commands, erasures and their reapplication alike. ``recent`` is what the
Cleanup page shows.

Its free text outlives no inquiry: entries about a deleted inquiry keep
who, what and when. An entry about one inquiry with text of its own (a
hold's reason) reads ``inquiry #N: text``. When inquiry N is erased, deleted by an admin or by the
cleanup, its entries keep their action, admin and time, and the text becomes
``(erased)`` or ``(deleted)``. The audit log itself is kept
``SUNDOWN_AUDIT_RETENTION_DAYS`` (at least a year), then the cleanup deletes
its entries like any other target.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.core import clock
from app.models import Admin, AuditAction, AuditEntry, Inquiry

WITH_TEXT = AuditEntry.detail.like("inquiry #%:%")
OPERATOR = "operator (command line)"  # the actor of commands run on the server
NAME_MAX = 100  # AuditEntry.admin_name
DETAIL_MAX = 300  # AuditEntry.detail


def record(
    session: Session,
    actor: Admin | str,
    action: AuditAction,
    count: int = 0,
    detail: str = "",
    at: datetime | None = None,
) -> AuditEntry:
    """Add an audit entry to ``session`` (the caller commits): ``actor`` an admin or a name (the operator's),
    ``detail`` short and free of message content, ``at`` the app's clock unless given."""
    name = actor.name if isinstance(actor, Admin) else actor
    entry = AuditEntry(
        admin_name=name[:NAME_MAX],
        action=AuditAction(action),
        count=count,
        detail=detail[:DETAIL_MAX],
        created_at=at or clock.now(),
    )
    session.add(entry)
    return entry


def recent(session: Session, limit: int = 50) -> list[AuditEntry]:
    """The newest audit entries first."""
    return list(
        session.scalars(select(AuditEntry).order_by(AuditEntry.created_at.desc(), AuditEntry.id.desc()).limit(limit))
    )


def scrub(session: Session, ids: list[int], word: str = "(erased)") -> int:
    """Replace the free text of the entries about inquiries ``ids`` by ``word``; how many changed.

    One read of the entries that carry text and one update of those about
    ``ids``: many inquiries do not scan the audit log once each.
    """
    gone = set(ids)
    if not gone:
        return 0
    entries = session.execute(select(AuditEntry.id, AuditEntry.detail).where(WITH_TEXT)).all()
    return _replace(
        session,
        [(entry_id, inquiry_id) for entry_id, detail in entries if (inquiry_id := inquiry_of(detail)) in gone],
        word,
    )


def scrub_deleted(session: Session) -> int:
    """The entries with text about inquiries that no longer exist (the cleanup deleted them) or were
    anonymised (``app.cleanup.anonymise``): scrubbed."""
    entries = [
        (entry_id, inquiry_of(detail))
        for entry_id, detail in session.execute(select(AuditEntry.id, AuditEntry.detail).where(WITH_TEXT)).all()
        if not detail.endswith(": (erased)") and not detail.endswith(": (deleted)")
    ]
    named = {inquiry_id for _entry, inquiry_id in entries if inquiry_id is not None}
    if not named:
        return 0
    existing = set(session.scalars(select(Inquiry.id).where(Inquiry.id.in_(named), Inquiry.anonymised_at.is_(None))))
    return _replace(
        session,
        [(entry, inquiry_id) for entry, inquiry_id in entries if inquiry_id is not None and inquiry_id not in existing],
        "(deleted)",
    )


def _replace(session: Session, entries: list[tuple[int, int]], word: str) -> int:
    if entries:
        session.execute(
            update(AuditEntry),
            [{"id": entry_id, "detail": f"inquiry #{inquiry_id}: {word}"} for entry_id, inquiry_id in entries],
        )  # by primary key, one executemany
    return len(entries)


def inquiry_of(detail: str) -> int | None:
    """The N of an audit detail ``inquiry #N: ...``; None for any other."""
    number = detail.removeprefix("inquiry #").partition(":")[0]
    return int(number) if number.isdigit() else None
