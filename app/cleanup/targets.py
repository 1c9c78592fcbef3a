"""What the cleanup deletes: one target per kind of row, each with its expiry predicate.

Files go first: the pieces of every expired inquiry's files, at most
``FILE_BATCH_BYTES`` a batch, so that the inquiries' own batches, which
cascade to their files, find no bytes left to delete and stay as short as
rows without files (an inquiry can carry 10 MB). Both use the same cutoffs.

Inquiries and spam are two targets on one table, each with its own cutoffs:
the site's, and one per form with a period of its own. The inbox's inquiries
of forms that anonymise them are a third target, ``anonymised``
(``app.cleanup.anonymise``), whose batches empty rows instead of deleting
them; the ledger counts it apart from the deletions. These three count
their rows per form too (``form``), for the retention report. A run's ``Moment``
carries the inbox cutoffs, fixed when the run took the claim and recorded
in its ledger row; the spam cutoffs are read from their stored retentions
each time a batch is planned (two small reads per batch), so they are the
ones in force then, as ``retention.visible_now`` reads them for every page.
"""

from __future__ import annotations

from datetime import timedelta

from flask import current_app
from sqlalchemy import ColumnElement, ScalarSelect, and_, or_, select
from sqlalchemy.orm import InstrumentedAttribute

from app.attachments.store import CHUNK_SIZE
from app.cleanup import anonymise
from app.cleanup.batches import Moment, Target
from app.core import db
from app.inquiries import retention
from app.models import (
    Access,
    AdminLogin,
    Attachment,
    AttachmentChunk,
    AuditEntry,
    CleanupRun,
    Delivery,
    FormTally,
    InboundMessage,
    Inquiry,
    MessageState,
    OneTimeSecret,
    RateLimit,
    UsedChallenge,
)

LEDGER_KEEP = timedelta(days=90)
DELIVERIES_KEEP = timedelta(days=30)  # done and failed notifications: the health figures look back this far
HELD_KEEP = timedelta(days=30)  # e-mails held apart (matched no inquiry): an owner looks at them within this
FILE_BATCH_BYTES = 8 * 1024 * 1024  # a file batch's most bytes: as long a transaction as a batch of long messages


def spam_expired(moment: Moment, by_key: bool = False) -> ColumnElement[bool]:
    """Spam inquiries past their form's spam retention at ``moment.now`` (and not on hold)."""
    with db.transaction() as session:
        cutoffs = retention.cutoffs_at(session, moment.now, retention.SPAM)
    return retention.expired_in(retention.SPAM, cutoffs, by_key)


def held_expired(moment: Moment) -> ColumnElement[bool]:
    """E-mails held apart for longer than ``HELD_KEEP`` at ``moment``."""
    return and_(InboundMessage.state == MessageState.HELD, InboundMessage.received_at < moment.now - HELD_KEEP)


def files_expired(moment: Moment) -> ColumnElement[bool]:
    """The pieces of the files of inquiries expired in the inbox or the spam folder at ``moment``, and of
    e-mails held apart past ``HELD_KEEP``.

    Each piece is checked by its own file's inquiry or held e-mail (correlated
    subqueries: lookups by primary key), in the pieces' id order, so a batch
    reads about as many pieces as it deletes, and none when there are no files.
    ``attachment_id IN (the files of expired inquiries)`` instead was planned
    as a read of every expired inquiry, inside the batch's write lock: 0.2 s
    at 50,000 expired rows, up to 1 s at 300,000, with no file at all.
    """
    expired = or_(retention.expired_in(retention.INBOX, moment.cutoff, by_key=True), spam_expired(moment, by_key=True))
    # Nested scalar subqueries, not EXISTS over a join: the planners could turn that into a join that reads
    # every expired inquiry (PostgreSQL did); a key equal to a scalar subquery is looked up whatever the plan.
    own_inquiry = select(Inquiry.id).where(Inquiry.id == _own_file(Attachment.inquiry_id), expired)
    # A file names its e-mail only while that is held (threading moves it to the inquiry in the same
    # transaction), so its age alone decides: a test of ``state`` too was planned by PostgreSQL as a read
    # of every held e-mail through the index on ``state``, once per piece.
    own_message = select(InboundMessage.id).where(
        InboundMessage.id == _own_file(Attachment.held_message_id),
        InboundMessage.received_at < moment.now - HELD_KEEP,
    )
    return or_(own_inquiry.scalar_subquery().is_not(None), own_message.scalar_subquery().is_not(None))


