"""A cleanup run in-process: its schedule, what it deletes (targets, batches), the ledger and the log."""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, event, func, select

from app import cleanup, create_app
from app.attachments import store
from app.cleanup import claim, runs, state
from app.config import ConfigurationError
from app.core import db
from app.core.clock import epoch_ms
from app.core.db import get_session
from app.models import (
    DEFAULT_FORM_ID,
    Access,
    Admin,
    AdminLogin,
    Attachment,
    AttachmentChunk,
    AuditEntry,
    CleanupRun,
    Delivery,
    Form,
    FormTally,
    InboundMessage,
    Inquiry,
    OneTimeSecret,
    RateLimit,
    Setting,
    UsedChallenge,
)
from tests.factories import add_file, add_inquiries, aged_inquiries, inquiry
from tests.helpers import query_plan, submit_inquiry

LEDGER = select(CleanupRun).order_by(CleanupRun.id)
INQUIRY_IDS = select(Inquiry.id)


# --- When it is due, and what it claims ----------------------------------------


@pytest.fixture
def small_batches(app_config):
    # Rate-limit windows of a day, so that only inquiries are due in these tests.
    app_config.update(
        CLEANUP_BATCH_SIZE=2,
        CLEANUP_TIME_BUDGET=0,
        CLEANUP_YIELD=0,
        SUBMIT_RATE_LIMITS="10000/86400",
        SUBMIT_GLOBAL_RATE_LIMITS="1000000/86400",
    )


@pytest.mark.usefixtures("small_batches")
def test_the_time_budget_stops_a_run_after_one_batch(app, db_session, clock):
    add_inquiries(db_session, aged_inquiries(clock, [300, 250, 200, 190, 181]))
    with app.app_context():
        run = cleanup.run("test")
    assert (run.status, json.loads(run.deleted)["inquiries"], run.remaining) == ("partial", 2, 3)


@pytest.mark.usefixtures("small_batches")
def test_a_backlog_makes_the_next_claim_due_early(client, db_session, clock, query):
    add_inquiries(db_session, aged_inquiries(clock, [300, 250, 200, 190, 181]))
    submit_inquiry(client)
    assert query.using(cleanup.next_due_at) == clock() + timedelta(seconds=60)
    clock.advance(seconds=59)
    submit_inquiry(client)
    assert len(query(LEDGER)) == 1
    clock.advance(seconds=1)
    submit_inquiry(client)
    clock.advance(seconds=60)
    submit_inquiry(client)
    ledger = query(LEDGER)
    assert [run.status for run in ledger] == ["partial", "partial", "ok"]
    assert [run.remaining for run in ledger] == [3, 1, 0]
    assert len(query(INQUIRY_IDS)) == 4  # the four inquiries just submitted
    assert query.using(cleanup.next_due_at) == clock() + timedelta(hours=1)


def test_the_cutoff_is_fixed_at_the_claim_and_recorded(app, db_session, clock):
    db_session.add(Setting(key="retention_days", value="30"))
    db_session.commit()
    with app.app_context():
        run = cleanup.run("test")
    assert run.retention_days == 30
    assert run.cutoff == clock() - timedelta(days=30)


def test_a_lease_shorter_than_the_time_budget_is_refused_at_startup(app_config):
    with pytest.raises(ConfigurationError, match="CLEANUP_LEASE"):
        create_app({**app_config, "CLEANUP_LEASE": 10, "CLEANUP_TIME_BUDGET": 10})


# --- What it deletes -----------------------------------------------------------


