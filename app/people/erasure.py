"""Erasure: delete every inquiry of one address not on legal hold, keep only a keyed hash of it.

``erase`` runs in one write transaction: the delete, the scrubbing of free
text from the audit entries about the erased inquiries, the ``erasures``
record, its counts per form (``app.inquiries.tally``) and the audit entry
commit together or not at all. Inquiries on
legal hold are kept (and counted), unless the hold is released first.
After a restore, ``app.people.reapply`` erases again what the records cover.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from app import audit
from app.core import clock, db
from app.inquiries import learned, tally
from app.models import AuditAction, Erasure, Inquiry, TallyKind
from app.people import lookup


@dataclass(frozen=True)
class Outcome:
    """What an erasure (or its reapplication) did: inquiries deleted, inquiries kept on hold."""

    erased: int
    kept_on_hold: int


def erase(address: str, actor: str, forms: lookup.Forms = None) -> Outcome:
    """Erase every inquiry of the normalised ``address`` not on legal hold (of the forms ``forms``; None:
    every form), in one transaction.

    Records the erasure (hash, count, actor, time, the forms it covered) and
    an audit entry with the hash only; an erasure of every form also removes what admins' spam moves
    recorded of the sender (``app.inquiries.learned``); nothing is recorded when there was
    nothing to delete. The caller then clears the SQLite WAL (``app.inquiries.gone``).
    """
    digest = lookup.email_hash(address)
    with db.transaction(write=True) as session:
        erased = delete_unheld(session, lookup.of_address(address, forms))
        kept = session.execute(
            select(func.count())
            .select_from(Inquiry)
            .where(lookup.of_address(address, forms), Inquiry.legal_hold.is_(True))
        ).scalar_one()
        if forms is None:  # an erasure of the person, not of some forms: the spam score forgets the sender too
            learned.forget_sender(session, address)
        if erased:
            audit.scrub(session, list(erased))
            moment = clock.now()
            _record(session, digest, len(erased), kept, actor, moment, forms)
            tally.add(session, TallyKind.ERASED, tally.per_form(erased.values()), moment)
    return Outcome(len(erased), kept)


def delete_unheld(session: Session, condition) -> dict[int, int | None]:
    """Delete the inquiries matching ``condition`` that no hold protects; their ids, each with its form."""
    statement = delete(Inquiry).where(condition, Inquiry.legal_hold.is_(False)).returning(Inquiry.id, Inquiry.form_id)
    return {row.id: row.form_id for row in session.execute(statement, execution_options={"synchronize_session": False})}


def _record(
    session: Session, digest: str, count: int, kept: int, actor: str, moment: datetime, forms: lookup.Forms
) -> None:
    session.add(
        Erasure(
            email_hash=digest,
            count=count,
            kept_on_hold=kept,
            actor=actor[:100],
            created_at=moment,
            form_ids=None if forms is None else sorted(forms),
        )
    )
    detail = (
        f"address hmac {digest}"
        + (f"; {kept} on legal hold kept" if kept else "")
        + ("" if forms is None else f"; forms #{', #'.join(map(str, sorted(forms)))} only")
    )
    audit.record(session, actor, AuditAction.ERASED, count, detail, at=moment)
