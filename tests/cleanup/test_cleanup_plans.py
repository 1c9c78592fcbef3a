"""Every target's candidate query, as the database plans it: the oldest expired rows found by an index.

A batch deletes the ``n`` oldest expired rows of a target and then asks
where the next one starts; on a large table either query planned as a read
of every row (or of every expired row, then sorted) would hold SQLite's
write lock for as long as that read, once per batch, growing with the
backlog. So for each target the batch's ``DELETE`` (its first batch and a
resumed one) and the next start's ``min()`` are planned here, on both
databases (``EXPLAIN QUERY PLAN`` on SQLite; ``EXPLAIN`` with sequential
scans off on PostgreSQL, whose tiny test tables would otherwise be scanned
whatever the indexes), and what decides their cost is asserted: the
target's table reached through an index or its primary key in the batch's
order, never scanned whole nor sorted.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import delete, func, select, text
from sqlalchemy.orm import Session

from app.cleanup import batches, plans
from app.cleanup.targets import TARGETS, held_expired
from app.core import db
from app.inquiries import retention
from app.models import Attachment, AttachmentChunk, Form, InboundMessage, Inquiry
from tests.helpers import query_plan

BY_NAME = {target.name: target for target in TARGETS}
# Where each target's rows are found, oldest first: the index (or key) the plans must use. On PostgreSQL the
# inquiries' ``min()`` may take the per-form index (its range on status and age, the form a filter in it). The
# index of the rows not anonymised (migration 0024) serves them as well: the same columns, fewer rows.
INQUIRY_INDEXES = (
    "ix_submissions_not_anonymised",
    "ix_submissions_status_created_at_id",
    "ix_submissions_status_form_id_created_at_id",
)
INDEXES = {
    "inquiries": INQUIRY_INDEXES,
    "spam": INQUIRY_INDEXES,
    "used_challenges": ("pk_used_challenges", "USING PRIMARY KEY (expires_at"),
    "one_time_secrets": ("ix_one_time_secrets_expires_at",),
    "admin_logins": ("ix_admin_logins_expires_at",),
    "rate_limits": ("ix_rate_limits_expires_at",),
    "deliveries": ("ix_deliveries_finished_at",),
    "cleanup_runs": ("ix_cleanup_runs_started_at",),
    "audit_entries": ("ix_audit_entries_created_at",),
}


def _statements(app, target, moment, start):
    """The batch's DELETE (from ``start``, or the first batch's with None) and the next start's query."""
    with app.app_context():
        engine = db.get_engine()
        with engine.connect() as connection:
            key = plans.batch_key(connection, target.age)
            condition = target.where(moment)
            if start is not None:
                condition = condition & (key >= start)
            chosen = plans.oldest_rows(connection, target.model, condition, target.age, 500)
            return delete(target.model).where(chosen), select(func.min(key)).where(condition)


def _moment(
    app, clock, forms: int = 0, clocks: tuple[str, ...] = ("received",), expiries: tuple[str, ...] = ("delete",)
) -> batches.Moment:
    """Cutoffs for ``forms`` forms of their own period, their retention clocks taken in turn from ``clocks``, what
    their expiry does from ``expiries``."""
    now = clock()
    own = {}
    if forms:
        with app.app_context():
            session = db.get_session()
            for number in range(forms):
                form = Form(
                    slug=f"form-{number}",
                    title={"en": "Form"},
                    fields=[],
                    retention_days=100 + number,
                    spam_retention_days=10 + number,
                    retention_clock=clocks[number % len(clocks)],
                    expiry_action=expiries[number % len(expiries)],
                )
                session.add(form)
                session.flush()
                own[form.id] = retention.cutoff_for(now, 100 + number)
            session.commit()
            cutoffs = retention.cutoffs_at(session, now, retention.INBOX, 180)
    else:
        cutoffs = retention.Cutoffs(retention.cutoff_for(now, 180), own)
    return batches.Moment(now=now, cutoff=cutoffs)


def _plans(app, session: Session, target, moment) -> list[str]:
    """The plans of the first batch, a resumed one, and of each one's next start."""
    if session.get_bind().dialect.name == "postgresql":
        # Sorting the candidates would read every expired row before the limit: ask for an ordered index path.
        session.execute(text("SET enable_sort = off"))
        session.execute(text("SET enable_bitmapscan = off"))
    sqlite = session.get_bind().dialect.name == "sqlite"
    start = 7 if not target.dated else "2026-01-01 00:00:00.000000" if sqlite else moment.now - timedelta(days=400)
    statements = [*_statements(app, target, moment, None), *_statements(app, target, moment, start)]
    return [query_plan(session, statement) for statement in statements]


def _read_by_index(plan: str, table: str, indexes: tuple[str, ...]) -> bool:
    """Whether ``plan`` finds ``table``'s rows through one of ``indexes`` in its order: no scan of the table,
    no sort."""
    by_index = any(index in plan for index in indexes)
    if "SEARCH" in plan or "SCAN" in plan:  # SQLite
        return by_index and f"SCAN {table}" not in plan and "TEMP B-TREE" not in plan
    return by_index and "Seq Scan" not in plan and "Sort" not in plan


def _pieces_by_their_own_inquiry(plan: str, owners: tuple[str, ...] = ("submissions",)) -> bool:
    """Whether each piece is checked by looking up its file and its file's owners (its inquiry; its held
    e-mail) by primary key, and no expired inquiry or held e-mail is read otherwise (an index range over them
    reads them all)."""
    unread = all(f"ix_{owner}" not in plan for owner in owners)
    if "SEARCH" in plan or "SCAN" in plan:  # SQLite
        looked_up = all(
            f"SEARCH {table} USING INTEGER PRIMARY KEY (rowid=?)" in plan for table in ("attachments", *owners)
        )
        return looked_up and "CORRELATED" in plan and unread and "TEMP B-TREE" not in plan
    looked_up = all(f"Index Scan using pk_{table}" in plan for table in ("attachments", *owners))
    return looked_up and "attachment_id)" in plan and unread and "Seq Scan" not in plan