def add_expiring_rows(session, clock) -> None:
    """One expired and one live row in each expiring table, and ledger rows old and new."""
    now = clock()
    admin = Admin(name="Grace", user_handle=os.urandom(64))
    session.add(admin)
    session.flush()
    for index, expires in enumerate([now - timedelta(seconds=1), now + timedelta(seconds=1)]):
        session.add(OneTimeSecret(identifier=f"challenge-{index}", value="x", expires_at=expires, created_at=now))
        session.add(AdminLogin(token_hash=f"{index:064d}", admin_id=admin.id, expires_at=expires))
        session.add(RateLimit(key=f"submit:60:client:{index}", count=1, expires_at=expires))
        session.add(UsedChallenge(signature=f"{index:064x}", expires_at=expires))
    for index, age in enumerate([timedelta(days=31), timedelta(days=29)]):  # finished notifications: 30 days
        session.add(
            Delivery(
                channel="webhook",
                kind="test",
                status="done",
                next_attempt_at=now - age,
                idempotency_key=f"msg_{index}",
                created_at=now - age,
                finished_at=now - age,
            )
        )
    session.add(
        Delivery(
            channel="email",
            kind="test",
            status="pending",
            next_attempt_at=now - timedelta(days=40),
            idempotency_key="msg_pending",
            created_at=now - timedelta(days=40),
        )
    )
    for days in (366, 364):  # who opened what: kept as the audit log is (365 days in these tests)
        session.add(
            Access(
                admin_id=admin.id,
                admin_name="Grace",
                kind="opened",
                inquiry_id=days,
                created_at=now - timedelta(days=days),
            )
        )
    for days in (366, 364):  # the per-form counts of removed inquiries: kept as the audit log is
        session.add(FormTally(form_id=1, kind="deleted", count=2, at=now - timedelta(days=days)))
    for age in (timedelta(days=91), timedelta(days=89)):
        session.add(
            CleanupRun(
                trigger="old",
                started_at=now - age,
                finished_at=now - age,
                cutoff=now - age,
                retention_days=180,
                status="ok",
            )
        )
    session.commit()


def test_every_target_loses_exactly_its_expired_rows(app, db_session, clock):
    add_expiring_rows(db_session, clock)
    inquiry_ids = add_inquiries(db_session, aged_inquiries(clock, [181, 179]))
    inquiry_ids += add_inquiries(db_session, aged_inquiries(clock, [400], legal_hold=True))
    inquiry_ids += add_inquiries(db_session, aged_inquiries(clock, [31, 29], status="spam"))  # spam: 30 days
    piece = store.CHUNK_SIZE
    for inquiry_id in inquiry_ids:  # the expired ones' files: 3 pieces, then 3 pieces
        add_file(db_session, inquiry_id, b"x" * (2 * piece + 1))
    for days in (31, 29):  # e-mails held apart: kept 30 days
        db_session.add(
            InboundMessage(
                state="held",
                kind="message",
                sender="x@example.com",
                sender_name="",
                subject="",
                body="",
                files_refused=0,
                received_at=clock() - timedelta(days=days),
            )
        )
    db_session.commit()
    with app.app_context():
        run = cleanup.run("test")
    assert json.loads(run.deleted) == {
        "attachment_chunks": 6,
        "inquiries": 1,
        "anonymised": 0,  # no form anonymises
        "spam": 1,
        "used_challenges": 1,
        "one_time_secrets": 1,
        "admin_logins": 1,
        "rate_limits": 1,
        "deliveries": 1,
        "held_messages": 1,
        "cleanup_runs": 1,
        "audit_entries": 0,
        "accesses": 1,
        "form_tallies": 1,
    }
    db_session.rollback()
    kept = select(Attachment.inquiry_id).join(AttachmentChunk, AttachmentChunk.attachment_id == Attachment.id)
    assert sorted(db_session.scalars(kept)) == sorted([inquiry_ids[i] for i in (1, 2, 4) for _piece in range(3)])
    db_session.rollback()
    for model in (UsedChallenge, OneTimeSecret, AdminLogin, RateLimit):
        assert db_session.scalar(select(func.min(model.expires_at))) > clock()
    assert db_session.scalar(select(func.count()).select_from(CleanupRun)) == 2  # the 89-day one and this run
    assert db_session.scalar(select(func.count()).select_from(Inquiry)) == 3
    assert db_session.scalar(select(func.count()).select_from(Delivery)) == 2  # the 29-day one; pending kept
    assert list(db_session.scalars(select(Access.inquiry_id))) == [364]


@pytest.fixture
def batches_of_three(app_config):
    app_config.update(CLEANUP_BATCH_SIZE=3, CLEANUP_YIELD=0)


