"""Per-form counts of the inquiries that left: deleted or anonymised by the cleanup, deleted by admins, erased.

The retention report (``app.cleanup.evidence``) counts them per form for a
period, which neither the ledger (its counts are per target, for the whole
site) nor the audit log (an entry counts a deletion, not its forms) can.
Each way of removing inquiries adds its ``FormTally`` rows in the very
transaction that removes them:

* a cleanup batch of the inquiries, spam or anonymised targets adds its
  rows per form to its run's row for that target (``add_batch``): one
  upsert a batch, whatever its size, a row per form it touched;
* an admin's deletion and an erasure add a row per form (``add``), at the
  time of their audit entry.

The rows are kept as long as the audit log (``SUNDOWN_AUDIT_RETENTION_DAYS``),
then the cleanup deletes them (target ``form_tallies``). Removals before
these counts existed (migration 0026) are not in them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime

from sqlalchemy import Connection, func, select
from sqlalchemy.orm import Session

from app.core import dialect
from app.models import FormTally, TallyKind

CONFLICT = ("run_id", "form_id", "kind")  # the unique index ``ux_form_tallies_run_id_form_id_kind``


def per_form(form_ids: Iterable[int | None]) -> Counter[int]:
    """How many of ``form_ids`` (one per inquiry removed) each form has; an inquiry with no form is left out."""
    return Counter(form_id for form_id in form_ids if form_id is not None)


def add_batch(connection: Connection, run_id: int, at: datetime, kind: str, forms: Mapping[int, int]) -> None:
    """Add a cleanup batch's ``forms`` (rows per form id) to its run's rows of ``kind``: one statement."""
    rows = [
        {"run_id": run_id, "form_id": form_id, "kind": TallyKind(kind), "count": count, "at": at}
        for form_id, count in sorted(forms.items())
        if count
    ]
    if not rows:
        return
    statement = dialect.upsert_for(connection.dialect, FormTally.__table__).values(rows)
    connection.execute(
        statement.on_conflict_do_update(
            index_elements=list(CONFLICT), set_={"count": FormTally.__table__.c.count + statement.excluded.count}
        )
    )


def add(session: Session, kind: TallyKind, forms: Mapping[int, int], at: datetime) -> None:
    """Add to ``session`` (the caller commits) a row per form of an admin's deletion or an erasure."""
    session.add_all(
        FormTally(form_id=form_id, kind=kind, count=count, at=at) for form_id, count in sorted(forms.items()) if count
    )


def totals(session: Session, form_id: int, start: datetime, end: datetime) -> dict[str, int]:
    """How many inquiries of the form left each way (by ``TallyKind``) from ``start`` until before ``end``."""
    rows = session.execute(
        select(FormTally.kind, func.sum(FormTally.count))
        .where(FormTally.form_id == form_id, FormTally.at >= start, FormTally.at < end)
        .group_by(FormTally.kind)
    )
    return {kind: int(count) for kind, count in rows}