@pytest.mark.parametrize("name", sorted(INDEXES))
def test_each_targets_batches_find_the_oldest_expired_rows_by_an_index(app, db_session, clock, name):
    target = BY_NAME[name]
    for plan in _plans(app, db_session, target, _moment(app, clock)):
        assert _read_by_index(plan, target.model.__tablename__, INDEXES[name]), plan


@pytest.mark.parametrize("name", ["inquiries", "spam"])
def test_inquiries_over_twenty_forms_with_their_own_retentions_are_found_by_the_same_index(
    app, db_session, clock, name
):
    """Twenty cutoffs, one per form: the newest bounds the index range, each form's is a filter in it."""
    target = BY_NAME[name]
    for plan in _plans(app, db_session, target, _moment(app, clock, forms=20)):
        assert _read_by_index(plan, "submissions", INDEXES[name]), plan


def test_forms_counting_from_the_last_message_or_from_closing_are_found_by_the_same_index(app, db_session, clock):
    """The other clocks test their column on the rows of the ``created_at`` range: never older than receipt."""
    target = BY_NAME["inquiries"]
    moment = _moment(app, clock, forms=6, clocks=("received", "last_message", "closed"))
    assert len(moment.cutoff.from_last_message) == len(moment.cutoff.from_closing) == 2
    for plan in _plans(app, db_session, target, moment):
        assert _read_by_index(plan, "submissions", INDEXES["inquiries"]), plan


def test_file_pieces_are_each_checked_by_their_own_inquiry_or_held_e_mail(app, db_session, clock):
    for plan in _plans(app, db_session, BY_NAME["attachment_chunks"], _moment(app, clock)):
        assert _pieces_by_their_own_inquiry(plan, ("submissions", "inbound_messages")), plan
        assert "attachment_chunks" in plan


@pytest.mark.parametrize("db_kind", ["postgresql"])
def test_a_held_e_mails_state_tested_per_piece_would_be_caught(app, db_session, clock, db_kind):
    """Testing ``state = 'held'`` beside the age, PostgreSQL read every held e-mail by the index on ``state``
    for each piece: the check above refuses that plan."""
    moment = _moment(app, clock)
    with app.app_context():
        own_file = (
            select(Attachment.held_message_id)
            .where(Attachment.id == AttachmentChunk.attachment_id)
            .correlate(AttachmentChunk)
            .scalar_subquery()
        )
        own_message = select(InboundMessage.id).where(InboundMessage.id == own_file, held_expired(moment))
        statement = (
            select(AttachmentChunk.id)
            .where(own_message.scalar_subquery().is_not(None))
            .order_by(AttachmentChunk.id)
            .limit(32)
        )
    assert not _pieces_by_their_own_inquiry(query_plan(db_session, statement), ("inbound_messages",))


def test_the_pieces_of_the_files_of_all_expired_inquiries_as_a_list_would_be_caught(app, db_session, clock):
    """The earlier form, ``attachment_id IN (the files of expired inquiries)``, read every expired inquiry
    under the write lock: the check above refuses its plan on both databases."""
    moment = _moment(app, clock)
    with app.app_context():
        expired = retention.expired_in(retention.INBOX, moment.cutoff)
        of_expired = select(Attachment.id).join(Inquiry, Inquiry.id == Attachment.inquiry_id).where(expired)
        statement = (
            select(AttachmentChunk.id)
            .where(AttachmentChunk.attachment_id.in_(of_expired))
            .order_by(AttachmentChunk.id)
            .limit(32)
        )
    assert not _pieces_by_their_own_inquiry(query_plan(db_session, statement))


def test_inquiries_to_anonymise_are_found_by_the_index_of_rows_not_anonymised(app, db_session, clock):
    """Anonymised rows stay past their retention, at the old end of the range: the batches of the forms that
    anonymise follow the index that holds only the rows not anonymised, so they never read those again."""
    moment = _moment(app, clock, forms=6, clocks=("received", "last_message"), expiries=("anonymise", "delete"))
    assert len(moment.cutoff.anonymising) == 3
    for name in ("anonymised", "inquiries"):
        for plan in _plans(app, db_session, BY_NAME[name], moment):
            assert _read_by_index(plan, "submissions", ("ix_submissions_not_anonymised",)), (name, plan)


def test_a_candidate_query_without_the_test_on_anonymised_at_would_be_caught(app, db_session, clock):
    """Asked without ``anonymised_at IS NULL``, neither database may take that index: the check above fails."""
    moment = _moment(app, clock, forms=2, expiries=("anonymise",))
    if db_session.get_bind().dialect.name == "postgresql":
        db_session.execute(text("SET enable_sort = off"))
    with app.app_context():
        cutoffs = moment.cutoff
        past = retention.Cutoffs(cutoffs.default, cutoffs.forms)
        condition = (Inquiry.status == "inbox") & (Inquiry.legal_hold.is_(False)) & retention.by_expiry(cutoffs, True)
        condition = condition & (Inquiry.created_at < past.newest())
        statement = select(Inquiry.id).where(condition).order_by(Inquiry.created_at).limit(500)
    plan = query_plan(db_session, statement)
    assert not _read_by_index(plan, "submissions", ("ix_submissions_not_anonymised",)), plan
