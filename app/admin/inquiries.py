"""Queries on inquiries for the admin pages; every read goes through the retention rule's predicate.

A list reads one folder (the inbox unless asked: ``retention.INBOX`` or
``retention.SPAM``); one inquiry (the detail page, its actions) is found in
either.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from flask_babel import gettext as _
from flask import abort
from sqlalchemy import ColumnElement, Select, func, or_, select, tuple_
from sqlalchemy.orm import Session
from werkzeug.exceptions import BadRequest

from app import db
from app.retention import INBOX, Policy, visible_now
from app.models import Inquiry

PAGE_SIZE = 50
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
LIKE_ESCAPE = "\\"


@dataclass(frozen=True)
class Cursor:
    """A position in the inbox: the ``(created_at, id)`` of a row, exact to the microsecond."""

    created_at: datetime
    id: int

    def encode(self) -> str:
        """The cursor as a URL-safe token, ``<microseconds since epoch>.<id>``."""
        micros = (self.created_at - EPOCH) // timedelta(microseconds=1)
        return f"{micros}.{self.id}"

    @classmethod
    def decode(cls, token: str) -> Cursor:
        """Parse a token made by ``encode``; a malformed one is a 400."""
        try:
            micros, row_id = (int(part) for part in token.split("."))
            return cls(EPOCH + timedelta(microseconds=micros), row_id)
        except (ValueError, OverflowError):
            raise BadRequest(_("That page link is malformed; go back to the first page.")) from None

    @classmethod
    def of(cls, row: Inquiry) -> Cursor:
        """The cursor pointing at ``row``."""
        return cls(row.created_at, row.id)


@dataclass(frozen=True)
class Page:
    """One inbox page, newest first, and the cursors of its neighbours (None at the ends)."""

    rows: list[Inquiry]
    newer: Cursor | None
    older: Cursor | None


def get_inquiry_or_404(inquiry_id: int) -> Inquiry:
    """The visible inquiry ``inquiry_id`` in either folder, or a 404 (also when it is past retention)."""
    session = db.get_session()
    row = session.scalar(
        select(Inquiry).where(Inquiry.id == inquiry_id, visible_now(session, None))
    )
    if row is None:
        abort(404, _("This inquiry does not exist, was deleted, or is past retention."))
    return row


def escape_like(text: str) -> str:
    """``text`` with LIKE wildcards escaped, for a literal substring match."""
    for char in (LIKE_ESCAPE, "%", "_"):
        text = text.replace(char, LIKE_ESCAPE + char)
    return text


def matching(query: str) -> ColumnElement[bool]:
    """Inquiries whose name or email contains ``query`` (case-insensitive)."""
    pattern = f"%{escape_like(query)}%"
    return or_(
        Inquiry.name.ilike(pattern, escape=LIKE_ESCAPE),
        Inquiry.email.ilike(pattern, escape=LIKE_ESCAPE),
    )


def count(session: Session, policy: Policy = INBOX) -> int:
    """How many visible inquiries one folder holds."""
    return session.scalar(select(func.count()).select_from(Inquiry).where(visible_now(session, policy)))


def inbox_page(
    session: Session, query: str = "", after: Cursor | None = None, before: Cursor | None = None,
    policy: Policy = INBOX,
) -> Page:
    """The page of one folder's visible inquiries older than ``after`` (or newer than ``before``).

    Keyset pagination on ``(created_at, id)``: rows with equal timestamps are
    ordered by id, so no row is skipped or repeated across pages.
    """
    stmt = select(Inquiry).where(visible_now(session, policy))
    if query:
        stmt = stmt.where(matching(query))
    if before is not None:
        rows = _newer_than(session, stmt, before)
        has_newer = len(rows) > PAGE_SIZE
        rows = list(reversed(rows[:PAGE_SIZE]))
        has_older = True
    else:
        rows = _older_than(session, stmt, after)
        has_older = len(rows) > PAGE_SIZE
        rows = rows[:PAGE_SIZE]
        has_newer = after is not None
    return Page(
        rows=rows,
        newer=Cursor.of(rows[0]) if rows and has_newer else None,
        older=Cursor.of(rows[-1]) if rows and has_older else None,
    )


def _key():
    return tuple_(Inquiry.created_at, Inquiry.id)


def _older_than(session: Session, stmt: Select, cursor: Cursor | None) -> list[Inquiry]:
    if cursor is not None:
        stmt = stmt.where(_key() < (cursor.created_at, cursor.id))
    stmt = stmt.order_by(Inquiry.created_at.desc(), Inquiry.id.desc()).limit(PAGE_SIZE + 1)
    return list(session.scalars(stmt))


def _newer_than(session: Session, stmt: Select, cursor: Cursor) -> list[Inquiry]:
    stmt = stmt.where(_key() > (cursor.created_at, cursor.id))
    stmt = stmt.order_by(Inquiry.created_at.asc(), Inquiry.id.asc()).limit(PAGE_SIZE + 1)
    return list(session.scalars(stmt))
