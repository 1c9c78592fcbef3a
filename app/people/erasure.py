"""Erasure: delete every inquiry of one address not on legal hold, keep only a keyed hash of it.

``erase`` runs in one write transaction: the delete, the scrubbing of free
text from the audit entries about the erased inquiries, the ``erasures``
record and the audit entry commit together or not at all. Inquiries on
legal hold are kept (and counted), unless the hold is released first.

After a restore from a backup, the restored database may hold inquiries an
erasure removed. ``export_records`` writes the erasure records to a file kept
beside the backups; ``apply_records`` reads it into the restored database
and erases again, for each record, the inquiries of its address received up
to the erasure's time (``created_at``, its cut-off): later inquiries of the
same person are theirs to keep.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone

from sqlalchemy import and_, delete, func, select, update
from sqlalchemy.orm import Session

from app import clock, db
from app.models import AuditEntry, Erasure, Inquiry
from app.people import lookup

RECORDS_FORMAT = "sundown.erasures.v1"
OPERATOR = "operator (command line)"  # the actor of commands run on the server


@dataclass(frozen=True)
class Outcome:
    """What an erasure (or its reapplication) did: inquiries deleted, inquiries kept on hold."""

    erased: int
    kept_on_hold: int


def erase(address: str, actor: str) -> Outcome:
    """Erase every inquiry of the normalised ``address`` not on legal hold, in one transaction.

    Records the erasure (hash, count, actor, time) and an audit entry with the
    hash only; nothing is recorded when there was nothing to delete. The
    caller then clears the SQLite WAL (``app.gone``).
    """
    digest = lookup.email_hash(address)
    with db.transaction(write=True) as session:
        erased = _delete_unheld(session, lookup.of_address(address))
        kept = session.scalar(
            select(func.count()).select_from(Inquiry).where(lookup.of_address(address), Inquiry.legal_hold.is_(True))
        )
        if erased:
            _scrub_audit(session, erased)
            _record(session, digest, len(erased), kept, actor, clock.now())
    return Outcome(len(erased), kept)


def _delete_unheld(session: Session, condition) -> list[int]:
    """Delete the inquiries matching ``condition`` that no hold protects; their ids."""
    statement = delete(Inquiry).where(condition, Inquiry.legal_hold.is_(False)).returning(Inquiry.id)
    return list(session.execute(statement, execution_options={"synchronize_session": False}).scalars())


def _scrub_audit(session: Session, ids: list[int]) -> None:
    """Audit entries about erased inquiries keep who, what and when, not their free text (a hold's reason)."""
    for inquiry_id in ids:
        session.execute(
            update(AuditEntry)
            .where(AuditEntry.detail.like(f"inquiry #{inquiry_id}:%"))
            .values(detail=f"inquiry #{inquiry_id}: (erased)")
        )


def _record(session: Session, digest: str, count: int, kept: int, actor: str, moment: datetime) -> None:
    session.add(Erasure(email_hash=digest, count=count, kept_on_hold=kept, actor=actor[:100], created_at=moment))
    detail = f"address hmac {digest}" + (f"; {kept} on legal hold kept" if kept else "")
    session.add(AuditEntry(admin_name=actor[:100], action="erased", count=count, detail=detail, created_at=moment))


def export_records(session: Session) -> dict:
    """Every erasure record, as the file ``flask erasures export`` writes."""
    rows = session.scalars(select(Erasure).order_by(Erasure.created_at, Erasure.id))
    return {
        "format": RECORDS_FORMAT,
        "exported_at": _iso(clock.now()),
        "erasures": [
            {"email_hash": row.email_hash, "count": row.count, "kept_on_hold": row.kept_on_hold,
             "actor": row.actor, "erased_at": _iso(row.created_at)}
            for row in rows
        ],
    }


class RecordsError(ValueError):
    """An erasures file that is not one ``export_records`` wrote."""


@dataclass(frozen=True)
class Record:
    """One erasure as read from a file: the address's hash and the cut-off."""

    email_hash: str
    erased_at: datetime
    count: int
    kept_on_hold: int
    actor: str


def parse_records(text: str) -> list[Record]:
    """The records of an erasures file; ``RecordsError`` naming what is wrong."""
    try:
        document = json.loads(text)
    except ValueError as error:
        raise RecordsError(f"not JSON ({error})") from None
    if not isinstance(document, dict) or document.get("format") != RECORDS_FORMAT:
        raise RecordsError(f"not an erasures file (format must be {RECORDS_FORMAT})")
    entries = document.get("erasures")
    if not isinstance(entries, list):
        raise RecordsError("'erasures' must be a list")
    return [_parse_record(position, entry) for position, entry in enumerate(entries)]


def _parse_record(position: int, entry) -> Record:
    try:
        digest = entry["email_hash"]
        if not (isinstance(digest, str) and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)):
            raise ValueError("email_hash must be 64 hex digits")
        erased_at = datetime.fromisoformat(entry["erased_at"].replace("Z", "+00:00"))
        if erased_at.tzinfo is None:
            raise ValueError("erased_at must carry its time zone")
        return Record(digest, erased_at.astimezone(timezone.utc), int(entry.get("count", 0)),
                      int(entry.get("kept_on_hold", 0)), str(entry.get("actor", ""))[:100])
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise RecordsError(f"erasure {position + 1}: {error}") from None


def apply_records(records: Iterable[Record]) -> Outcome:
    """Erase again what ``records`` covered; add the records this database lacks. Idempotent.

    For each address hash, the latest cut-off counts: every inquiry of that
    address received up to then and not on legal hold goes. Addresses are
    matched by hashing each distinct stored address received before the
    latest cut-off (the hash cannot be reversed).
    """
    records = list(records)
    if not records:
        return Outcome(0, 0)
    cutoffs: dict[str, datetime] = {}
    for record in records:
        cutoffs[record.email_hash] = max(record.erased_at, cutoffs.get(record.email_hash, record.erased_at))
    erased = kept = 0
    with db.transaction(write=True) as session:
        _add_missing(session, records)
        for address, cutoff in _stored_addresses_covered(session, cutoffs, max(cutoffs.values())):
            covered = and_(Inquiry.email == address, Inquiry.created_at <= cutoff)
            ids = _delete_unheld(session, covered)
            _scrub_audit(session, ids)
            erased += len(ids)
            kept += session.scalar(select(func.count()).select_from(Inquiry).where(covered))
        if erased:
            session.add(AuditEntry(admin_name=OPERATOR, action="erasures_applied", count=erased,
                                   detail=f"{len(records)} erasure records" + (f"; {kept} on legal hold kept" if kept else ""),
                                   created_at=clock.now()))
    return Outcome(erased, kept)


def _add_missing(session: Session, records: list[Record]) -> None:
    """Insert the records this database does not have (same hash and time), so they survive the next backup."""
    existing = set(session.execute(select(Erasure.email_hash, Erasure.created_at)).all())
    for record in records:
        if (record.email_hash, record.erased_at) not in existing:
            session.add(Erasure(email_hash=record.email_hash, count=record.count, kept_on_hold=record.kept_on_hold,
                                actor=record.actor, created_at=record.erased_at))
            existing.add((record.email_hash, record.erased_at))
    session.flush()


def _stored_addresses_covered(session: Session, cutoffs: dict[str, datetime], latest: datetime):
    """Each stored address whose hash has a record, with that record's cut-off."""
    statement = select(Inquiry.email).where(Inquiry.created_at <= latest).distinct()
    for address in session.scalars(statement).all():
        cutoff = cutoffs.get(lookup.email_hash(address))
        if cutoff is not None:
            yield address, cutoff


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")
