"""The pruner in-process: when it runs, what it deletes, the ledger, faults, operator controls."""

from __future__ import annotations

import json
import logging
import os
from datetime import datetime, timedelta, timezone

import pytest
from flask import Response
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, event, func, select

from app import db
from app import cleanup, retention
from app.cleanup import claim, runs, state
from app.clock import epoch_ms
from app.models import Admin, AdminLogin, CleanupRun, RateLimit, Setting, Inquiry, OneTimeSecret
from app.cleanup.batches import Target
from tests.helpers import VALID


def add_inquiry(session, created_at: datetime, hold: bool = False) -> Inquiry:
    row = Inquiry(name="Ada Secret", email="ada.secret@example.com", message="private words",
                     created_at=created_at, legal_hold=hold)
    session.add(row)
    session.commit()
    return row


def add_inquiries(session, clock, ages_in_days: list[float], hold: bool = False) -> list[Inquiry]:
    return [add_inquiry(session, clock() - timedelta(days=age), hold) for age in ages_in_days]


def ledger(app) -> list[CleanupRun]:
    with app.app_context():
        from app.db import get_session

        return list(get_session().scalars(select(CleanupRun).order_by(CleanupRun.id)))


def remaining_ids(app) -> set[int]:
    with app.app_context():
        from app.db import get_session

        return set(get_session().scalars(select(Inquiry.id)))


def next_due(app) -> datetime | None:
    with app.app_context():
        from app.db import get_session

        return cleanup.next_due_at(get_session())


def submit(client) -> int:
    """A JSON inquiry; closing the response runs the after-response hook, as a server does."""
    with client.post("/api/inquiries", json=VALID) as response:
        return response.status_code


def count_claim_statements(app) -> list[str]:
    statements: list[str] = []

    def record(_conn, _cursor, statement, *_args):
        if "settings" in statement:
            statements.append(statement)

    event.listen(db.engine_of(app), "before_cursor_execute", record)
    return statements


# --- When it runs ------------------------------------------------------------


def test_the_first_ever_request_claims_and_runs(client, app, db_session, clock):
    old = add_inquiries(db_session, clock, [200])[0]
    assert submit(client) == 201
    [run] = ledger(app)
    assert (run.trigger, run.status) == ("inquiry_api", "ok")
    assert json.loads(run.deleted)["inquiries"] == 1
    assert old.id not in remaining_ids(app)


def test_the_prune_runs_only_when_the_response_is_closed(client, app):
    response = client.post("/api/inquiries", json=VALID)
    assert response.status_code == 201
    assert ledger(app) == []
    response.close()
    assert [run.trigger for run in ledger(app)] == ["inquiry_api"]


def test_a_streamed_response_prunes_after_its_last_chunk(app):
    chunks_sent = []

    def stream():
        cleanup.trigger("streamed")

        def body():
            for chunk in ("a", "b"):
                chunks_sent.append(chunk)
                yield chunk

        return Response(body())

    app.add_url_rule("/streamed", view_func=stream)
    response = app.test_client().get("/streamed")
    assert ledger(app) == []
    assert response.get_data(as_text=True) == "ab"
    assert ledger(app) == []
    response.close()
    assert [run.trigger for run in ledger(app)] == ["streamed"]


def test_the_interval_is_respected_with_no_database_work_when_not_due(client, app, clock):
    submit(client)
    statements = count_claim_statements(app)
    clock.advance(minutes=59)
    submit(client)
    assert statements == []  # the process knew: no claim statement at all
    clock.advance(minutes=1)
    submit(client)
    assert len(ledger(app)) == 2
    assert any("INSERT INTO settings" in statement for statement in statements)


def test_a_process_that_lost_the_claim_learns_when_it_is_next_due(app, app_config, make_app, clock):
    other = make_app(app_config)  # another worker process: its own memory
    submit(app.test_client())
    clock.advance(minutes=10)
    statements = count_claim_statements(other)
    submit(other.test_client())
    assert len(statements) == 2  # the lost claim, then one read of the stored value
    clock.advance(minutes=10)
    submit(other.test_client())
    assert len(statements) == 2
    clock.advance(minutes=41)
    submit(other.test_client())
    assert [run.trigger for run in ledger(app)] == ["inquiry_api", "inquiry_api"]


