"""Operator commands for people, backups and erasures: find, export, erase; backup; erasures export and apply."""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.script import ScriptDirectory
from sqlalchemy import delete, insert, select
from sqlalchemy.engine import make_url

from app.core import db
from app.core.db import make_engine
from app.core.migrate import alembic_config, downgrade, upgrade
from app.models import AuditEntry, Erasure, Inquiry
from app.people import records
from tests.factories import add_file, add_inquiries, inquiry

ADA = "ada@example.com"


def arrange(db_session, clock) -> dict[str, int]:
    inbox, spam, held, other = add_inquiries(
        db_session,
        [
            inquiry(clock, 2, email="Ada@example.com"),
            inquiry(clock, 3, email=ADA, status="spam"),
            inquiry(clock, 4, email=ADA, legal_hold=True, hold_reason="Claim 42", hold_by="Grace", held_at=clock()),
            inquiry(clock, 1, email="bob@example.com", name="Bob"),
        ],
    )
    db_session.close()
    return {"inbox": inbox, "spam": spam, "held": held, "other": other}


def test_people_find_lists_every_inquiry_of_the_address(runner, db_session, clock):
    ids = arrange(db_session, clock)
    result = runner.invoke(args=["people", "find", "ADA@example.com"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "ada@example.com: 3 inquiries, 1 on legal hold"
    assert lines[1].startswith(f"#{ids['held']}  2026-05-28T12:00:00Z  inbox  0 audit entries  legal hold: Claim 42")
    assert any(line.startswith(f"#{ids['spam']}  ") and "  spam  " in line for line in lines)


def test_people_commands_refuse_an_invalid_address(runner):
    for args in (["people", "find", "nope"], ["people", "export", "nope"], ["people", "erase", "x@", "--yes"]):
        result = runner.invoke(args=args)
        assert result.exit_code == 2 and "not a valid e-mail address" in result.output


def test_people_export_writes_the_json_shape_to_stdout(runner, db_session, clock):
    ids = arrange(db_session, clock)
    result = runner.invoke(args=["people", "export", ADA])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["format"] == records.FORMAT and document["email"] == ADA
    assert [item["id"] for item in document["inquiries"]] == [ids["held"], ids["spam"], ids["inbox"]]


def test_people_erase_asks_unless_yes_and_keeps_held_inquiries(runner, db_session, clock, query):
    ids = arrange(db_session, clock)
    refused = runner.invoke(args=["people", "erase", ADA], input="n\n")
    assert refused.exit_code == 1 and "nothing erased" in refused.output
    assert query.count(Inquiry) == 4
    result = runner.invoke(args=["people", "erase", ADA, "--yes"])
    assert result.exit_code == 0, result.output
    assert f"kept: #{ids['held']} is on legal hold (Claim 42)" in result.output
    assert "erased 2 inquiries, 1 kept on legal hold" in result.output
    assert sorted(query(select(Inquiry.id))) == sorted([ids["held"], ids["other"]])
    assert query.rows(select(Erasure.count, Erasure.kept_on_hold, Erasure.actor)) == [(2, 1, "operator (command line)")]
    (entry,) = query(select(AuditEntry))
    assert entry.action == "erased" and ADA not in entry.detail


def take_snapshot(app, runner, db_kind, tmp_path):
    """A backup: ``flask backup`` on SQLite; on PostgreSQL (``pg_dump``, not run here) the rows themselves."""
    if db_kind == "sqlite":
        path = tmp_path / "backup.db"
        result = runner.invoke(args=["backup", str(path)])
        assert result.exit_code == 0, result.output
        return path
    with app.app_context(), db.transaction() as session:
        return [dict(row._mapping) for row in session.execute(select(Inquiry.__table__))]


def restore(app, db_kind, snapshot) -> None:
    """Put the database back as the snapshot has it: the file copied back, or the rows inserted again."""
    engine = db.engine_of(app)
    if db_kind == "sqlite":
        engine.dispose()
        path = Path(make_url(app.config["DATABASE_URL"]).database)
        for suffix in ("-wal", "-shm"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)
        restored = path.with_name("restored.db")
        shutil.copy(snapshot, restored)
        restored.replace(path)  # as an operator restores: the app stopped, the file put back whole
        return
    with engine.begin() as connection:
        connection.execute(delete(Erasure.__table__))
        connection.execute(delete(Inquiry.__table__))
        connection.execute(insert(Inquiry.__table__), snapshot)


def test_erase_then_restore_then_apply_erases_again_only_what_the_erasure_covered(
    app, runner, db_session, clock, query, db_kind, tmp_path
):
    ids = arrange(db_session, clock)
    snapshot = take_snapshot(app, runner, db_kind, tmp_path)
    clock.advance(hours=1)
    assert runner.invoke(args=["people", "erase", ADA, "--yes"]).exit_code == 0
    erasures_file = tmp_path / "erasures.json"
    exported = runner.invoke(args=["erasures", "export", str(erasures_file)])
    assert exported.exit_code == 0 and "1 erasure records written" in exported.output
    assert ADA not in erasures_file.read_text()

    restore(app, db_kind, snapshot)
    assert query.count(Inquiry) == 4 and query.count(Erasure) == 0  # the erased inquiries are back
    clock.advance(days=1)
    with app.app_context():
        (later,) = add_inquiries(db.get_session(), [inquiry(clock, 0, email=ADA, message="after the erasure")])

    applied = runner.invoke(args=["erasures", "apply", str(erasures_file)])
    assert applied.exit_code == 0, applied.output
    assert "1 erasure records applied: 2 inquiries erased again, 1 kept on legal hold" in applied.output
    assert sorted(query(select(Inquiry.id))) == sorted([ids["held"], ids["other"], later])
    assert query.rows(select(Erasure.count, Erasure.actor)) == [(2, "operator (command line)")]
    assert query(select(AuditEntry.action).where(AuditEntry.action == "erasures_applied")) == ["erasures_applied"]

    again = runner.invoke(args=["erasures", "apply", str(erasures_file)])
    assert "0 inquiries erased again" in again.output
    assert query.count(Erasure) == 1 and query.count(Inquiry) == 3


@pytest.mark.parametrize(
    "content, message",
    [
        ("not json", "not JSON"),
        ('{"format": "other"}', "not an erasures file"),
        (
            '{"format": "sundown.erasures.v1", '
            '"erasures": [{"email_hash": "xyz", "erased_at": "2026-01-01T00:00:00Z"}]}',
            "erasure 1: email_hash must be 64 hex digits",
        ),
        (
            '{"format": "sundown.erasures.v1", "erasures": [{"email_hash": "'
            + "a" * 64
            + '", "erased_at": "2026-01-01"}]}',
            "erasure 1: erased_at must carry its time zone",
        ),
    ],
)
def test_erasures_apply_refuses_a_bad_file_and_changes_nothing(
    runner, db_session, clock, query, tmp_path, content, message
):
    arrange(db_session, clock)
    path = tmp_path / "bad.json"
    path.write_text(content)
    result = runner.invoke(args=["erasures", "apply", str(path)])
    assert result.exit_code == 1 and message in result.output
    assert query.count(Inquiry) == 4 and query.count(Erasure) == 0


def test_backup_is_consistent_while_the_app_writes(app, runner, db_session, clock, db_kind, tmp_path):
    if db_kind == "postgresql":
        result = runner.invoke(args=["backup", str(tmp_path / "x.db")])
        assert result.exit_code == 1 and "pg_dump" in result.output
        assert not (tmp_path / "x.db").exists()
        return
    add_inquiries(db_session, [inquiry(clock, message="m" * 3000) for _ in range(2000)])
    db_session.close()
    stop, committing = threading.Event(), threading.Event()

    def keep_committing():  # another connection committing as fast as it can, as a busy app's workers may
        connection = sqlite3.connect(make_url(app.config["DATABASE_URL"]).database, isolation_level=None)
        while not stop.is_set():
            connection.execute("INSERT INTO heartbeat VALUES (1)")
            committing.set()
        connection.close()

    with db.transaction(write=True) as session:
        session.execute(sa.text("CREATE TABLE heartbeat (beat INTEGER)"))
    writer = threading.Thread(target=keep_committing)
    # A copy that starts over whenever another connection commits never ends while the commits go
    # on; after a minute they stop, so such a copy finishes and the test fails rather than hangs.
    watchdog = threading.Timer(60, stop.set)
    writer.start()
    try:
        committing.wait(10)
        watchdog.start()
        path = tmp_path / "live-backup.db"
        result = runner.invoke(args=["backup", str(path)])
        finished_while_writing = not stop.is_set()
    finally:
        watchdog.cancel()
        stop.set()
        writer.join()
    assert result.exit_code == 0, result.output
    assert finished_while_writing, "the copy only finished once the writes stopped"
    copy = sqlite3.connect(path)
    try:
        assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert copy.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        assert copy.execute("SELECT count(*) FROM submissions").fetchone() == (2000,)
    finally:
        copy.close()
    assert not Path(f"{path}-wal").exists()
    assert runner.invoke(args=["backup", str(path)]).exit_code == 1  # never overwrites


def test_the_erasures_migration_downgrades_and_upgrades(database_url):
    """0006 removes its table and index going down (inquiries untouched) and makes them again going up."""
    engine = make_engine(database_url)
    config = alembic_config()
    before = ScriptDirectory.from_config(config).get_revision("0006").down_revision
    with engine.begin() as connection:
        connection.execute(insert(Inquiry.__table__), [inquiry(lambda: datetime.now(UTC))])
    downgrade(engine, before)
    inspector = sa.inspect(engine)
    assert "erasures" not in inspector.get_table_names()
    assert "ix_submissions_email_lower" not in {index["name"] for index in inspector.get_indexes("submissions")}
    upgrade(engine)
    assert "erasures" in sa.inspect(engine).get_table_names()
    with engine.connect() as connection:
        assert connection.execute(select(sa.func.count()).select_from(Inquiry.__table__)).scalar() == 1
    engine.dispose()


def test_a_backup_holds_each_inquirys_files_whole_beside_its_row(app, runner, db_session, clock, db_kind, tmp_path):
    if db_kind == "postgresql":
        return  # pg_dump's copy: docs/deploy.md; the command refuses (the test above)
    ids = add_inquiries(db_session, [inquiry(clock, message=f"with a file {n}") for n in range(3)])
    files = {inquiry_id: bytes([n]) * (300_000 + n) for n, inquiry_id in enumerate(ids)}
    for inquiry_id, data in files.items():
        add_file(db_session, inquiry_id, data)
    db_session.close()
    path = tmp_path / "with-files.db"
    result = runner.invoke(args=["backup", str(path)])
    assert result.exit_code == 0, result.output
    copy = sqlite3.connect(path)
    try:
        restored = {}
        for inquiry_id, data in copy.execute(
            "SELECT a.inquiry_id, c.data FROM attachments a JOIN attachment_chunks c ON c.attachment_id = a.id "
            "JOIN submissions s ON s.id = a.inquiry_id ORDER BY a.id, c.seq"
        ):
            restored[inquiry_id] = restored.get(inquiry_id, b"") + data
    finally:
        copy.close()
    assert restored == files
