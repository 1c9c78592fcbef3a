"""Anonymising instead of deleting: a form's expired inquiries lose whatever names a person, and stay.

A form whose expiry is ``retention.Expiry.ANONYMISE`` keeps its inquiries
past their retention for its counts and charts: the target ``anonymised``
(``app.cleanup.targets``) follows the inquiries' deletion in the same run,
in batches bounded like theirs (and by ``MOST`` rows, since each row's
answers are rewritten on their own), each batch one short transaction:

* the inquiry keeps its form, dates, folder, workflow and the answers of
  choice, number, date and consent fields (``KEPT_TYPES``); its name,
  address (and the address's lookup key, so People and erasures find it no
  more), message, every other answer, browser and hold reason are emptied,
  and ``anonymised_at`` is set, so no batch chooses it again;
* its files are deleted: their pieces went first, with every expired
  inquiry's (``targets.files_expired``), so this deletes only their rows;
* its thread keeps its messages' dates and kinds: the people's messages lose
  their text, subject and sender, the replies and the team's notes their text.

The emptied text leaves the search index (its triggers) and, on SQLite, the
database file and WAL as deleted rows do: ``secure_delete`` zeroes the old
cells, and the run's forgetting (``app.inquiries.gone``) purges the index and
truncates the WAL. Anonymised inquiries are kept until an admin deletes them
(docs/cleanup.md says why).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, bindparam, delete, select, update

from app.cleanup.batches import Moment
from app.forms.fields import CHOICE_TYPES
from app.inquiries import retention
from app.models import Attachment, InboundMessage, Inquiry, Note, Reply

ANONYMISED = "anonymised"  # the target's name: the ledger counts rows kept anonymised apart from rows deleted
KEPT_TYPES = CHOICE_TYPES | {"number", "date", "consent"}
MOST = 500  # rows a batch anonymises at most


def expired(moment: Moment) -> ColumnElement[bool]:
    """The inbox's inquiries past their retention at ``moment`` whose form anonymises them, not done yet."""
    return and_(
        retention.expired_in(retention.INBOX, moment.cutoff), retention.by_expiry(moment.cutoff, anonymise=True)
    )


def anonymise(connection: Connection, chosen: ColumnElement[bool], moment: Moment) -> list[int | None]:
    """Anonymise the inquiries ``chosen`` (a batch's ``WHERE``), their files and thread; the form of each."""
    found = connection.execute(select(Inquiry.id, Inquiry.form_id).where(chosen)).all()
    if not found:
        return []
    ids = [inquiry_id for inquiry_id, _form in found]
    _rewrite_answers(connection, ids)
    connection.execute(
        update(Inquiry)
        .where(Inquiry.id.in_(ids))
        .values(name="", email="", email_key=None, message="", user_agent=None, hold_reason=None)
        .values(anonymised_at=moment.now)
    )
    connection.execute(delete(Attachment).where(Attachment.inquiry_id.in_(ids)))
    connection.execute(
        update(InboundMessage)
        .where(InboundMessage.inquiry_id.in_(ids))
        .values(sender="", sender_key=None, sender_name="", subject="", body="", reason=None, message_id=None)
    )
    connection.execute(update(Reply).where(Reply.inquiry_id.in_(ids)).values(subject="", body="", reply_to=None))
    connection.execute(update(Note).where(Note.inquiry_id.in_(ids)).values(body=""))
    return [form_id for _inquiry, form_id in found]


def kept_answer(entry: dict[str, Any]) -> dict[str, Any]:
    """One stored answer (``app.forms.answers.stored``) as anonymised: as it was if its type names nobody,
    else with its value emptied (a column it pointed at is emptied too)."""
    if entry.get("type") in KEPT_TYPES:
        return entry
    emptied = {key: value for key, value in entry.items() if key not in ("value", "in", "shown")}
    return {**emptied, "value": [] if isinstance(entry.get("value"), list) else ""}


def _rewrite_answers(connection: Connection, ids: list[int]) -> None:
    """Each inquiry's answers as ``kept_answer`` leaves them: one statement, a row each."""
    table = Inquiry.__table__
    rows = connection.execute(select(Inquiry.id, Inquiry.answers).where(Inquiry.id.in_(ids)))
    changed = [
        {"row_id": inquiry_id, "kept": [kept_answer(entry) for entry in answers]}
        for inquiry_id, answers in rows
        if answers
    ]
    if changed:
        statement = update(table).where(table.c.id == bindparam("row_id")).values(answers=bindparam("kept"))
        connection.execute(statement, changed)