@pytest.mark.usefixtures("batches_of_three")
def test_batches_get_through_rows_sharing_one_timestamp(app, db_session, clock, query):
    add_inquiries(db_session, aged_inquiries(clock, [200] * 7 + [190] * 2 + [181]))
    add_inquiries(db_session, aged_inquiries(clock, [200], legal_hold=True))
    with app.app_context():
        run = cleanup.run("test")
    assert (run.status, json.loads(run.deleted)["inquiries"]) == ("ok", 10)
    assert len(query(INQUIRY_IDS)) == 1


def test_files_are_deleted_a_few_megabytes_a_batch_before_their_inquiries(app, db_session, clock, db_kind):
    [expired] = add_inquiries(db_session, aged_inquiries(clock, [200]))
    add_file(db_session, expired, b"y" * (store.CHUNK_SIZE * 101))  # 101 pieces: 25 MB
    statements: list[tuple[str, int]] = []

    def deleting(_conn, cursor, statement, _parameters, _context, _executemany):
        if statement.lstrip().upper().startswith("DELETE"):
            statements.append((statement.split()[2], cursor.rowcount))

    engine = db.engine_of(app)
    event.listen(engine, "after_cursor_execute", deleting)
    try:
        with app.app_context():
            run = cleanup.run("test")
    finally:
        event.remove(engine, "after_cursor_execute", deleting)
    assert json.loads(run.deleted)["attachment_chunks"] == 101 and json.loads(run.deleted)["inquiries"] == 1
    pieces = [count for table, count in statements if table == "attachment_chunks"]
    assert pieces == [32, 32, 32, 5]  # FILE_BATCH_BYTES (8 MB) a batch, whatever the database's batch size
    db_session.rollback()
    assert db_session.scalar(select(func.count()).select_from(AttachmentChunk)) == 0


def test_dry_run_counts_equal_what_the_run_deletes(app, db_session, clock):
    add_expiring_rows(db_session, clock)
    rows = aged_inquiries(clock, [500, 181, 179, 10])
    add_inquiries(db_session, rows)
    add_inquiries(db_session, aged_inquiries(clock, [900], legal_hold=True))
    with app.app_context():
        preview = cleanup.dry_run()
        run = cleanup.run("test")
    assert preview["inquiries"] == (2, rows[0]["created_at"])
    assert {name: count for name, (count, _oldest) in preview.items()} == json.loads(run.deleted)


def test_an_invalid_stored_retention_falls_back_to_180_days_with_a_warning(app, db_session, clock, caplog):
    db_session.add(Setting(key="retention_days", value="forever"))
    db_session.commit()
    with caplog.at_level(logging.WARNING, logger="app.cleanup"), app.app_context():
        run = cleanup.run("test")
    assert run.retention_days == 180
    assert "invalid stored retention_days" in caplog.text


def test_default_batch_size_and_pause_follow_the_database(app, db_kind):
    with app.app_context():
        limits = runs.batch_limits()
    expected = {"sqlite": (100, 0.0), "postgresql": (50_000, 0.0)}[db_kind]
    assert (limits.batch_size, limits.yield_ratio) == expected


# --- The ledger and the log ----------------------------------------------------


def test_one_structured_log_line_per_run_without_personal_data(app, db_session, clock, caplog):
    personal = {"name": "Ada Secret", "email": "ada.secret@example.com", "message": "private words"}
    add_inquiries(db_session, aged_inquiries(clock, [200], **personal))
    with caplog.at_level(logging.INFO, logger="app.cleanup"), app.app_context():
        run = cleanup.run("test")
    [line] = [record.getMessage() for record in caplog.records if record.getMessage().startswith("cleanup_run ")]
    fields = json.loads(line.removeprefix("cleanup_run "))
    assert fields == cleanup.as_dict(run)
    assert fields["status"] == "ok" and fields["deleted"]["inquiries"] == 1
    assert "ada" not in caplog.text.lower() and "private words" not in caplog.text


