"""The retention rule: how long inquiries are kept, and which ones that hides and deletes.

One rule, used by the cleanup, the admin pages, the export and the privacy
page, with two policies: ``INBOX`` for ordinary inquiries and ``SPAM`` for the
spam folder, each with its own stored period and so its own cutoff.

* the stored value: the policy's setting (``retention_days``,
  ``spam_retention_days``), ``MIN_DAYS`` to ``MAX_DAYS``; its default when
  missing or invalid (``SUNDOWN_DEFAULT_RETENTION_DAYS`` for the inbox,
  ``DEFAULT_SPAM_DAYS`` for spam);
* a form may set its own period for each policy (``Form.retention_days``,
  ``Form.spam_retention_days``); None means the site's;
* the cutoff: ``now - retention``, one per form with its own period and one
  for the rest (``Cutoffs``);
* the clock: a form counts its inbox retention from receipt (``created_at``),
  from its thread's last message (``Clock.LAST_MESSAGE``: the later of
  ``created_at`` and ``last_message_at``), so a conversation still going on
  is kept, or from closing (``Clock.CLOSED``: an inquiry not closed, its
  ``closed_at`` NULL, is kept; a closed one counts from the later of
  ``created_at`` and ``closed_at``); spam always counts from receipt. Since
  neither the last message nor closing is older than receipt, an inquiry
  past its cutoff by either is past it by receipt too: the cleanup's batches
  keep following ``created_at``, and test the other column on the rows of
  that range;
* ``visible(cutoffs)``, the read predicate: an inquiry past its form's
  retention is hidden at once, even before a cleanup deletes it, unless it
  is on legal hold;
* ``expired(cutoffs)``, the delete predicate: its exact complement;
* what expiry does: a form deletes its expired inquiries (``Expiry.DELETE``)
  or anonymises them (``Expiry.ANONYMISE``, ``app.cleanup.anonymise``): an
  anonymised inquiry stays, visible and never expired again, with nothing
  personal left in it (``by_expiry`` tells the two kinds of form apart).

``visible_in`` and ``expired_in`` apply them to one policy's inquiries (its
status); ``visible_now`` is what the admin pages read through.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from flask import current_app
from sqlalchemy import ColumnElement, and_, false, func, or_, select, true
from sqlalchemy.orm import Session

from app.core import clock, dialect
from app.models import Form, Inquiry, InquiryStatus, Setting

log = logging.getLogger(__name__)

DEFAULT_DAYS = 180
DEFAULT_SPAM_DAYS = 30
MIN_DAYS = 1
MAX_DAYS = 3650
KEY = "retention_days"
SPAM_KEY = "spam_retention_days"


class Clock(StrEnum):
    """Where a form's inbox retention counts from (``Form.retention_clock``)."""

    RECEIVED = "received"
    LAST_MESSAGE = "last_message"
    CLOSED = "closed"  # kept while open or waiting; counted from when it was closed


class Expiry(StrEnum):
    """What the cleanup does to a form's inquiries past their retention (``Form.expiry_action``)."""

    DELETE = "delete"
    ANONYMISE = "anonymise"  # keeps the form, dates, status and the answers that name nobody


def default_days() -> int:
    """The retention used before an admin sets one (``SUNDOWN_DEFAULT_RETENTION_DAYS``)."""
    return current_app.config["DEFAULT_RETENTION_DAYS"]


@dataclass(frozen=True)
class Policy:
    """A retention policy: the inquiries it covers (``status``), its setting and its default."""

    status: InquiryStatus
    key: str
    default: Callable[[], int]


INBOX = Policy(InquiryStatus.INBOX, KEY, default_days)
SPAM = Policy(InquiryStatus.SPAM, SPAM_KEY, lambda: DEFAULT_SPAM_DAYS)
POLICIES = (INBOX, SPAM)


def in_bounds(days: int) -> bool:
    """Whether ``days`` is a retention an admin may choose."""
    return MIN_DAYS <= days <= MAX_DAYS


def retention_days(session: Session, policy: Policy = INBOX) -> int:
    """The stored retention in days; the default when missing or invalid (a warning for invalid)."""
    raw = session.scalar(select(Setting.value).where(Setting.key == policy.key))
    if raw is None:
        return policy.default()
    try:
        days = int(raw)
    except ValueError:
        days = 0
    if not in_bounds(days):
        log.warning("invalid stored %s; using %d", policy.key, policy.default())
        return policy.default()
    return days