@pytest.fixture
def small_batches(app_config):
    # Rate-limit windows of a day, so that only inquiries are due in these tests.
    app_config.update(CLEANUP_BATCH_SIZE=2, CLEANUP_TIME_BUDGET=0, CLEANUP_YIELD=0, SUBMIT_RATE_LIMITS="10000/86400")


@pytest.mark.usefixtures("small_batches")
def test_the_time_budget_stops_a_run_after_one_batch(app, db_session, clock):
    add_inquiries(db_session, clock, [300, 250, 200, 190, 181])
    with app.app_context():
        run = cleanup.run("test")
    assert (run.status, json.loads(run.deleted)["inquiries"], run.remaining) == ("partial", 2, 3)


@pytest.mark.usefixtures("small_batches")
def test_a_backlog_makes_the_next_claim_due_early(client, app, db_session, clock):
    add_inquiries(db_session, clock, [300, 250, 200, 190, 181])
    submit(client)
    assert next_due(app) == clock() + timedelta(seconds=60)
    clock.advance(seconds=59)
    submit(client)
    assert len(ledger(app)) == 1
    clock.advance(seconds=1)
    submit(client)
    clock.advance(seconds=60)
    submit(client)
    runs = ledger(app)
    assert [run.status for run in runs] == ["partial", "partial", "ok"]
    assert [run.remaining for run in runs] == [3, 1, 0]
    assert len(remaining_ids(app)) == 4  # the four inquiries just submitted
    assert next_due(app) == clock() + timedelta(hours=1)


def test_the_cutoff_is_fixed_at_the_claim_and_recorded(app, db_session, clock):
    db_session.add(Setting(key="retention_days", value="30"))
    db_session.commit()
    with app.app_context():
        run = cleanup.run("test")
    assert run.retention_days == 30
    assert run.cutoff == clock() - timedelta(days=30)


def test_a_lease_shorter_than_the_time_budget_is_refused_at_startup(app_config):
    from app import create_app
    from app.config import ConfigurationError

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
    for age in (timedelta(days=91), timedelta(days=89)):
        session.add(CleanupRun(trigger="old", started_at=now - age, finished_at=now - age,
                             cutoff=now - age, retention_days=180, status="ok"))
    session.commit()


def test_every_target_loses_exactly_its_expired_rows(app, db_session, clock):
    add_expiring_rows(db_session, clock)
    add_inquiries(db_session, clock, [181, 179])
    add_inquiries(db_session, clock, [400], hold=True)
    with app.app_context():
        run = cleanup.run("test")
    assert json.loads(run.deleted) == {
        "inquiries": 1, "one_time_secrets": 1, "admin_logins": 1, "rate_limits": 1, "cleanup_runs": 1,
    }
    db_session.rollback()
    for model in (OneTimeSecret, AdminLogin, RateLimit):
        assert db_session.scalar(select(func.min(model.expires_at))) > clock()
    assert db_session.scalar(select(func.count()).select_from(CleanupRun)) == 2  # the 89-day one and this run
    assert db_session.scalar(select(func.count()).select_from(Inquiry)) == 2


def test_batches_get_through_rows_sharing_one_timestamp(app_config, make_app, clock):
    app = make_app({**app_config, "CLEANUP_BATCH_SIZE": 3, "CLEANUP_YIELD": 0})
    with app.app_context():
        from app.db import get_session

        session = get_session()
        add_inquiries(session, clock, [200] * 7 + [190] * 2 + [181])
        add_inquiries(session, clock, [200], hold=True)
        run = cleanup.run("test")
    assert (run.status, json.loads(run.deleted)["inquiries"]) == ("ok", 10)
    assert len(remaining_ids(app)) == 1


