"""Queries on inquiries for the admin pages; every read goes through the retention rule's predicate.

A list reads one folder (the inbox unless asked: ``retention.INBOX`` or
``retention.SPAM``), optionally only the inquiries this admin has not read
(``app.inquiries.reads``) or no one has answered, and those a search finds
(``app.inquiries.search``); one inquiry (the detail page, its actions) is
found in either. Counts stop at ``COUNT_LIMIT``: past it the page says
"more than", so that no count reads a million rows.

The accessors are the only way a view reaches one inquiry by its id:
``get_inquiry_or_404`` (visible, on a form the admin may read) and
``get_writable_inquiry_or_403`` (and the admin holds the permission of the
request's endpoint on its form). ``in_scope`` is the same rule for lists and
statements over many inquiries: the forms given to the admin (today every
form, ``app.auth.permissions``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from flask import abort
from flask_babel import gettext as _
from flask_login import current_user
from sqlalchemy import ColumnElement, Select, false, func, select, true, tuple_
from sqlalchemy.orm import Session
from werkzeug.exceptions import BadRequest

from app.admin import guard
from app.auth import permissions
from app.auth.permissions import Permission
from app.core import db
from app.inquiries import reads, search
from app.inquiries.retention import INBOX, Policy, visible_now
from app.models import Inquiry

PAGE_SIZE = 50
COUNT_LIMIT = 1000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
UNREAD = "unread"
UNANSWERED = "unanswered"
SHOW = (UNREAD, UNANSWERED)


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


def in_scope(permission: Permission = Permission.READ) -> ColumnElement[bool]:
    """The inquiries of the forms on which the logged-in admin holds ``permission`` (today: every form)."""
    forms = permissions.forms_for(current_user, permission)
    return true() if forms is None else Inquiry.form_id.in_(sorted(forms))


def get_inquiry_or_404(inquiry_id: int) -> Inquiry:
    """The visible inquiry ``inquiry_id`` in either folder, on a form the logged-in admin may read; or a 404
    (also when it is past retention, or on a form not given to them: for them it is not there)."""
    session = db.get_session()
    row = session.scalar(select(Inquiry).where(Inquiry.id == inquiry_id, visible_now(session, None), in_scope()))
    if row is None:
        abort(404, _("This inquiry does not exist, was deleted, or is past retention."))
    return row


def get_writable_inquiry_or_403(inquiry_id: int) -> Inquiry:
    """``get_inquiry_or_404``, then a 403 unless the logged-in admin holds the permission of this request's
    endpoint (``app.admin.policy``) on the inquiry's form."""
    inquiry = get_inquiry_or_404(inquiry_id)
    if not guard.may(guard.required(), inquiry.form_id):
        abort(403, str(guard.REFUSED))
    return inquiry


def shown(show: str, reader: int | None = None) -> ColumnElement[bool]:
    """The ``show`` filter: ``unread`` (by the admin ``reader``), ``unanswered``, or every inquiry (``""``)."""
    if show == UNREAD:
        if reader is None:
            raise ValueError("the unread filter needs the admin whose reading it is")
        return reads.unread_by(reader)
    if show == UNANSWERED:
        return Inquiry.answered_at.is_(None)
    return true()


def listed(
    session: Session,
    policy: Policy = INBOX,
    query: str = "",
    show: str = "",
    form_id: int | None = None,
    reader: int | None = None,
) -> ColumnElement[bool]:
    """The inquiries a list shows: one folder's visible ones, filtered by ``show`` (unread meaning by the admin
    ``reader``), the search ``query`` and one form (``form_id``). The caller adds ``in_scope()``."""
    ids = search.found_ids(session, query) if query else None
    of_form = Inquiry.form_id == form_id if form_id is not None else true()
    if ids is None:
        condition = visible_now(session, policy) & shown(show, reader) & of_form
        return condition & search.contains(session, query) if query else condition
    if not ids:
        return false()
    # The index named the inquiries, so SQLite must look them up by id. With the folder's status
    # test left indexable, its planner (no statistics) chose to walk the folder's index for them,
    # for the page and the count of matches alike, far slower than looking them up by id
    # (figures: docs/benchmarks.md, "Figures behind the code").
    return Inquiry.id.in_(ids) & visible_now(session, policy, by_id=True) & shown(show, reader) & of_form


@dataclass(frozen=True)
class Count:
    """How many inquiries match, exact up to ``COUNT_LIMIT``; ``more`` when there are more than that."""

    value: int
    more: bool


def count_capped(session: Session, condition: ColumnElement[bool]) -> Count:
    """How many inquiries satisfy ``condition``, reading at most ``COUNT_LIMIT + 1`` of them."""
    found = session.execute(
        select(func.count()).select_from(select(Inquiry.id).where(condition).limit(COUNT_LIMIT + 1).subquery())
    ).scalar_one()
    return Count(min(found, COUNT_LIMIT), found > COUNT_LIMIT)


def count(session: Session, policy: Policy = INBOX) -> int:
    """How many visible inquiries one folder holds."""
    return session.execute(select(func.count()).select_from(Inquiry).where(visible_now(session, policy))).scalar_one()


def unread_count(session: Session, reader: int) -> Count:
    """How many visible inquiries in the inbox the admin ``reader`` has not read (for the navigation)."""
    return count_capped(session, listed(session, INBOX, show=UNREAD, reader=reader) & in_scope())


def inbox_page(
    session: Session,
    query: str = "",
    after: Cursor | None = None,
    before: Cursor | None = None,
    policy: Policy = INBOX,
    show: str = "",
    where: ColumnElement[bool] | None = None,
) -> Page:
    """The page of one folder's visible inquiries older than ``after`` (or newer than ``before``).

    Keyset pagination on ``(created_at, id)``: rows with equal timestamps are
    ordered by id, so no row is skipped or repeated across pages. ``where``,
    when given, replaces ``listed(session, policy, query, show)`` (a caller
    that also counts builds it once).
    """
    stmt = select(Inquiry).where(where if where is not None else listed(session, policy, query, show))
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
