"""Where a new inquiry is written: its row, the challenge it used, its files, its notifications.

``new`` sets an inquiry's columns, the one place a per-inquiry column is
set; it runs before the write transaction, so nothing it computes holds
the write lock. ``save`` writes everything a submission stores, inside the
write transaction ``app.inquiries.submit`` opens (where the rate limits'
hit was counted first): on SQLite a submission takes the write lock once.

* **The inquiry and its challenge.** A verified solution counts once: its
  challenge's expiry and signature go into ``used_challenges`` (their
  primary key) with ``ON CONFLICT DO NOTHING`` in the inquiry's transaction,
  so the two are stored together or not at all, and of any number of
  requests racing with one solution exactly one files in the inbox; a
  replay goes to the spam folder (``replayed_solution`` among its checks).
  A verdict that is spam anyway consumes nothing; one with no solution that
  is not spam (a person without JavaScript) goes to the inbox as it is. On PostgreSQL both rows go in one
  statement (``_consuming_insert``): in a threaded worker every extra round
  trip also waits to take the GIL back, and with a separate insert the
  throughput of solved submissions fell clearly below the same app's with
  the proof-of-work switched off (figures: docs/benchmarks.md, "Figures
  behind the code"). SQLite has no data-modifying CTE and no round trips:
  the challenge on the DBAPI cursor (``app.core.driver``), then the inquiry.
* **Its files** (``app.attachments.store``), in pieces.
* **For the inbox only** (the proof-of-work passed: never spam, the honeypot
  or a refused one): its notifications' outbox rows (``app.notify``) and the
  acknowledgement (``app.replies.ack``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import BindParameter, bindparam, case, exists, false, insert, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.orm import Session

from app import notify
from app.attachments import store as attachment_store
from app.attachments.uploads import Upload
from app.core import clock, dialect, driver
from app.inquiries.spam import Reason, Verdict
from app.models import Form, Inquiry, InquiryStatus, UsedChallenge
from app.people import lookup
from app.replies import ack

USER_AGENT_MAX, ORIGIN_MAX = 300, 200  # characters kept


@dataclass(frozen=True)
class NewInquiry:
    """An inquiry ready to write: its form, its columns (all but ``status``) and the sender's language."""

    form: Form
    values: dict[str, Any]
    locale: str


@dataclass(frozen=True)
class Filed:
    """A saved inquiry: its id, and where it was filed."""

    inquiry_id: int
    status: InquiryStatus


def new(form: Form, answers: dict[str, Any], locale: str, user_agent: str | None, origin: str | None) -> NewInquiry:
    """An inquiry to ``form`` with ``answers`` (``app.forms.answers.stored``: name, e-mail, message, answers),
    from a browser saying ``user_agent`` and, when posted from another site, that site's ``origin``."""
    values = dict(
        answers,
        form_id=form.id,
        email_key=lookup.key_of(answers["email"]),
        user_agent=(user_agent or "")[:USER_AGENT_MAX] or None,
        created_at=clock.now(),
        origin=origin[:ORIGIN_MAX] if origin else None,
    )
    return NewInquiry(form, values, locale)


def save(session: Session, inquiry: NewInquiry, verdict: Verdict, files: Iterable[Upload] = ()) -> Filed:
    """Write ``inquiry`` in the inbox or the spam folder as ``verdict`` says, its challenge consumed, with its
    files and, in the inbox, its notifications and acknowledgement queued: all in the caller's transaction,
    which counts the notifications against the hourly cap last (``notify.cap_counted_last``)."""
    inquiry_id, status = insert_judged(session.connection(), inquiry.values, verdict)
    attachment_store.save(session, inquiry_id, files)
    if status == InquiryStatus.INBOX:
        notify.enqueue_inquiries(session, [inquiry_id], inquiry.form, cap_counted_last=True)
        ack.queue_for(session, inquiry_id, inquiry.form, inquiry.values, inquiry.locale)
    else:
        notify.note_spam(session, inquiry_id, inquiry.form)
    return Filed(inquiry_id, status)