def spam_retention_days(session: Session) -> int:
    """How long the spam folder keeps an inquiry, in days."""
    return retention_days(session, SPAM)


def parse(raw: str) -> int | None:
    """The whole number of days in ``raw`` if it is a retention in bounds, else None."""
    raw = raw.strip()
    if not raw.isascii() or not raw.isdigit() or len(raw) > 6:
        return None
    days = int(raw)
    return days if in_bounds(days) else None


def save(session: Session, days: int, policy: Policy = INBOX) -> None:
    """Store ``days`` as the policy's retention (the caller commits)."""
    statement = dialect.upsert(session, Setting.__table__).values(key=policy.key, value=str(days))
    session.execute(statement.on_conflict_do_update(index_elements=["key"], set_={"value": statement.excluded.value}))


def cutoff_for(moment: datetime, days: int) -> datetime:
    """The oldest ``created_at`` kept at ``moment`` with a retention of ``days``."""
    return moment - timedelta(days=days)


@dataclass(frozen=True)
class Cutoffs:
    """A policy's cutoffs at one moment: ``forms`` for the forms with a period of their own (by id),
    ``default`` for every other form."""

    default: datetime
    forms: dict[int, datetime] = field(default_factory=dict)
    from_last_message: frozenset[int] = frozenset()  # forms whose clock is ``Clock.LAST_MESSAGE``
    from_closing: frozenset[int] = frozenset()  # forms whose clock is ``Clock.CLOSED``
    anonymising: frozenset[int] = frozenset()  # forms whose expiry is ``Expiry.ANONYMISE``

    def for_form(self, form_id: int | None) -> datetime:
        """The cutoff of form ``form_id``."""
        return self.forms.get(form_id, self.default) if form_id is not None else self.default

    def clock_of(self, form_id: int | None) -> Clock:
        """The clock of form ``form_id``."""
        if form_id in self.from_closing:
            return Clock.CLOSED
        return Clock.LAST_MESSAGE if form_id in self.from_last_message else Clock.RECEIVED

    def past(self, inquiry: Inquiry) -> bool:
        """Whether ``inquiry`` is past its form's cutoff, counted by its form's clock (its hold aside)."""
        start = start_of(inquiry, self.clock_of(inquiry.form_id))
        return start is not None and start < self.for_form(inquiry.form_id)

    def own(self) -> dict[int, datetime]:
        """The cutoff of each form with a period or a clock of its own."""
        forms = set(self.forms) | self.from_last_message | self.from_closing
        return {form_id: self.for_form(form_id) for form_id in forms}

    def newest(self) -> datetime:
        """The latest cutoff of all: nothing newer is past retention."""
        return max([self.default, *self.forms.values()])


def form_retentions(session: Session, policy: Policy = INBOX) -> dict[int, int]:
    """The forms with a period of their own for ``policy``: {form id: days} (out-of-bounds ones ignored)."""
    column = Form.retention_days if policy is INBOX else Form.spam_retention_days
    rows = session.execute(select(Form.id, column).where(column.is_not(None)))
    return {form_id: days for form_id, days in rows if days is not None and in_bounds(days)}


def start_of(inquiry: Inquiry, kind: Clock) -> datetime | None:
    """When ``inquiry``'s retention started by clock ``kind``; None while a clock from closing waits for it."""
    if kind is Clock.CLOSED:
        return None if inquiry.closed_at is None else max(inquiry.created_at, inquiry.closed_at)
    if kind is Clock.LAST_MESSAGE and inquiry.last_message_at is not None:
        return max(inquiry.created_at, inquiry.last_message_at)
    return inquiry.created_at


def counting_from(session: Session, kind: Clock) -> frozenset[int]:
    """The forms whose inbox retention counts by clock ``kind``."""
    return frozenset(session.scalars(select(Form.id).where(Form.retention_clock == kind)))


def anonymising(session: Session) -> frozenset[int]:
    """The forms that anonymise their expired inquiries instead of deleting them."""
    return frozenset(session.scalars(select(Form.id).where(Form.expiry_action == Expiry.ANONYMISE)))


def by_expiry(cutoffs: Cutoffs, anonymise: bool) -> ColumnElement[bool]:
    """The inquiries of the forms that anonymise (``anonymise``), or of those that delete.

    The forms are tested as ``form_id + 0``, which no index serves: on the
    index by form, the range of a form that anonymises holds its anonymised
    rows too, which the batches would read again each time; the index of
    rows not anonymised leads instead (``expired``).
    """
    ids = sorted(cutoffs.anonymising)
    if anonymise:
        return (Inquiry.form_id + 0).in_(ids) if ids else false()
    return or_(Inquiry.form_id.is_(None), Inquiry.form_id.not_in(ids)) if ids else true()


