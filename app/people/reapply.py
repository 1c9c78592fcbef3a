"""After a restore: the erasure records written to a file, read back, and applied again.

A backup made before an erasure brings the erased inquiries back when it is
restored. ``export_records`` writes every erasure record (the address's
keyed hash and the erasure's time, never the address) to a file kept beside
the backups; ``apply_records`` reads it into the restored database and
erases again, for each record, the inquiries of its address received up to
the erasure's time, its cut-off: later inquiries of the same person are
theirs to keep. Inquiries on legal hold are kept, as by the erasure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import cast

from sqlalchemy import ColumnElement, and_, func, or_, select
from sqlalchemy.orm import Session

from app import audit
from app.core import clock, db
from app.models import AuditAction, Erasure, Inquiry
from app.people import erasure, lookup
from app.people.erasure import Outcome

RECORDS_FORMAT = "sundown.erasures.v1"


def export_records(session: Session) -> dict:
    """Every erasure record, as the file ``flask erasures export`` writes."""
    rows = session.scalars(select(Erasure).order_by(Erasure.created_at, Erasure.id))
    return {
        "format": RECORDS_FORMAT,
        "exported_at": _iso(clock.now()),
        "erasures": [
            {
                "email_hash": row.email_hash,
                "count": row.count,
                "kept_on_hold": row.kept_on_hold,
                "actor": row.actor,
                "erased_at": _iso(row.created_at),
                "form_ids": row.form_ids,
            }
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
    form_ids: tuple[int, ...] | None = None  # an erasure by an admin given some forms covered only those

    def covers(self, address: str) -> ColumnElement[bool]:
        """The inquiries of the stored address key ``address`` this erasure covered."""
        covered = and_(Inquiry.email_key == address, Inquiry.created_at <= self.erased_at)
        return covered if self.form_ids is None else covered & Inquiry.form_id.in_(self.form_ids)


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
        forms = entry.get("form_ids")
        return Record(
            digest,
            erased_at.astimezone(UTC),
            int(entry.get("count", 0)),
            int(entry.get("kept_on_hold", 0)),
            str(entry.get("actor", ""))[:100],
            None if forms is None else tuple(int(each) for each in forms),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise RecordsError(f"erasure {position + 1}: {error}") from None


def apply_records(records: Iterable[Record]) -> Outcome:
    """Erase again what ``records`` covered; add the records this database lacks. Idempotent.

    Each record covers the inquiries of its address received up to its
    cut-off (on its forms, when it names some); those not on legal hold go.
    Addresses are matched by hashing each distinct stored address received
    before the latest cut-off (the hash cannot be reversed).
    """
    records = list(records)
    if not records:
        return Outcome(0, 0)
    by_hash: dict[str, list[Record]] = {}
    for record in records:
        by_hash.setdefault(record.email_hash, []).append(record)
    erased = kept = 0
    with db.transaction(write=True) as session:
        _add_missing(session, records)
        latest = max(record.erased_at for record in records)
        for address, its in _stored_addresses_covered(session, by_hash, latest):
            covered = or_(*(record.covers(address) for record in its))
            ids = list(erasure.delete_unheld(session, covered))
            audit.scrub(session, ids)
            erased += len(ids)
            kept += session.execute(select(func.count()).select_from(Inquiry).where(covered)).scalar_one()
        if erased:
            audit.record(
                session,
                audit.OPERATOR,
                AuditAction.ERASURES_APPLIED,
                erased,
                f"{len(records)} erasure records" + (f"; {kept} on legal hold kept" if kept else ""),
            )
    return Outcome(erased, kept)


def _add_missing(session: Session, records: list[Record]) -> None:
    """Insert the records this database does not have (same hash and time), so they survive the next backup."""
    existing = {(digest, at) for digest, at in session.execute(select(Erasure.email_hash, Erasure.created_at))}
    for record in records:
        if (record.email_hash, record.erased_at) not in existing:
            session.add(
                Erasure(
                    email_hash=record.email_hash,
                    count=record.count,
                    kept_on_hold=record.kept_on_hold,
                    actor=record.actor,
                    created_at=record.erased_at,
                    form_ids=None if record.form_ids is None else list(record.form_ids),
                )
            )
            existing.add((record.email_hash, record.erased_at))
    session.flush()


def _stored_addresses_covered(session: Session, by_hash: dict[str, list[Record]], latest: datetime):
    """Each stored address key whose hash has records, with those records."""
    statement = select(Inquiry.email_key).where(Inquiry.created_at <= latest, Inquiry.email_key.is_not(None)).distinct()
    for address in session.scalars(statement).all():
        its = by_hash.get(lookup.email_hash(cast(str, address)))  # the query leaves out NULL
        if its:
            yield address, its


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
