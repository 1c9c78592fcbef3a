"""The after-response trigger: a cleanup runs after the response, when due, and never reaches it."""

from __future__ import annotations

import json
import logging
import re
import threading

import pytest
from flask import Response
from sqlalchemy import event, select

from app import cleanup
from app.cleanup import claim, runs, state
from app.cleanup.batches import Target
from app.core import db
from app.core.clock import epoch_ms
from app.models import CleanupRun, Inquiry
from tests.factories import add_inquiries, aged_inquiries
from tests.helpers import VALID, settle, submit_inquiry

LEDGER = select(CleanupRun).order_by(CleanupRun.id)


def count_claim_statements(app) -> list[str]:
    statements: list[str] = []

    def record(_conn, _cursor, statement, parameters, *_args):
        # Any statement naming the claim's table: what admins choose lives in ``preferences``, so an
        # ordinary submission that is not due names ``settings`` nowhere.
        if re.search(r"\bsettings\b", statement):
            statements.append(statement)

    event.listen(db.engine_of(app), "before_cursor_execute", record)
    return statements


# --- When it runs ------------------------------------------------------------


def test_the_first_ever_request_claims_and_runs(client, db_session, clock, query):
    (old,) = add_inquiries(db_session, aged_inquiries(clock, [200]))
    assert submit_inquiry(client) == 201
    [run] = query(LEDGER)
    assert (run.trigger, run.status) == ("inquiry_api", "ok")
    assert json.loads(run.deleted)["inquiries"] == 1
    assert old not in query(select(Inquiry.id))


def test_the_cleanup_runs_only_when_the_response_is_closed(client, app, query):
    response = client.post("/api/inquiries", json=VALID)
    assert response.status_code == 201
    settle(app)
    assert query(LEDGER) == []
    response.close()
    settle(app)
    assert [run.trigger for run in query(LEDGER)] == ["inquiry_api"]


def test_the_run_starts_once_the_request_that_follows_has_been_served(client, app, query):
    entered, release = threading.Event(), threading.Event()

    @app.get("/_followup")
    def followup():
        entered.set()
        assert release.wait(30)
        return "served"

    other = threading.Thread(target=lambda: app.test_client().get("/_followup"))
    with client.post("/api/inquiries", json=VALID) as response:
        assert response.status_code == 201
        other.start()  # the next request, already in flight when the response closes
        assert entered.wait(30)
    try:
        other.join(0.5)  # time enough for the run to start, were it not waiting
        assert query(LEDGER) == []
    finally:
        release.set()
    other.join(30)
    settle(app)
    assert [run.status for run in query(LEDGER)] == ["ok"]


def test_a_streamed_response_triggers_the_cleanup_after_its_last_chunk(app, query):
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
    assert query(LEDGER) == []
    assert response.get_data(as_text=True) == "ab"
    settle(app)
    assert query(LEDGER) == []
    response.close()
    settle(app)
    assert [run.trigger for run in query(LEDGER)] == ["streamed"]


def test_the_interval_is_respected_with_no_database_work_when_not_due(client, app, clock, query):
    submit_inquiry(client)
    statements = count_claim_statements(app)
    clock.advance(minutes=59)
    submit_inquiry(client)
    assert statements == []  # the process knew: no claim statement at all
    clock.advance(minutes=1)
    submit_inquiry(client)
    assert len(query(LEDGER)) == 2
    assert any("INSERT INTO settings" in statement for statement in statements)


def test_a_not_due_submission_names_no_settings_at_all(client, app, clock, query):
    submit_inquiry(client)  # the claim: this process learns when the next cleanup is due
    clock.advance(seconds=5)  # past every once-a-second memory: the word list, the notification settings
    statements: list[str] = []
    event.listen(
        db.engine_of(app), "before_cursor_execute", lambda _c, _cur, statement, *_a: statements.append(statement)
    )
    assert submit_inquiry(client) == 201
    assert [status for (status,) in query.rows(select(Inquiry.status))] == ["inbox", "inbox"]
    # The word list and the notification settings, read again, from the preferences.
    assert len([statement for statement in statements if "FROM preferences" in statement]) == 2
    assert [statement for statement in statements if re.search(r"\bsettings\b", statement)] == []


def test_a_process_that_lost_the_claim_learns_when_it_is_next_due(app, app_config, make_app, clock, query):
    other = make_app(app_config)  # another worker process: its own memory
    submit_inquiry(app.test_client())
    clock.advance(minutes=10)
    statements = count_claim_statements(other)
    submit_inquiry(other.test_client())
    assert len(statements) == 2  # the lost claim, then one read of the stored value
    clock.advance(minutes=10)
    submit_inquiry(other.test_client())
    assert len(statements) == 2
    clock.advance(minutes=41)
    submit_inquiry(other.test_client())
    assert [run.trigger for run in query(LEDGER)] == ["inquiry_api", "inquiry_api"]


# --- Faults ----------------------------------------------------------------------


def failing_on_second_batch(target: Target) -> Target:
    calls = []

    def where(moment):
        calls.append(moment)
        if len(calls) == 2:
            raise RuntimeError("disk on fire")
        return target.where(moment)

    return Target(target.name, target.model, where, target.age)


@pytest.fixture
def batches_of_two(app_config):
    app_config.update(CLEANUP_BATCH_SIZE=2, CLEANUP_YIELD=0)


@pytest.mark.usefixtures("batches_of_two")
def test_an_exception_in_a_batch_is_recorded_and_the_response_unaffected(client, app, db_session, clock, query):
    targets = state.of(app).targets
    at = next(i for i, target in enumerate(targets) if target.name == "inquiries")
    targets[at] = failing_on_second_batch(targets[at])
    add_inquiries(db_session, aged_inquiries(clock, [300, 200, 190]))
    assert submit_inquiry(client) == 201
    [run] = query(LEDGER)
    assert (run.status, run.error) == ("error", "RuntimeError while deleting from inquiries")
    assert json.loads(run.deleted)["inquiries"] == 2  # the committed batch stays deleted
    assert query.using(claim.stored) == epoch_ms(clock())  # released: not left running


def test_a_failure_outside_the_batches_is_logged_and_never_reaches_the_response(client, monkeypatch, caplog):
    def database_gone(trigger, should_stop):
        raise ConnectionError("database gone")

    monkeypatch.setattr(runs, "run_if_due", database_gone)
    with caplog.at_level(logging.ERROR, logger="app.core.background"):
        assert submit_inquiry(client) == 201
    assert "cleanup after a response failed (inquiry_api)" in caplog.text