def from_last_message(session: Session) -> frozenset[int]:
    """The forms whose inbox retention counts from the thread's last message."""
    return counting_from(session, Clock.LAST_MESSAGE)


def clocked(session: Session, moment: datetime, days: int, own: dict[int, int], policy: Policy = INBOX) -> Cutoffs:
    """Cutoffs at ``moment`` for a site period of ``days`` and forms' own periods ``own`` ({form id: days}),
    with the forms' clocks as stored now (the inbox's only: spam counts from receipt)."""
    forms = {form_id: cutoff_for(moment, each) for form_id, each in own.items()}
    if policy is not INBOX:
        return Cutoffs(cutoff_for(moment, days), forms)
    return Cutoffs(
        cutoff_for(moment, days),
        forms,
        from_last_message(session),
        counting_from(session, Clock.CLOSED),
        anonymising(session),
    )


def cutoffs_at(session: Session, moment: datetime, policy: Policy = INBOX, days: int | None = None) -> Cutoffs:
    """The policy's cutoffs at ``moment``: each form's own, and the site's (``days``, else the stored one)."""
    site_days = retention_days(session, policy) if days is None else days
    return clocked(session, moment, site_days, form_retentions(session, policy), policy)


def current_cutoff(session: Session, policy: Policy = INBOX) -> Cutoffs:
    """The policy's cutoffs in force now, from the stored retentions."""
    return cutoffs_at(session, clock.now(), policy)


def _as_cutoffs(cutoff: datetime | Cutoffs) -> Cutoffs:
    return cutoff if isinstance(cutoff, Cutoffs) else Cutoffs(cutoff)


def _side(cutoff: datetime, older: bool, kind: Clock) -> ColumnElement[bool]:
    """Older than ``cutoff`` (or not) by receipt, and by the thread's last message or by closing per ``kind``.

    Each ``older`` keeps ``created_at < cutoff`` first, so the index on
    ``created_at`` bounds the rows; its complement is written out, not
    negated, so that NULLs fall on the kept side.
    """
    if kind is Clock.LAST_MESSAGE:
        if older:
            quiet = or_(Inquiry.last_message_at.is_(None), Inquiry.last_message_at < cutoff)
            return and_(Inquiry.created_at < cutoff, quiet)
        return or_(Inquiry.created_at >= cutoff, Inquiry.last_message_at >= cutoff)
    if kind is Clock.CLOSED:
        if older:
            return and_(Inquiry.created_at < cutoff, Inquiry.closed_at.is_not(None), Inquiry.closed_at < cutoff)
        return or_(Inquiry.created_at >= cutoff, Inquiry.closed_at.is_(None), Inquiry.closed_at >= cutoff)
    return Inquiry.created_at < cutoff if older else Inquiry.created_at >= cutoff


def _by_form(cutoffs: Cutoffs, older: bool) -> ColumnElement[bool]:
    """Each inquiry against its form's cutoff and clock: older than it, or not."""
    own = cutoffs.own()
    if not own:
        return _side(cutoffs.default, older, Clock.RECEIVED)
    others = or_(Inquiry.form_id.is_(None), Inquiry.form_id.not_in(list(own)))
    return or_(
        and_(others, _side(cutoffs.default, older, Clock.RECEIVED)),
        *(
            and_(Inquiry.form_id == form_id, _side(cutoff, older, cutoffs.clock_of(form_id)))
            for form_id, cutoff in own.items()
        ),
    )


def visible(cutoff: datetime | Cutoffs) -> ColumnElement[bool]:
    """The read predicate: inquiries admins may see at ``cutoff`` (held and anonymised ones always)."""
    return or_(
        Inquiry.legal_hold.is_(True), Inquiry.anonymised_at.is_not(None), _by_form(_as_cutoffs(cutoff), older=False)
    )


