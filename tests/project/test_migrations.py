"""Alembic makes the schema, and the models agree with it on both databases."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.orm import Session

from app.core import db
from app.core.db import make_engine
from app.core.migrate import alembic_config, current_revision, downgrade, head_revision, upgrade
from app.inquiries import search
from app.inquiries.search import is_search_index
from app.models import Admin, AuditEntry, Base, CleanupRun, Form, Inquiry, InquiryView, UTCDateTime
from tests.conftest import new_database_url

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _made_by_models(object_, name, type_, reflected, compare_to) -> bool:
    """The search index is made by migration 0004 alone (``app.inquiries.search``): the models do not describe it."""
    return not is_search_index(name)


COMPARE = {"compare_type": True, "include_object": _made_by_models}


def test_models_and_migrations_agree(database_url):
    engine = make_engine(database_url)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts=COMPARE)
        assert compare_metadata(context, Base.metadata) == []
    assert current_revision(engine) == head_revision()
    engine.dispose()


def test_cli_db_upgrade_migrates_an_empty_database(app_config, make_app, tmp_path):
    config = dict(app_config, DATABASE_URL=f"sqlite:///{tmp_path / 'fresh.db'}")
    app = make_app(config)
    result = app.test_cli_runner().invoke(args=["db-upgrade"])
    assert result.exit_code == 0, result.output
    assert current_revision(db.engine_of(app)) == head_revision()


def test_the_spam_migration_downgrades_and_upgrades_keeping_every_inquiry(database_url):
    engine = make_engine(database_url)
    rows = sa.select(Inquiry.__table__.c.name).order_by(Inquiry.__table__.c.id)
    with engine.begin() as connection:
        connection.execute(
            sa.insert(Inquiry.__table__),
            [
                {"name": "Ina", "email": "i@example.com", "message": "m", "created_at": NOW, "status": "inbox"},
                {"name": "Sam", "email": "s@example.com", "message": "m", "created_at": NOW, "status": "spam"},
            ],
        )
    _downgrade(engine, "0001")
    assert current_revision(engine) == "0001"
    columns = {column["name"] for column in sa.inspect(engine).get_columns("submissions")}
    assert "status" not in columns and "used_challenges" not in sa.inspect(engine).get_table_names()
    with engine.connect() as connection:
        assert [name for (name,) in connection.execute(sa.text("SELECT name FROM submissions ORDER BY id"))] == [
            "Ina",
            "Sam",
        ]  # spam is kept, and shows in the inbox again (documented in 0002)
    upgrade(engine)
    with engine.connect() as connection:
        assert list(connection.execute(sa.select(Inquiry.__table__.c.status).order_by(Inquiry.__table__.c.id))) == [
            ("inbox",),
            ("inbox",),
        ]
        assert [name for (name,) in connection.execute(rows)] == ["Ina", "Sam"]
        context = MigrationContext.configure(connection, opts=COMPARE)
        assert compare_metadata(context, Base.metadata) == []
    engine.dispose()


def _downgrade(engine, revision: str) -> None:
    downgrade(engine, revision)


def test_the_lean_writes_migration_keeps_every_delivery_and_used_challenge_both_ways(database_url):
    from app.models import Delivery, UsedChallenge

    engine = make_engine(database_url)
    used = [{"signature": f"{index:064x}", "expires_at": NOW} for index in range(3)]
    used_rows = sa.select(UsedChallenge.__table__.c.signature).order_by(UsedChallenge.__table__.c.signature)
    with engine.begin() as connection:
        connection.execute(sa.insert(UsedChallenge.__table__), used)
        [inquiry_id] = connection.execute(
            sa.insert(Inquiry.__table__).returning(Inquiry.__table__.c.id),
            [{"name": "Ina", "email": "i@example.com", "message": "m", "created_at": NOW, "status": "inbox"}],
        ).scalars()
        connection.execute(
            sa.insert(Delivery.__table__),
            [
                {
                    "inquiry_id": inquiry_id,
                    "channel": channel,
                    "kind": "inquiry",
                    "status": status,
                    "attempts": 1,
                    "next_attempt_at": NOW,
                    "idempotency_key": f"msg_{channel}",
                    "created_at": NOW,
                    "finished_at": NOW if status == "done" else None,
                }
                for channel, status in (("email", "done"), ("webhook", "pending"))
            ],
        )
    outbox = Delivery.__table__.to_metadata(sa.MetaData(), name="outbox")  # its name before 0008
    _downgrade(engine, "0006")
    assert "uq_outbox_idempotency_key" in {each["name"] for each in sa.inspect(engine).get_unique_constraints("outbox")}
    assert sa.inspect(engine).get_pk_constraint("used_challenges")["constrained_columns"] == ["signature"]
    with engine.connect() as connection:
        assert list(connection.execute(_keys(outbox))) == [("msg_email", "done"), ("msg_webhook", "pending")]
        assert [row.signature for row in connection.execute(used_rows)] == [row["signature"] for row in used]
    upgrade(engine)
    assert sa.inspect(engine).get_unique_constraints("deliveries") == []
    assert sa.inspect(engine).get_pk_constraint("used_challenges")["constrained_columns"] == ["expires_at", "signature"]
    with engine.connect() as connection:
        assert list(connection.execute(_keys(Delivery.__table__))) == [
            ("msg_email", "done"),
            ("msg_webhook", "pending"),
        ]
        assert [row.signature for row in connection.execute(used_rows)] == [row["signature"] for row in used]
        if engine.dialect.name == "sqlite":
            assert "WITHOUT ROWID" in connection.scalar(
                sa.text("SELECT sql FROM sqlite_master WHERE name = 'used_challenges'")
            )
        context = MigrationContext.configure(connection, opts=COMPARE)
        assert compare_metadata(context, Base.metadata) == []
    with engine.begin() as connection:
        connection.execute(sa.delete(Inquiry.__table__))  # the foreign key still cascades
        assert connection.scalar(sa.select(sa.func.count()).select_from(Delivery.__table__)) == 0
    engine.dispose()


def _keys(deliveries: sa.Table) -> sa.Select:
    return sa.select(deliveries.c.idempotency_key, deliveries.c.status).order_by(deliveries.c.id)


RENAMED = {
    "prune_runs": "cleanup_runs",
    "verification": "one_time_secrets",
    "session": "admin_logins",
    "audit_log": "audit_entries",
    "outbox": "deliveries",
}


def test_the_table_names_migration_renames_both_ways_keeping_rows_and_ids(database_url):
    engine = make_engine(database_url)
    with engine.begin() as connection:
        connection.execute(
            sa.insert(AuditEntry.__table__),
            [{"admin_name": "ada", "action": "deleted", "count": 1, "detail": "", "created_at": NOW}],
        )
        connection.execute(
            sa.insert(CleanupRun.__table__),
            [
                {
                    "trigger": "cli",
                    "started_at": NOW,
                    "cutoff": NOW,
                    "retention_days": 180,
                    "status": "done",
                    "deleted": "{}",
                    "remaining": 0,
                }
            ],
        )
    _downgrade(engine, "0007")
    tables = set(sa.inspect(engine).get_table_names())
    assert set(RENAMED) <= tables and not set(RENAMED.values()) & tables
    with engine.connect() as connection:
        assert connection.scalar(sa.text("SELECT admin_name FROM audit_log")) == "ada"
        assert connection.scalar(sa.text("SELECT trigger FROM prune_runs")) == "cli"
    upgrade(engine)
    tables = set(sa.inspect(engine).get_table_names())
    assert set(RENAMED.values()) <= tables and not set(RENAMED) & tables
    with engine.begin() as connection:
        context = MigrationContext.configure(connection, opts=COMPARE)
        assert compare_metadata(context, Base.metadata) == []
        [new_id] = connection.execute(
            sa.insert(AuditEntry.__table__).returning(AuditEntry.__table__.c.id),
            [{"admin_name": "bo", "action": "deleted", "count": 1, "detail": "", "created_at": NOW}],
        ).scalars()
        assert connection.scalar(sa.select(sa.func.count()).select_from(AuditEntry.__table__)) == 2
        # PostgreSQL's renamed sequence goes on where it was.
        assert new_id == 1 + connection.scalar(sa.select(sa.func.min(AuditEntry.__table__.c.id)))
        connection.execute(sa.delete(AuditEntry.__table__))
        connection.execute(sa.delete(CleanupRun.__table__))
    engine.dispose()


def test_the_forms_migration_attaches_every_inquiry_to_contact_and_downgrades_keeping_them(database_url):
    engine = make_engine(database_url)
    _downgrade(engine, "0008")
    assert "forms" not in sa.inspect(engine).get_table_names()
    with engine.begin() as connection:
        connection.execute(
            sa.text(
                "INSERT INTO submissions (name, email, message, created_at, status, legal_hold) "
                "VALUES ('Olga', 'o@example.com', 'Before forms', :now, 'inbox', false)"
            ),
            {"now": NOW},
        )
    upgrade(engine)
    with engine.connect() as connection:
        assert connection.execute(sa.select(Inquiry.__table__.c.form_id, Inquiry.__table__.c.answers)).all() == [
            (1, None)
        ]
        assert connection.scalar(sa.text("SELECT slug FROM forms WHERE id = 1")) == "contact"
    _downgrade(engine, "0008")
    with engine.connect() as connection:
        assert connection.scalar(sa.text("SELECT message FROM submissions")) == "Before forms"
    upgrade(engine)
    with engine.begin() as connection:
        connection.execute(sa.delete(Inquiry.__table__))
    engine.dispose()


def test_the_email_key_migration_fills_every_stored_address_folded_in_python(database_url):
    engine = make_engine(database_url)
    _downgrade(engine, "0010")
    with engine.begin() as connection:
        connection.execute(
            sa.text(
                "INSERT INTO submissions (name, email, message, created_at, status, legal_hold, form_id) "
                "VALUES ('Ärger', 'ÄRGER@example.com', 'm', :now, 'inbox', false, 1), "
                "('Nobody', '', 'm', :now, 'inbox', false, 1)"
            ),
            {"now": NOW},
        )
    upgrade(engine)
    with engine.connect() as connection:
        keys = connection.execute(sa.text("SELECT email_key FROM submissions ORDER BY id")).scalars().all()
    assert keys == ["ärger@example.com", None]
    with engine.begin() as connection:
        connection.execute(sa.delete(Inquiry.__table__))
    engine.dispose()


def test_the_inquiry_views_migration_keeps_every_read_mark_for_every_admin_and_gives_it_back(database_url):
    engine = make_engine(database_url)
    _downgrade(engine, "0013")
    later = datetime(2026, 6, 2, tzinfo=UTC)
    with engine.begin() as connection:
        connection.execute(
            sa.text(
                "INSERT INTO admins (id, name, user_handle, created_at) "
                "VALUES (1, 'Ada', :a, :now), (2, 'Bo', :b, :now)"
            ),
            {"a": b"a" * 64, "b": b"b" * 64, "now": NOW},
        )
        connection.execute(
            sa.text(
                "INSERT INTO submissions (id, name, email, message, created_at, status, legal_hold, form_id, read_at) "
                "VALUES (1, 'Read', 'r@example.com', 'zebracorn read', :now, 'inbox', false, 1, :later), "
                "(2, 'Unread', 'u@example.com', 'zebracorn unread', :now, 'inbox', false, 1, NULL)"
            ),
            {"now": NOW, "later": later},
        )
    upgrade(engine)
    views = sa.select(InquiryView.__table__).order_by(InquiryView.inquiry_id, InquiryView.admin_id)
    with engine.begin() as connection:
        assert [tuple(row) for row in connection.execute(views)] == [
            (1, 1, None, None, later),
            (1, 2, None, None, later),
        ]  # read for everyone; opened by no one known
        assert "read_at" not in {column["name"] for column in sa.inspect(connection).get_columns("submissions")}
        if connection.dialect.name == "sqlite":  # no copy of the table: the search index's triggers are still there
            assert sorted(search.found_ids(Session(connection), "zebracorn")) == [1, 2]
            connection.execute(sa.text("UPDATE submissions SET message = 'okapi' WHERE id = 2"))
            assert search.found_ids(Session(connection), "okapi") == [2]
        connection.execute(sa.update(InquiryView.__table__).where(InquiryView.admin_id == 1).values(read_at=NOW))
    _downgrade(engine, "0013")
    with engine.connect() as connection:
        shared = sa.text("SELECT id, read_at FROM submissions ORDER BY id").columns(read_at=UTCDateTime())
        assert connection.execute(shared).all() == [(1, NOW), (2, None)]  # the earliest read
    upgrade(engine)
    with engine.begin() as connection:
        context = MigrationContext.configure(connection, opts=COMPARE)
        assert compare_metadata(context, Base.metadata) == []
        connection.execute(sa.delete(Inquiry.__table__).where(Inquiry.id == 1))  # an inquiry's rows go with it
        connection.execute(sa.delete(Admin.__table__).where(Admin.id == 2))
        assert connection.scalar(sa.select(sa.func.count()).select_from(InquiryView.__table__)) == 0
        connection.execute(sa.insert(InquiryView.__table__), [{"inquiry_id": 2, "admin_id": 1, "read_at": NOW}])
        connection.execute(sa.delete(Admin.__table__))  # and an admin's with them
        assert connection.scalar(sa.select(sa.func.count()).select_from(InquiryView.__table__)) == 0
        connection.execute(sa.delete(Inquiry.__table__))


def test_the_forgotten_at_migration_adds_the_column_both_ways_keeping_every_run(database_url):
    engine = make_engine(database_url)
    ledger = CleanupRun.__table__
    with engine.begin() as connection:
        connection.execute(
            sa.insert(ledger),
            [
                {
                    "trigger": "test",
                    "started_at": NOW,
                    "finished_at": NOW,
                    "cutoff": NOW,
                    "retention_days": 180,
                    "deleted": '{"inquiries": 3}',
                    "remaining": 0,
                    "status": "ok",
                }
            ],
        )
    _downgrade(engine, "0014")
    assert "forgotten_at" not in {column["name"] for column in sa.inspect(engine).get_columns("cleanup_runs")}
    with engine.connect() as connection:
        assert connection.execute(sa.text("SELECT deleted FROM cleanup_runs")).scalars().all() == ['{"inquiries": 3}']
    upgrade(engine)
    with engine.connect() as connection:
        assert connection.execute(sa.select(ledger.c.deleted, ledger.c.forgotten_at)).all() == [
            ('{"inquiries": 3}', None)
        ]  # a run from before the column: when it forgot is not known
        context = MigrationContext.configure(connection, opts=COMPARE)
        assert compare_metadata(context, Base.metadata) == []
    with engine.begin() as connection:
        connection.execute(sa.delete(ledger))
    engine.dispose()


def test_the_conversations_migration_keeps_every_inquiry_reply_and_file_both_ways(database_url):
    engine = make_engine(database_url)
    _downgrade(engine, "0015")
    with engine.begin() as connection:
        connection.execute(
            sa.text(
                "INSERT INTO submissions (id, name, email, message, created_at, status, legal_hold, form_id) "
                "VALUES (7, 'Ada', 'ada@example.com', 'm', :now, 'inbox', false, 1)"
            ),
            {"now": NOW},
        )
        connection.execute(
            sa.text(
                "INSERT INTO replies (inquiry_id, kind, subject, body, locale, message_id, status, created_at) "
                "VALUES (7, 'reply', 's', 'b', 'en', '<r@x>', 'sent', :now)"
            ),
            {"now": NOW},
        )
        connection.execute(
            sa.text(
                "INSERT INTO attachments (inquiry_id, field_key, name, content_type, size, created_at) "
                "VALUES (7, 'file', 'a.txt', 'text/plain', 1, :now)"
            ),
            {"now": NOW},
        )
    upgrade(engine)
    with engine.begin() as connection:
        assert connection.execute(sa.text("SELECT retention_clock FROM forms")).scalars().all() == ["received"]
        connection.execute(
            sa.text(
                "INSERT INTO inbound_messages (inquiry_id, state, kind, sender, sender_name, subject, body, "
                "files_refused, received_at) VALUES (7, 'thread', 'message', 'ada@example.com', '', '', 'hi', 0, :now)"
            ),
            {"now": NOW},
        )
    _downgrade(engine, "0015")
    with engine.connect() as connection:
        for table in ("submissions", "replies", "attachments"):
            assert connection.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar() == 1, table
    upgrade(engine)
    with engine.begin() as connection:
        connection.execute(sa.delete(Inquiry.__table__))
    engine.dispose()


def test_the_team_inbox_migration_makes_every_admin_an_owner_and_its_rows_go_with_their_inquiry(database_url):
    engine = make_engine(database_url)
    _downgrade(engine, "0016")
    with engine.begin() as connection:
        connection.execute(
            sa.text("INSERT INTO admins (id, name, user_handle, created_at) VALUES (1, 'Ada', :a, :now)"),
            {"a": b"a" * 64, "now": NOW},
        )
        connection.execute(
            sa.text(
                "INSERT INTO submissions (id, name, email, message, created_at, status, legal_hold, form_id) "
                "VALUES (1, 'Ina', 'i@example.com', 'zebracorn', :now, 'inbox', false, 1)"
            ),
            {"now": NOW},
        )
    upgrade(engine)
    with engine.begin() as connection:
        assert connection.execute(sa.text("SELECT role FROM admins")).scalars().all() == ["owner"]
        connection.execute(
            sa.text(
                "INSERT INTO inquiry_triage (inquiry_id, state, assigned_to, changed_at) VALUES (1, 'closed', 1, :now)"
            ),
            {"now": NOW},
        )
        connection.execute(sa.text("INSERT INTO tags (id, name, created_at) VALUES (1, 'urgent', :now)"), {"now": NOW})
        connection.execute(sa.text("INSERT INTO inquiry_tags (inquiry_id, tag_id) VALUES (1, 1)"))
        connection.execute(
            sa.text(
                "INSERT INTO inquiry_notes (inquiry_id, admin_id, admin_name, body, created_at) "
                "VALUES (1, 1, 'Ada', 'call back', :now)"
            ),
            {"now": NOW},
        )
        connection.execute(sa.text("INSERT INTO admin_forms (admin_id, form_id) VALUES (1, 1)"))
        connection.execute(
            sa.text(
                "INSERT INTO accesses (admin_id, admin_name, kind, inquiry_id, count, created_at) "
                "VALUES (1, 'Ada', 'opened', 1, 1, :now)"
            ),
            {"now": NOW},
        )
        if connection.dialect.name == "sqlite":  # no copy of submissions: the search triggers are still there
            assert search.found_ids(Session(connection), "zebracorn") == [1]
    _downgrade(engine, "0016")
    with engine.connect() as connection:
        assert "role" not in {column["name"] for column in sa.inspect(connection).get_columns("admins")}
        assert "inquiry_notes" not in sa.inspect(connection).get_table_names()
    upgrade(engine)
    with engine.begin() as connection:
        context = MigrationContext.configure(connection, opts=COMPARE)
        assert compare_metadata(context, Base.metadata) == []
        connection.execute(
            sa.text(
                "INSERT INTO inquiry_notes (inquiry_id, admin_id, admin_name, body, created_at) "
                "VALUES (1, 1, 'Ada', 'call back', :now)"
            ),
            {"now": NOW},
        )
        connection.execute(
            sa.text(
                "INSERT INTO accesses (admin_id, admin_name, kind, inquiry_id, count, created_at) "
                "VALUES (1, 'Ada', 'opened', 1, 1, :now)"
            ),
            {"now": NOW},
        )
        connection.execute(sa.delete(Inquiry.__table__))
        assert connection.scalar(sa.text("SELECT count(*) FROM inquiry_notes")) == 0  # notes go with the inquiry
        assert connection.scalar(sa.text("SELECT count(*) FROM accesses")) == 1  # the record of access stays
        connection.execute(sa.delete(Admin.__table__))
        assert connection.execute(sa.text("SELECT admin_id, admin_name FROM accesses")).all() == [(None, "Ada")]
        connection.execute(sa.text("DELETE FROM accesses"))
    engine.dispose()


def test_the_preferences_migration_moves_the_admins_choices_and_leaves_the_claim_both_ways(database_url):
    engine = make_engine(database_url)
    _downgrade(engine, "0018")
    moved = {"spam_words": "casino\nexample.biz", "notify_emails": '["a@example.com"]', "notify_digest_minutes": "10"}
    others = sa.text("SELECT key, value FROM settings WHERE key <> 'last_cleanup_at'")
    with engine.begin() as connection:
        connection.execute(sa.text("DELETE FROM settings WHERE key <> 'last_cleanup_at'"))
        for key, value in {**moved, "retention_days": "60"}.items():
            connection.execute(sa.text("INSERT INTO settings (key, value) VALUES (:k, :v)"), {"k": key, "v": value})
    upgrade(engine)
    with engine.begin() as connection:
        assert dict(connection.execute(sa.text("SELECT key, value FROM preferences")).all()) == moved
        assert connection.execute(others).all() == [("retention_days", "60")]
    _downgrade(engine, "0018")
    with engine.begin() as connection:
        assert dict(connection.execute(others).all()) == {**moved, "retention_days": "60"}
        connection.execute(sa.text("DELETE FROM settings WHERE key <> 'last_cleanup_at'"))
    upgrade(engine)
    engine.dispose()


def test_the_chat_urls_migration_adds_the_forms_column_both_ways_keeping_every_form(database_url):
    engine = make_engine(database_url)
    forms = sa.table("forms", sa.column("id"), sa.column("slug"), sa.column("notify_urls", sa.JSON(none_as_null=True)))
    with engine.begin() as connection:
        connection.execute(sa.update(forms).where(forms.c.id == 1).values(notify_urls=["ntfy://sundown-alerts"]))
    _downgrade(engine, "0019")
    assert "notify_urls" not in {column["name"] for column in sa.inspect(engine).get_columns("forms")}
    with engine.connect() as connection:
        assert connection.scalar(sa.text("SELECT slug FROM forms WHERE id = 1")) == "contact"
    upgrade(engine)
    with engine.connect() as connection:
        assert connection.execute(sa.select(forms.c.slug, forms.c.notify_urls)).all() == [("contact", None)]
        context = MigrationContext.configure(connection, opts=COMPARE)
        assert compare_metadata(context, Base.metadata) == []


def test_the_closed_at_migration_dates_every_closed_inquiry_from_its_triage_both_ways(database_url):
    engine = make_engine(database_url)
    _downgrade(engine, "0018")
    with engine.begin() as connection:
        for number in (1, 2):
            connection.execute(
                sa.text(
                    "INSERT INTO submissions (id, name, email, message, created_at, status, legal_hold, form_id) "
                    "VALUES (:id, 'Ina', 'i@example.com', 'hello', :now, 'inbox', false, 1)"
                ),
                {"id": number, "now": NOW},
            )
        closed_on = datetime(2026, 7, 1, tzinfo=UTC)
        connection.execute(
            sa.text(
                "INSERT INTO inquiry_triage (inquiry_id, state, changed_at) "
                "VALUES (1, 'closed', :at), (2, 'waiting', :at)"
            ),
            {"at": closed_on},
        )
    upgrade(engine)
    with engine.begin() as connection:
        rows = connection.execute(sa.select(Inquiry.id, Inquiry.closed_at).order_by(Inquiry.id)).all()
        assert rows == [(1, closed_on), (2, None)]
    _downgrade(engine, "0018")
    with engine.connect() as connection:
        assert "closed_at" not in {column["name"] for column in sa.inspect(connection).get_columns("submissions")}
        assert connection.scalar(sa.text("SELECT count(*) FROM submissions")) == 2
    upgrade(engine)
    with engine.begin() as connection:
        context = MigrationContext.configure(connection, opts=COMPARE)
        assert compare_metadata(context, Base.metadata) == []
        connection.execute(sa.delete(Inquiry.__table__))


def test_the_ledger_chain_migration_seals_every_run_in_order_and_downgrades_dropping_the_hashes(database_url):
    from app.cleanup import chain

    engine = make_engine(database_url)
    _downgrade(engine, "0018")
    ledger = sa.table(
        "cleanup_runs",
        *(sa.column(name) for name in ("trigger", "cutoff", "retention_days", "deleted", "remaining", "status")),
        sa.column("started_at", UTCDateTime()),
        sa.column("finished_at", UTCDateTime()),
        sa.column("form_retention_days", sa.JSON()),
    )
    rows = [
        {"trigger": "cli", "started_at": NOW, "finished_at": NOW, "status": "ok", "form_retention_days": {"2": 30}},
        {"trigger": "cli", "started_at": NOW, "finished_at": None, "status": "abandoned", "form_retention_days": None},
        {"trigger": "cli", "started_at": NOW, "finished_at": None, "status": "running", "form_retention_days": None},
    ]
    with engine.begin() as connection:
        connection.execute(
            sa.insert(ledger),
            [
                {**row, "cutoff": NOW, "retention_days": 180, "deleted": '{"inquiries": 3}', "remaining": 0}
                for row in rows
            ],
        )
    upgrade(engine)
    with Session(engine) as session:
        sealed = session.scalars(sa.select(CleanupRun).order_by(CleanupRun.id)).all()
        assert sealed[0].prev_hash == chain.GENESIS and sealed[1].prev_hash == sealed[0].row_hash
        assert sealed[2].row_hash is None  # a run still running seals its own row
        assert chain.verify(session) == (2, None)  # the migration's copy of the rule agrees with the app's
    _downgrade(engine, "0018")
    assert "row_hash" not in {column["name"] for column in sa.inspect(engine).get_columns("cleanup_runs")}
    upgrade(engine)
    with engine.begin() as connection:
        connection.execute(sa.delete(CleanupRun.__table__))
    engine.dispose()


PIECES = [b"first piece " * 100, b"second piece " * 100]


def _files(connection) -> list[tuple]:
    """Every file with its owner and its pieces' bytes, in order."""
    rows = connection.execute(
        sa.text(
            "SELECT a.id, a.inquiry_id, c.seq, c.data FROM attachments a "
            "JOIN attachment_chunks c ON c.attachment_id = a.id ORDER BY a.id, c.seq"
        )
    )
    return [(row[0], row[1], row[2], bytes(row[3])) for row in rows]