def insert_judged(connection: Connection, values: dict[str, Any], verdict: Verdict) -> tuple[int, InquiryStatus]:
    """Insert the inquiry with ``values``, consuming the verdict's challenge when it has one and is not spam;
    its id and status (the spam folder when the verdict says so or its challenge was already used), and in
    spam the checks that put it there."""
    if verdict.spam:
        return insert_inquiry(
            connection, {**values, "spam_checks": verdict.against()}, InquiryStatus.SPAM
        ), InquiryStatus.SPAM
    if verdict.signature is None:
        return insert_inquiry(connection, values, InquiryStatus.INBOX), InquiryStatus.INBOX
    if connection.dialect.name == "postgresql":
        row = connection.execute(
            _consuming_insert(tuple(values)),
            {
                **values,
                "signature": verdict.signature,
                "expires_at": verdict.expires_at,
            },
        ).one()
        inquiry_id, status = row.id, InquiryStatus(row.status)
    else:
        inbox = _consume(connection, verdict.signature, verdict.expires_at)
        status = InquiryStatus.INBOX if inbox else InquiryStatus.SPAM
        inquiry_id = insert_inquiry(connection, values, status)
    if status == InquiryStatus.SPAM:  # a replayed solution: rare, so one more statement is no cost
        replayed = verdict.adding(Reason.REPLAYED.value).against()
        connection.execute(
            update(Inquiry.__table__).where(Inquiry.__table__.c.id == inquiry_id).values(spam_checks=replayed)
        )
    return inquiry_id, status


def insert_inquiry(connection: Connection, values: dict[str, Any], status: InquiryStatus) -> int:
    """Insert one inquiry with ``status``; its id.

    A Core insert: the ORM's unit of work cost more on this hot path
    (figures: docs/benchmarks.md, "Figures behind the code").
    """
    inquiries = Inquiry.__table__
    return connection.execute(insert(inquiries).values(**values, status=status).returning(inquiries.c.id)).scalar_one()


@lru_cache(maxsize=4)
def _consuming_insert(columns: tuple[str, ...]) -> Any:
    """PostgreSQL's one statement for a solved submission (a data-modifying CTE, which SQLite lacks)::

        WITH used AS (INSERT INTO used_challenges ...
                      ON CONFLICT (expires_at, signature) DO NOTHING RETURNING signature)
        INSERT INTO submissions (..., status)
        VALUES (..., CASE WHEN EXISTS (SELECT FROM used) THEN 'inbox' ELSE 'spam' END) RETURNING id, status

    ``columns``: the inquiry's, as ``new`` sets them. A replayed signature
    inserts nothing into ``used`` (a racing transaction's insert is waited
    for, as with the unique key alone), so the inquiry goes to the spam
    folder.
    """
    used_table, inquiries = UsedChallenge.__table__, Inquiry.__table__
    used = (
        postgresql.insert(used_table)
        .values(signature=bindparam("signature"), expires_at=bindparam("expires_at"))
        .on_conflict_do_nothing(index_elements=[used_table.c.expires_at, used_table.c.signature])
        .returning(used_table.c.signature)
        .cte("used")
    )
    status = case((exists(used.select()), InquiryStatus.INBOX.value), else_=InquiryStatus.SPAM.value)
    values: dict[str, BindParameter[Any]] = {name: bindparam(name) for name in columns}
    # Executed with this CTE, SQLAlchemy sent legal_hold's Python-side default as NULL: it is given here.
    statement = insert(inquiries).values(**values, legal_hold=false(), status=status).add_cte(used)
    return statement.returning(inquiries.c.id, inquiries.c.status)


def _consume(connection: Connection, signature: str | None, expires_at: datetime | None) -> bool:
    """Record the challenge as used; False when it already was (one atomic insert, unique key).

    Run on the DBAPI cursor (``app.core.driver``): it is in every submission with
    a solution.
    """
    values = {"signature": signature, "expires_at": expires_at}
    return driver.rowcount(connection, _consume_statement(connection.dialect), values) == 1


@lru_cache(maxsize=4)
def _consume_statement(database: Dialect) -> driver.Compiled:
    """The used-challenge insert, compiled for ``database``."""
    table = UsedChallenge.__table__
    statement = (
        dialect.upsert_for(database, table)
        .values(
            signature=bindparam("signature", type_=table.c.signature.type),
            expires_at=bindparam("expires_at", type_=table.c.expires_at.type),
        )
        .on_conflict_do_nothing(index_elements=[table.c.expires_at, table.c.signature])
    )
    return driver.compile_for(statement, database)