def expired(cutoff: datetime | Cutoffs, by_key: bool = False) -> ColumnElement[bool]:
    """The delete predicate: older than its form's cutoff, not on hold, not anonymised already.

    With forms of their own period, the newest cutoff bounds ``created_at``
    too (implied, so the same rows): the index range then ends there. The
    test on ``anonymised_at`` is the condition of the index of rows not
    anonymised (migration 0024), which the batches then follow. ``by_key``:
    for inquiries looked up by id, where that test would only tempt a
    planner into that index, it is left out (the caller's rows then are
    never anonymised ones: an anonymised inquiry has no files).
    """
    cutoffs = _as_cutoffs(cutoff)
    held = Inquiry.legal_hold.is_(False)
    kept = held if by_key else and_(held, Inquiry.anonymised_at.is_(None))
    if not cutoffs.own():
        return and_(kept, Inquiry.created_at < cutoffs.default)
    return and_(kept, Inquiry.created_at < cutoffs.newest(), _by_form(cutoffs, older=True))


def visible_in(policy: Policy, cutoff: datetime | Cutoffs, by_id: bool = False) -> ColumnElement[bool]:
    """The policy's inquiries that are visible at ``cutoff``.

    ``by_id``: for a query that names its inquiries by id, the status test is
    written so that no index can serve it (``status || ''``), and the ids lead.
    """
    status = Inquiry.status.concat("") if by_id else Inquiry.status
    return and_(status == policy.status, visible(cutoff))


def expired_in(policy: Policy, cutoff: datetime | Cutoffs, by_key: bool = False) -> ColumnElement[bool]:
    """The policy's inquiries that a cleanup at ``cutoff`` deletes (``by_key`` as in ``expired``)."""
    return and_(Inquiry.status == policy.status, expired(cutoff, by_key))


def visible_now(session: Session, policy: Policy | None = INBOX, by_id: bool = False) -> ColumnElement[bool]:
    """The read predicate now: the inbox by default, one folder, or every folder (``None``); ``by_id`` as in
    ``visible_in``."""
    if policy is not None:
        return visible_in(policy, current_cutoff(session, policy), by_id)
    return or_(*(visible_in(each, current_cutoff(session, each), by_id) for each in POLICIES))


def policy_of(inquiry: Inquiry) -> Policy:
    """The policy that covers ``inquiry`` (its folder's)."""
    return SPAM if inquiry.status == InquiryStatus.SPAM else INBOX


def days_for(session: Session, inquiry: Inquiry) -> int:
    """The retention in days that covers ``inquiry``: its form's own for its folder, else the site's."""
    policy = policy_of(inquiry)
    own = None if inquiry.form_id is None else form_retentions(session, policy).get(inquiry.form_id)
    return own or retention_days(session, policy)


def deletion_due(session: Session, inquiry: Inquiry) -> datetime | None:
    """When ``inquiry`` passes its form's retention (hidden then, deleted by the next cleanup); None while held,
    or while its form counts from closing and it is not closed (``waits_for_closing``)."""
    start = None if inquiry.legal_hold else counted_from(session, inquiry, policy_of(inquiry))
    return None if start is None else start + timedelta(days=days_for(session, inquiry))


def clock_of(session: Session, inquiry: Inquiry, policy: Policy = INBOX) -> Clock:
    """The clock ``inquiry``'s retention counts by: its form's in the inbox, receipt in spam."""
    if policy is not INBOX or inquiry.form_id is None:
        return Clock.RECEIVED
    raw = session.scalar(select(Form.retention_clock).where(Form.id == inquiry.form_id))
    return Clock(raw) if raw in set(Clock) else Clock.RECEIVED


def counted_from(session: Session, inquiry: Inquiry, policy: Policy = INBOX) -> datetime | None:
    """When ``inquiry``'s retention started: receipt, its thread's last message or its closing, as its form
    counts; None while it waits to be closed."""
    return start_of(inquiry, clock_of(session, inquiry, policy))


def waits_for_closing(session: Session, inquiry: Inquiry) -> bool:
    """Whether ``inquiry`` is kept until it is closed (its form counts from closing; not closed yet)."""
    return counted_from(session, inquiry, policy_of(inquiry)) is None


@dataclass(frozen=True)
class Preview:
    """What a retention of ``retention_days`` would delete at the next cleanup."""

    retention_days: int
    count: int
    oldest: datetime | None


def preview(session: Session, days: int, policy: Policy = INBOX) -> Preview:
    """Count (and date the oldest of) the policy's inquiries a site retention of ``days`` would delete now
    (forms with a period of their own keep theirs)."""
    condition = expired_in(policy, cutoffs_at(session, clock.now(), policy, days))
    count, oldest = session.execute(select(func.count(), func.min(Inquiry.created_at)).where(condition)).one()
    if oldest is not None and oldest.tzinfo is None:
        oldest = oldest.replace(tzinfo=UTC)
    return Preview(days, count, oldest)