def test_a_crashed_run_left_running_does_not_block_the_next_due_run(app, clock, query):
    with app.app_context():
        cleanup.run("test")
        # A run whose process died: its claim and ledger row stay "running".
        with db.transaction() as session:
            clock.advance(hours=1)
            assert claim.take(session, epoch_ms(clock()), 3_600_000, 300_000)
            session.add(CleanupRun(trigger="died", started_at=clock(), cutoff=clock(), retention_days=180))
        assert cleanup.run("test", force=True) is None  # never overlaps a live lease
        clock.advance(hours=1)
        later = cleanup.run("test")
    assert later.status == "ok"
    assert [run.status for run in query(LEDGER)] == ["ok", "abandoned", "ok"]  # closed by the claim that took over


# --- The property: whatever the rows, retention and clock ---------------------------


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(st.tuples(st.integers(-3, 3), st.integers(0, 4000), st.booleans()), max_size=25),
    retention=st.one_of(st.integers(-5, 4000).map(str), st.sampled_from(["", "abc", "1.5"]), st.none()),
    offset_days=st.integers(0, 3650),
    batch_size=st.integers(1, 7),
    partial=st.booleans(),
)
def test_property_only_expired_unheld_rows_are_ever_deleted(
    app, clock, rows, retention, offset_days, batch_size, partial
):
    with app.app_context():
        session = _fresh_state(app)
        clock.moment = datetime(2020, 1, 1, tzinfo=UTC) + timedelta(days=offset_days)
        days = int(retention) if retention and retention.lstrip("-").isdigit() and 1 <= int(retention) <= 3650 else 180
        cutoff = clock() - timedelta(days=days)
        if retention is not None:
            session.add(Setting(key="retention_days", value=retention))
        session.commit()
        # Ages are scattered around the cutoff, to the second, including exactly at it.
        add_inquiries(
            session,
            [
                inquiry(
                    clock,
                    created_at=cutoff + timedelta(seconds=seconds, days=extra_days if seconds >= 0 else -extra_days),
                    legal_hold=hold,
                )
                for seconds, extra_days, hold in rows
            ],
        )
        columns = select(Inquiry.id, Inquiry.created_at, Inquiry.legal_hold)
        before = {id_: (created, held) for id_, created, held in session.execute(columns)}
        session.rollback()  # no snapshot left open: the run's truncating WAL checkpoint would wait for it
        app.config.update(CLEANUP_BATCH_SIZE=batch_size, CLEANUP_TIME_BUDGET=0 if partial else 60, CLEANUP_YIELD=0)
        run = cleanup.run("property")
        session.rollback()
        after = set(session.scalars(INQUIRY_IDS))

    deleted = set(before) - after
    assert run.cutoff == cutoff
    expired = {i for i, (created, held) in before.items() if created < cutoff and not held}
    assert deleted <= expired
    assert len(deleted) == json.loads(run.deleted)["inquiries"]
    still_expired = expired & after
    if run.status == "ok":
        assert still_expired == set()
    else:
        assert run.status == "partial" and run.remaining == len(still_expired) > 0


def _fresh_state(app):
    """Empty the tables a run reads or writes, and forget the schedule: a fresh state per example."""
    session = get_session()
    for model in (Inquiry, Setting, CleanupRun, FormTally):
        session.execute(delete(model))
    session.commit()
    state.of(app).next_due_ms = 0
    return session


@pytest.mark.parametrize(
    "target_name, index", [("deliveries", "ix_deliveries_finished_at"), ("used_challenges", "pk_used_challenges")]
)
def test_the_oldest_expired_rows_of_the_busiest_tables_are_found_by_an_index(db_session, target_name, index):
    """The two tables every submission writes keep only the indexes their readers need (migration 0007):
    the cleanup's oldest-first choice is still an index's, not a scan's (``finished_at`` is indexed only
    where set; ``used_challenges`` is keyed by expiry first)."""
    from app.cleanup.targets import TARGETS

    [target] = [each for each in TARGETS if each.name == target_name]
    statement = (
        select(target.model).where(target.age < datetime(2026, 1, 1, tzinfo=UTC)).order_by(target.age).limit(500)
    )
    plan = query_plan(db_session, statement)
    if db_session.get_bind().dialect.name == "sqlite":
        assert "SCAN" not in plan and ("PRIMARY KEY" in plan or index in plan), plan
    else:
        assert index in plan, plan