def _own_file(owner: InstrumentedAttribute) -> ScalarSelect:
    """``owner`` (the inquiry's or the held e-mail's id) of the piece's own file, looked up by its key."""
    return (
        select(owner).where(Attachment.id == AttachmentChunk.attachment_id).correlate(AttachmentChunk).scalar_subquery()
    )


def inbox_expired(moment: Moment) -> ColumnElement[bool]:
    """The inbox's inquiries past their retention at ``moment`` whose form deletes them."""
    return and_(
        retention.expired_in(retention.INBOX, moment.cutoff), retention.by_expiry(moment.cutoff, anonymise=False)
    )


def tallies_expired(moment: Moment) -> ColumnElement[bool]:
    """The per-form counts of removed inquiries (``app.inquiries.tally``): kept as the audit log is."""
    return FormTally.at < moment.now - timedelta(days=current_app.config["AUDIT_RETENTION_DAYS"])


def audit_expired(moment: Moment) -> ColumnElement[bool]:
    """Audit entries older than ``SUNDOWN_AUDIT_RETENTION_DAYS``."""
    return AuditEntry.created_at < moment.now - timedelta(days=current_app.config["AUDIT_RETENTION_DAYS"])


def accesses_expired(moment: Moment) -> ColumnElement[bool]:
    """Records of who opened what older than ``SUNDOWN_AUDIT_RETENTION_DAYS``: kept as the audit log is."""
    return Access.created_at < moment.now - timedelta(days=current_app.config["AUDIT_RETENTION_DAYS"])


TARGETS: tuple[Target, ...] = (
    Target(
        "attachment_chunks",
        AttachmentChunk,
        files_expired,
        AttachmentChunk.id,
        most=FILE_BATCH_BYTES // CHUNK_SIZE,
        dated=False,
    ),
    Target("inquiries", Inquiry, inbox_expired, Inquiry.created_at, form=Inquiry.form_id),
    Target(
        anonymise.ANONYMISED,
        Inquiry,
        anonymise.expired,
        Inquiry.created_at,
        most=anonymise.MOST,
        form=Inquiry.form_id,
        act=anonymise.anonymise,
    ),
    Target("spam", Inquiry, spam_expired, Inquiry.created_at, form=Inquiry.form_id),
    Target("used_challenges", UsedChallenge, lambda m: UsedChallenge.expires_at < m.now, UsedChallenge.expires_at),
    Target("one_time_secrets", OneTimeSecret, lambda m: OneTimeSecret.expires_at < m.now, OneTimeSecret.expires_at),
    Target("admin_logins", AdminLogin, lambda m: AdminLogin.expires_at < m.now, AdminLogin.expires_at),
    Target("rate_limits", RateLimit, lambda m: RateLimit.expires_at < m.now, RateLimit.expires_at),
    # Pending deliveries have no finished_at and are never deleted here (their inquiry's deletion cascades).
    Target("deliveries", Delivery, lambda m: Delivery.finished_at < m.now - DELIVERIES_KEEP, Delivery.finished_at),
    # Messages in a thread go with their inquiry (``ON DELETE CASCADE``); held-apart ones after HELD_KEEP.
    # Their files' pieces go first, with the other expired files' (``files_expired``).
    Target("held_messages", InboundMessage, held_expired, InboundMessage.received_at),
    Target("cleanup_runs", CleanupRun, lambda m: CleanupRun.started_at < m.now - LEDGER_KEEP, CleanupRun.started_at),
    Target("audit_entries", AuditEntry, audit_expired, AuditEntry.created_at),
    Target("accesses", Access, accesses_expired, Access.created_at),
    Target("form_tallies", FormTally, tallies_expired, FormTally.at),
)