def _add_file(connection, owner: str, owner_id: int, pieces: list[bytes]) -> None:
    file_id = connection.execute(
        sa.text(
            f"INSERT INTO attachments ({owner}, field_key, name, content_type, size, created_at) "
            "VALUES (:owner, 'mail:1', 'a.txt', 'text/plain', :size, :now) RETURNING id"
        ),
        {"owner": owner_id, "size": sum(map(len, pieces)), "now": NOW},
    ).scalar_one()
    for seq, data in enumerate(pieces):
        connection.execute(
            sa.text("INSERT INTO attachment_chunks (attachment_id, seq, data) VALUES (:id, :seq, :data)"),
            {"id": file_id, "seq": seq, "data": data},
        )


def test_the_held_files_migration_keeps_every_file_and_its_pieces_both_ways(database_url):
    """0023 rebuilds ``attachments`` on SQLite: with foreign keys on, dropping the old table would take every
    piece of every file with it (``ON DELETE CASCADE``). Run as the app runs migrations, nothing is lost."""
    engine = make_engine(database_url)
    _downgrade(engine, "0022")
    with engine.begin() as connection:
        connection.execute(
            sa.text(
                "INSERT INTO submissions (id, name, email, message, created_at, status, legal_hold, form_id) "
                "VALUES (7, 'Ada', 'ada@example.com', 'm', :now, 'inbox', false, 1)"
            ),
            {"now": NOW},
        )
        _add_file(connection, "inquiry_id", 7, PIECES)
        before = _files(connection)
    assert [(seq, data) for _id, _owner, seq, data in before] == list(enumerate(PIECES))
    upgrade(engine)
    with engine.begin() as connection:
        assert _files(connection) == before
        if connection.dialect.name == "sqlite":  # rebuilt: the new table's own definition
            made = connection.scalar(sa.text("SELECT sql FROM sqlite_master WHERE name = 'attachments'"))
            assert "held_message_id" in made and "ck_attachments_one_owner" in made
        held = connection.execute(
            sa.text(
                "INSERT INTO inbound_messages (inquiry_id, state, kind, sender, sender_name, subject, body, "
                "files_refused, received_at) VALUES (NULL, 'held', 'message', 'eve@example.net', '', '', 'hi', 0, "
                ":now) RETURNING id"
            ),
            {"now": NOW},
        ).scalar_one()
        _add_file(connection, "held_message_id", held, [b"held piece"])
    for both in ("7, :held", "NULL, NULL"):  # exactly one owner
        with pytest.raises(sa.exc.IntegrityError), engine.begin() as connection:
            connection.execute(
                sa.text(
                    "INSERT INTO attachments (inquiry_id, held_message_id, field_key, name, content_type, size, "
                    f"created_at) VALUES ({both}, 'f', 'a', 'text/plain', 1, :now)"
                ),
                {"held": held, "now": NOW} if ":held" in both else {"now": NOW},
            )
    _downgrade(engine, "0022")
    assert "held_message_id" not in {column["name"] for column in sa.inspect(engine).get_columns("attachments")}
    with engine.connect() as connection:
        assert _files(connection) == before  # the held e-mail's file and its piece gone, the inquiry's kept
        assert connection.scalar(sa.text("SELECT count(*) FROM attachment_chunks")) == len(PIECES)
    upgrade(engine)
    with engine.begin() as connection:
        assert _files(connection) == before
        context = MigrationContext.configure(connection, opts=COMPARE)
        assert compare_metadata(context, Base.metadata) == []
        connection.execute(sa.delete(Inquiry.__table__))  # the foreign keys still cascade
        assert connection.scalar(sa.text("SELECT count(*) FROM attachment_chunks")) == 0
    engine.dispose()


