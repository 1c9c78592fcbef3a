"""The ledger's hash chain: every run seals its row onto the previous one; ``flask verify-ledger`` finds a break."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, select, update

from app import cleanup
from app.cleanup import chain, runs
from app.core import clock as app_clock
from app.core import db
from app.models import CleanupRun, CleanupStatus
from tests.factories import add_inquiries, aged_inquiries

LEDGER = select(CleanupRun).order_by(CleanupRun.id)


def three_runs(app, clock, db_session) -> list[CleanupRun]:
    for days in (200, 300, 400):
        add_inquiries(db_session, aged_inquiries(clock, [days]))
        with app.app_context():
            assert cleanup.run("cli", force=True) is not None
        clock.advance(hours=2)
    with app.app_context():
        return list(db.get_session().scalars(LEDGER))


def change(app, statement) -> None:
    with app.app_context(), db.transaction(write=True) as session:
        session.execute(statement)


def test_each_run_chains_onto_the_one_before_and_the_chain_verifies(app, clock, db_session, runner):
    first, second, third = three_runs(app, clock, db_session)
    assert first.prev_hash == chain.GENESIS
    assert (second.prev_hash, third.prev_hash) == (first.row_hash, second.row_hash)
    assert len({first.row_hash, second.row_hash, third.row_hash}) == 3
    result = runner.invoke(args=["verify-ledger"])
    assert (result.exit_code, result.output.strip()) == (0, "Ledger chain intact: 3 rows.")


def test_an_edited_row_is_named_and_the_command_exits_1(app, clock, db_session, runner):
    _, second, _ = three_runs(app, clock, db_session)
    change(app, update(CleanupRun).where(CleanupRun.id == second.id).values(deleted='{"inquiries": 0}'))
    result = runner.invoke(args=["verify-ledger"])
    assert result.exit_code == 1
    assert f"broken at run {second.id}: its content does not match its hash (1 rows" in result.output


def test_a_row_deleted_from_the_middle_breaks_the_chain_at_the_next(app, clock, db_session, runner):
    _, second, third = three_runs(app, clock, db_session)
    change(app, delete(CleanupRun).where(CleanupRun.id == second.id))
    result = runner.invoke(args=["verify-ledger"])
    assert result.exit_code == 1 and f"broken at run {third.id}: its previous hash" in result.output


def test_the_oldest_rows_leaving_after_their_keep_leave_an_intact_chain(app, clock, db_session, runner):
    first, _, _ = three_runs(app, clock, db_session)
    change(app, delete(CleanupRun).where(CleanupRun.id == first.id))
    assert runner.invoke(args=["verify-ledger"]).exit_code == 0


def test_a_run_closed_as_abandoned_is_sealed_in_order(app, app_config, clock, runner, query):
    with app.app_context():
        dead = runs._claim_and_open_ledger("cli", app_clock.now(), force=True)  # its process died mid-run
    assert dead is not None
    result = runner.invoke(args=["verify-ledger"])
    assert result.exit_code == 0 and "0 rows" in result.output  # the run in progress is not yet sealed
    clock.advance(seconds=app.config["CLEANUP_LEASE"] + 1)
    with app.app_context():
        assert cleanup.run("cli", force=True) is not None
    abandoned, closing = query(LEDGER)
    assert abandoned.status == CleanupStatus.ABANDONED and closing.prev_hash == abandoned.row_hash
    assert runner.invoke(args=["verify-ledger"]).output.strip() == "Ledger chain intact: 2 rows."


def test_a_running_row_followed_by_another_is_a_break(app, clock, db_session):
    three_runs(app, clock, db_session)
    with app.app_context():
        last = db.get_session().scalars(LEDGER).all()[1]
    change(app, update(CleanupRun).where(CleanupRun.id == last.id).values(row_hash=None, status="running"))
    with app.app_context():
        checked, broken = chain.verify(db.get_session())
    assert checked == 1 and broken is not None and "follows a run still marked running" in broken.reason


def test_the_hash_covers_what_was_stored_not_the_forgotten_time(app, clock, db_session, runner):
    _, second, _ = three_runs(app, clock, db_session)
    later = second.started_at + timedelta(minutes=5)
    change(app, update(CleanupRun).where(CleanupRun.id == second.id).values(forgotten_at=later))
    assert runner.invoke(args=["verify-ledger"]).exit_code == 0