def test_the_audit_log_is_kept_a_year_and_forgets_the_text_of_deleted_inquiries(app, db_session, clock, query):
    [kept, expired] = add_inquiries(db_session, [inquiry(clock, days_old=10), inquiry(clock, days_old=200)])
    db_session.add_all(
        [
            AuditEntry(
                admin_name="Ada",
                action="hold_placed",
                count=1,
                detail=f"inquiry #{expired}: Claim 42 (Smith)",
                created_at=clock() - timedelta(days=30),
            ),
            AuditEntry(
                admin_name="Ada",
                action="hold_placed",
                count=1,
                detail=f"inquiry #{kept}: Claim 7",
                created_at=clock() - timedelta(days=5),
            ),
            AuditEntry(
                admin_name="Ada", action="deleted", count=3, detail="", created_at=clock() - timedelta(days=400)
            ),
        ]
    )
    db_session.commit()
    with app.app_context():
        run = cleanup.run("test")
    assert json.loads(run.deleted)["audit_entries"] == 1  # the one older than 365 days
    assert set(query(select(AuditEntry.detail))) == {f"inquiry #{expired}: (deleted)", f"inquiry #{kept}: Claim 7"}


def test_the_ledger_records_when_a_run_had_forgotten_what_it_deleted(app, db_session, clock, query):
    """The purge of the index and the WAL's checkpoint come after the run's closing row (its claim already
    released), and can take as long as its batches: ``forgotten_at`` records when they had ended."""
    add_inquiries(db_session, aged_inquiries(clock, [200] * 3, legal_hold=False))
    forgetting = []
    app.config["CLEANUP_BATCH_SIZE"] = 2
    with app.app_context():
        run = cleanup.run("test", should_stop=lambda: forgetting.append(query(LEDGER)[-1].forgotten_at) or False)
    [stored] = query(LEDGER)
    assert stored.finished_at is not None and stored.forgotten_at is not None
    assert stored.started_at <= stored.finished_at <= stored.forgotten_at and run.forgotten_at == stored.forgotten_at
    assert forgetting and set(forgetting) == {None}  # not yet, while the run deleted and forgot
    assert cleanup.as_dict(stored)["forgotten_at"] == stored.forgotten_at.isoformat()


def test_each_batch_adds_its_inquiries_per_form_to_its_runs_tallies_in_one_statement(app, db_session, clock):
    contact = db_session.get_one(Form, DEFAULT_FORM_ID)
    other = Form(slug="other", title={"en": "Other"}, fields=contact.fields, email_field=contact.email_field)
    db_session.add(other)
    db_session.commit()
    add_inquiries(db_session, aged_inquiries(clock, [181 + n / 10 for n in range(7)]))
    add_inquiries(db_session, aged_inquiries(clock, [190, 191, 192], form_id=other.id))
    add_inquiries(db_session, aged_inquiries(clock, [31, 32], status="spam", form_id=other.id))
    add_inquiries(db_session, aged_inquiries(clock, [179]))  # not expired
    app.config["CLEANUP_BATCH_SIZE"] = 3
    inserts: list[str] = []

    def seen(_conn, _cursor, statement, *_rest) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO FORM_TALLIES"):
            inserts.append(statement)

    with app.app_context():
        engine = db.get_engine()
        event.listen(engine, "before_cursor_execute", seen)
        try:
            run = cleanup.run("test")
        finally:
            event.remove(engine, "before_cursor_execute", seen)
    counted = select(FormTally.form_id, FormTally.kind, FormTally.count, FormTally.run_id, FormTally.at)
    assert sorted(db_session.execute(counted).all()) == sorted(
        [
            (DEFAULT_FORM_ID, "inquiries", 7, run.id, run.started_at),
            (other.id, "inquiries", 3, run.id, run.started_at),
            (other.id, "spam", 2, run.id, run.started_at),
        ]
    )
    # Batches of 3 oldest first: the inbox's 10 rows in 4 batches, the spam's 2 in one; one upsert each.
    assert len(inserts) == 5