def test_dry_run_counts_equal_what_the_run_deletes(app, db_session, clock):
    add_expiring_rows(db_session, clock)
    oldest = add_inquiries(db_session, clock, [500, 181, 179, 10])[0]
    add_inquiries(db_session, clock, [900], hold=True)
    with app.app_context():
        preview = cleanup.dry_run()
        run = cleanup.run("test")
    assert preview["inquiries"] == (2, oldest.created_at)
    assert {name: count for name, (count, _oldest) in preview.items()} == json.loads(run.deleted)


def test_an_invalid_stored_retention_falls_back_to_180_days_with_a_warning(app, db_session, clock, caplog):
    db_session.add(Setting(key="retention_days", value="forever"))
    db_session.commit()
    with caplog.at_level(logging.WARNING, logger="app.cleanup"), app.app_context():
        run = cleanup.run("test")
    assert run.retention_days == 180
    assert "invalid stored retention_days" in caplog.text


# --- The ledger and the log ----------------------------------------------------


def test_one_structured_log_line_per_run_without_personal_data(app, db_session, clock, caplog):
    add_inquiries(db_session, clock, [200])
    with caplog.at_level(logging.INFO, logger="app.cleanup"), app.app_context():
        run = cleanup.run("test")
    [line] = [record.getMessage() for record in caplog.records if record.getMessage().startswith("cleanup_run ")]
    fields = json.loads(line.removeprefix("cleanup_run "))
    assert fields == cleanup.as_dict(run)
    assert fields["status"] == "ok" and fields["deleted"]["inquiries"] == 1
    assert "ada" not in caplog.text.lower() and "private words" not in caplog.text


def test_a_crashed_run_left_running_does_not_block_the_next_due_run(app, db_session, clock):
    with app.app_context():
        cleanup.run("test")
        # A run whose process died: its claim and ledger row stay "running".
        with app.extensions["sundown.sessionmaker"].begin() as session:
            clock.advance(hours=1)
            assert claim.take(session, epoch_ms(clock()), 3_600_000, 300_000)
            session.add(CleanupRun(trigger="died", started_at=clock(), cutoff=clock(), retention_days=180))
        assert cleanup.run("test", force=True) is None  # never overlaps a live lease
        clock.advance(hours=1)
        later = cleanup.run("test")
    assert later.status == "ok"
    assert [run.status for run in ledger(app)] == ["ok", "running", "ok"]


# --- Faults ----------------------------------------------------------------------


def failing_on_second_batch(target: Target) -> Target:
    calls = []

    def where(moment):
        calls.append(moment)
        if len(calls) == 2:
            raise RuntimeError("disk on fire")
        return target.where(moment)

    return Target(target.name, target.model, where, target.age)


def test_an_exception_in_a_batch_is_recorded_and_the_response_unaffected(app_config, make_app, clock):
    app = make_app({**app_config, "CLEANUP_BATCH_SIZE": 2, "CLEANUP_YIELD": 0})
    targets = state.of(app).targets
    targets[0] = failing_on_second_batch(targets[0])
    with app.app_context():
        from app.db import get_session

        add_inquiries(get_session(), clock, [300, 200, 190])
    assert submit(app.test_client()) == 201
    [run] = ledger(app)
    assert (run.status, run.error) == ("error", "RuntimeError while deleting from inquiries")
    assert json.loads(run.deleted)["inquiries"] == 2  # the committed batch stays deleted
    with app.app_context():
        from app.db import get_session

        assert claim.stored(get_session()) == epoch_ms(clock())  # released: not left running


def test_a_failure_outside_the_batches_is_logged_and_never_reaches_the_response(
    client, app, monkeypatch, caplog
):
    def database_gone(trigger, force=False):
        raise ConnectionError("database gone")

    monkeypatch.setattr(runs, "run_if_due", database_gone)
    with caplog.at_level(logging.ERROR, logger="app.cleanup"):
        assert submit(client) == 201
    assert "cleanup after inquiry_api failed" in caplog.text