def test_the_held_files_migration_refuses_to_run_with_sqlites_foreign_keys_on(tmp_path, request):
    """Run on a connection whose foreign keys are on (inside a transaction, where the pragma cannot be
    changed), 0023 refuses before touching the table: the pieces are all still there."""
    engine = make_engine(new_database_url("sqlite", request, tmp_path))
    _downgrade(engine, "0022")
    with engine.begin() as connection:
        connection.execute(
            sa.text(
                "INSERT INTO submissions (id, name, email, message, created_at, status, legal_hold, form_id) "
                "VALUES (7, 'Ada', 'ada@example.com', 'm', :now, 'inbox', false, 1)"
            ),
            {"now": NOW},
        )
        _add_file(connection, "inquiry_id", 7, PIECES)
    cfg = alembic_config()
    with pytest.raises(RuntimeError, match="every file's pieces"), engine.begin() as connection:
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, "0023")
    with engine.connect() as connection:
        assert connection.scalar(sa.text("SELECT count(*) FROM attachment_chunks")) == len(PIECES)
        assert connection.scalar(sa.text("PRAGMA foreign_keys")) == 1
    assert current_revision(engine) == "0022"
    engine.dispose()


def test_the_alembic_command_runs_the_held_files_migration_keeping_every_piece(tmp_path, request):
    """``alembic upgrade head`` (migrations/env.py's own connection) turns SQLite's foreign keys off too."""
    url = new_database_url("sqlite", request, tmp_path)
    engine = make_engine(url)
    _downgrade(engine, "0022")
    with engine.begin() as connection:
        connection.execute(
            sa.text(
                "INSERT INTO submissions (id, name, email, message, created_at, status, legal_hold, form_id) "
                "VALUES (7, 'Ada', 'ada@example.com', 'm', :now, 'inbox', false, 1)"
            ),
            {"now": NOW},
        )
        _add_file(connection, "inquiry_id", 7, PIECES)
    engine.dispose()
    result = subprocess.run(
        [sys.executable, "-m", "alembic", "upgrade", "head"],
        cwd=Path(__file__).parents[2],
        env={**os.environ, "SUNDOWN_DATABASE_URL": url},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert current_revision(engine) == head_revision()
    with engine.connect() as connection:
        assert [data for _id, _owner, _seq, data in _files(connection)] == PIECES


def test_the_anonymise_migration_adds_the_forms_choice_and_the_mark_both_ways_keeping_every_row(database_url):
    engine = make_engine(database_url)
    submissions = sa.table("submissions", sa.column("id"), sa.column("name"), sa.column("anonymised_at", UTCDateTime()))
    with engine.begin() as connection:
        connection.execute(sa.update(Form.__table__).where(Form.id == 1).values(expiry_action="anonymise"))
        connection.execute(
            sa.insert(Inquiry.__table__),
            [
                {"name": "", "email": "", "message": "", "created_at": NOW, "form_id": 1, "anonymised_at": NOW},
                {
                    "name": "Ada",
                    "email": "ada@example.com",
                    "message": "Hi",
                    "created_at": NOW,
                    "form_id": 1,
                    "anonymised_at": None,
                },
            ],
        )
    _downgrade(engine, "0023")
    inspector = sa.inspect(engine)
    assert "anonymised_at" not in {column["name"] for column in inspector.get_columns("submissions")}
    assert "expiry_action" not in {column["name"] for column in inspector.get_columns("forms")}
    assert "ix_submissions_not_anonymised" not in {index["name"] for index in inspector.get_indexes("submissions")}
    with engine.connect() as connection:
        assert connection.scalar(sa.text("SELECT count(*) FROM submissions")) == 2
    upgrade(engine)
    with engine.connect() as connection:
        assert connection.execute(sa.select(Form.expiry_action).where(Form.id == 1)).scalar_one() == "delete"
        rows = connection.execute(sa.select(submissions.c.name, submissions.c.anonymised_at).order_by("id")).all()
        assert rows == [("", None), ("Ada", None)]
        assert "ix_submissions_not_anonymised" in {
            index["name"] for index in sa.inspect(connection).get_indexes("submissions")
        }
        context = MigrationContext.configure(connection, opts=COMPARE)
        assert compare_metadata(context, Base.metadata) == []
    with engine.begin() as connection:
        connection.execute(sa.delete(Inquiry.__table__))
    engine.dispose()


def test_the_notify_cap_migration_renames_the_hours_counted_both_ways_and_leaves_other_counters(database_url):
    from app.notify import digest

    engine = make_engine(database_url)
    _downgrade(engine, "0024")
    limits = sa.table("rate_limits", sa.column("key"), sa.column("count"), sa.column("expires_at", UTCDateTime()))
    rows = {"notify-email:3600:all:493776": 97, "submit-all:3600:all:493776": 5, "notify-emailish:60:all:1": 2}
    with engine.begin() as connection:
        connection.execute(sa.delete(limits))
        connection.execute(sa.insert(limits), [{"key": k, "count": c, "expires_at": NOW} for k, c in rows.items()])
    upgrade(engine)
    counted = sa.select(limits.c.key, limits.c.count)
    with engine.connect() as connection:
        assert dict(connection.execute(counted).all()) == {
            f"{digest.CAP_BUCKET}:3600:all:493776": 97,  # the app's cap goes on counting the same hour
            "submit-all:3600:all:493776": 5,
            "notify-emailish:60:all:1": 2,
        }
    _downgrade(engine, "0024")
    with engine.connect() as connection:
        assert dict(connection.execute(counted).all()) == rows
    upgrade(engine)
    with engine.begin() as connection:
        connection.execute(sa.delete(limits))
    engine.dispose()


def test_the_start_dismissed_migration_adds_the_admins_column_both_ways_keeping_every_admin(database_url):
    engine = make_engine(database_url)
    admins = Admin.__table__
    with engine.begin() as connection:
        connection.execute(sa.insert(admins), [{"name": "Ada", "user_handle": b"a" * 64, "created_at": NOW}])
        connection.execute(sa.update(admins).values(start_dismissed_at=NOW))
    _downgrade(engine, "0025")
    assert "start_dismissed_at" not in {column["name"] for column in sa.inspect(engine).get_columns("admins")}
    with engine.connect() as connection:
        assert connection.execute(sa.text("SELECT name FROM admins")).scalars().all() == ["Ada"]
    upgrade(engine)
    with engine.connect() as connection:
        # An admin from before the column sees the checklist until they put it away.
        assert connection.execute(sa.select(admins.c.name, admins.c.start_dismissed_at)).all() == [("Ada", None)]
        context = MigrationContext.configure(connection, opts=COMPARE)
        assert compare_metadata(context, Base.metadata) == []
    with engine.begin() as connection:
        connection.execute(sa.delete(admins))
    engine.dispose()


def test_the_form_tallies_migration_adds_the_counts_both_ways_and_the_cleanups_upsert_adds_to_one_row(database_url):
    from app.inquiries import tally
    from app.models import FormTally

    engine = make_engine(database_url)
    _downgrade(engine, "0026")
    assert "form_tallies" not in sa.inspect(engine).get_table_names()
    upgrade(engine)
    counted = sa.select(FormTally.form_id, FormTally.kind, FormTally.count, FormTally.run_id).order_by(FormTally.id)
    with engine.begin() as connection:
        tally.add_batch(connection, 7, NOW, "inquiries", {1: 3, 2: 1})
        tally.add_batch(connection, 7, NOW, "inquiries", {1: 2})  # the next batch of the same run and target
        tally.add_batch(connection, 7, NOW, "spam", {1: 4})
        assert connection.execute(counted).all() == [(1, "inquiries", 5, 7), (2, "inquiries", 1, 7), (1, "spam", 4, 7)]
        context = MigrationContext.configure(connection, opts=COMPARE)
        assert compare_metadata(context, Base.metadata) == []
    _downgrade(engine, "0026")
    assert "form_tallies" not in sa.inspect(engine).get_table_names()
    upgrade(engine)
    with engine.connect() as connection:
        assert connection.execute(counted).all() == []
    engine.dispose()