# --- Operator controls -------------------------------------------------------------


def test_cli_dry_run_then_run_then_not_due_then_force(app, db_session, clock):
    add_inquiries(db_session, clock, [200, 300])
    runner = app.test_cli_runner()
    dry = runner.invoke(args=["prune", "--dry-run"])
    assert "inquiries: 2 (oldest " in dry.output
    assert ledger(app) == []
    first = runner.invoke(args=["prune"])
    assert "inquiries: 2 deleted" in first.output and ": ok, 0 remaining" in first.output
    assert "Not run" in runner.invoke(args=["prune"]).output
    forced = runner.invoke(args=["prune", "--force"])
    assert forced.exit_code == 0 and "inquiries: 0 deleted" in forced.output
    assert [run.trigger for run in ledger(app)] == ["cli", "cli"]


def test_internal_prune_is_404_without_a_configured_token(client):
    assert client.post("/internal/cleanup", headers={"Authorization": "Bearer x"}).status_code == 404


@pytest.fixture
def token_client(app_config, make_app):
    return make_app({**app_config, "CLEANUP_TOKEN": "s3cret-token"}).test_client()


def test_internal_prune_refuses_a_missing_or_wrong_token(token_client):
    assert token_client.post("/internal/cleanup").status_code == 401
    assert token_client.post("/internal/cleanup", headers={"Authorization": "Basic abc"}).status_code == 401
    wrong = token_client.post("/internal/cleanup", headers={"Authorization": "Bearer s3cret-tokem"})
    assert wrong.status_code == 403


def test_internal_prune_runs_once_and_returns_the_run(token_client):
    headers = {"Authorization": "Bearer s3cret-token"}
    first = token_client.post("/internal/cleanup", headers=headers)
    assert first.status_code == 200
    assert first.json["ran"] is True
    assert first.json["run"]["trigger"] == "internal" and first.json["run"]["status"] == "ok"
    again = token_client.post("/internal/cleanup", headers=headers)
    assert again.json == {"ran": False, "next_due_at": "2026-06-01T13:00:00+00:00"}


# --- The property: whatever the rows, retention and clock ---------------------------

SECONDS_PER_DAY = 86_400


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
        clock.moment = datetime(2020, 1, 1, tzinfo=timezone.utc) + timedelta(days=offset_days)
        days = int(retention) if retention and retention.lstrip("-").isdigit() and 1 <= int(retention) <= 3650 else 180
        cutoff = clock() - timedelta(days=days)
        if retention is not None:
            session.add(Setting(key="retention_days", value=retention))
        # Ages are scattered around the cutoff, to the second, including exactly at it.
        for seconds, extra_days, hold in rows:
            created = cutoff + timedelta(seconds=seconds) + timedelta(days=extra_days if seconds >= 0 else -extra_days)
            session.add(Inquiry(name="n", email="e@example.com", message="m", created_at=created, legal_hold=hold))
        session.commit()
        query = select(Inquiry.id, Inquiry.created_at, Inquiry.legal_hold)
        before = {id_: (created, held) for id_, created, held in session.execute(query)}
        app.config.update(CLEANUP_BATCH_SIZE=batch_size, CLEANUP_TIME_BUDGET=0 if partial else 60, CLEANUP_YIELD=0)
        run = cleanup.run("property")
        session.rollback()
        after = set(session.scalars(select(Inquiry.id)))

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
    from app.db import get_session

    session = get_session()
    for model in (Inquiry, Setting, CleanupRun):
        session.execute(delete(model))
    session.commit()
    state.of(app).next_due_ms = 0
    return session


def test_default_batch_size_and_pause_follow_the_database(app, db_kind):
    from app.cleanup.runs import batch_limits

    with app.app_context():
        limits = batch_limits()
    expected = {"sqlite": (1000, 1.0), "postgresql": (50_000, 0.0)}[db_kind]
    assert (limits.batch_size, limits.yield_ratio) == expected
