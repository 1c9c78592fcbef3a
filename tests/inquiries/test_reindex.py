"""The search index built again beside the one in use after a large delete (``app.inquiries.reindex``)."""

from __future__ import annotations

import sqlite3
import threading

import pytest
import sqlalchemy as sa
from sqlalchemy import delete, update
from sqlalchemy.engine import make_url

from app import cleanup
from app.core import db
from app.inquiries import reindex, search
from app.models import Inquiry
from tests.conftest import Query
from tests.factories import add_inquiries, inquiry


def token(number: int) -> str:
    """A word only inquiry ``number``'s message holds (trigrams: any substring of it is found)."""
    return f"qx{number:04d}zv"


def add_numbered(db_session, clock, numbers, days_old: float = 1) -> dict[int, int]:
    """Inquiries ``days_old`` whose messages hold ``token(n)`` for each n; n -> id."""
    messages = [f"About {token(n)} and more " * 20 for n in numbers]
    ids = add_inquiries(db_session, [inquiry(clock, days_old, message=message) for message in messages])
    return dict(zip(numbers, ids, strict=True))


def index_holds(query, numbers) -> dict[int, list[int]]:
    """n -> the rowids the search index holds for ``token(n)``."""
    return {n: query.using(lambda session, n=n: search.index_rowids(session, token(n))) for n in numbers}


def index_schema(query) -> list[tuple]:
    """The search index's tables and triggers as the schema holds them (quotes aside: a renamed table's
    name is quoted, a new shadow table's not)."""
    rows = query.rows(
        sa.text("SELECT type, name, sql FROM sqlite_master WHERE name LIKE 'submissions_fts%' ORDER BY name")
    )
    return [(kind, name, (sql or "").replace('"', "").replace("'", "")) for kind, name, sql in rows]


def stop_after(steps: int):
    checks = []

    def should_stop() -> bool:
        checks.append(1)
        return len(checks) > steps

    return should_stop


def test_a_rebuilt_index_holds_the_kept_inquiries_only_and_is_as_migrated(app, db_session, clock, query, db_kind):
    numbered = add_numbered(db_session, clock, range(120))
    db_session.execute(delete(Inquiry).where(Inquiry.id.in_([numbered[n] for n in range(100)])))
    db_session.commit()
    engine = db.engine_of(app)
    assert reindex.worth_rebuilding(engine, 100) is (db_kind == "sqlite")  # 100 went, 20 are kept
    assert reindex.worth_rebuilding(engine, 20) is False
    if db_kind != "sqlite":
        assert reindex.rebuild_index(engine, True) is reindex.Rebuilt.NONE  # nothing to do: vacuum forgets
        return
    migrated = index_schema(query)
    assert reindex.rebuild_index(engine, True) is reindex.Rebuilt.FRESH
    assert index_schema(query) == migrated  # the old index dropped, the new one named and triggered as migrated
    assert index_holds(query, range(120)) == {n: [numbered[n]] if n >= 100 else [] for n in range(120)}
    # The new index is the one the triggers keep in step now.
    (fresh,) = add_inquiries(db_session, [inquiry(clock, message=f"Now {token(500)}")])
    db_session.execute(delete(Inquiry).where(Inquiry.id == numbered[110]))
    db_session.commit()
    assert index_holds(query, [500, 110]) == {500: [fresh], 110: []}


def structure(query, table: str = search.FTS_TABLE) -> list[int]:
    """Each level's segment count in ``table``'s FTS5 structure record."""
    block = query.scalar(sa.text(f"SELECT block FROM {table}_data WHERE id = {search.STRUCTURE_ROWID}"))
    return search.segments_per_level(block)


def merging_settings(query) -> dict[str, int]:
    return dict(query.rows(sa.text("SELECT k, v FROM submissions_fts_config WHERE k IN ('automerge', 'crisismerge')")))


@pytest.mark.parametrize("db_kind", ["sqlite"])  # PostgreSQL has no index to rebuild
def test_a_rebuilt_index_comes_into_use_merged_into_one_segment_with_fts5s_defaults(
    app, db_session, clock, query, db_kind, monkeypatch
):
    """Filled in steps, the new index holds a segment a step and merges under way: left so, FTS5 carries them
    on inside visitors' inserts once its defaults are back (a visitor's write held the lock 3.5 s after
    300,000 rows went)."""
    numbered = add_numbered(db_session, clock, range(400))
    monkeypatch.setattr(reindex, "FILL_ROWS_LEAST", reindex.FILL_ROWS)  # eight steps of copying, whatever the time
    monkeypatch.setattr(reindex, "FILL_ROWS_MOST", reindex.FILL_ROWS)
    assert reindex.rebuild_index(db.engine_of(app), True) is reindex.Rebuilt.FRESH
    assert sum(structure(query)) == 1
    assert merging_settings(query) == {"automerge": search.FTS5_AUTOMERGE, "crisismerge": search.FTS5_CRISISMERGE}
    assert index_holds(query, range(0, 400, 7)) == {n: [numbered[n]] for n in range(0, 400, 7)}


@pytest.mark.parametrize("db_kind", ["sqlite"])  # PostgreSQL has no index to rebuild
def test_visitors_segments_added_while_the_old_index_goes_are_merged_down_before_fts5s_defaults_return(
    app, db_session, clock, query, db_kind, monkeypatch
):
    """With FTS5's crisis merge back at 16, the next insert would merge a level of 16 or more segments whole."""
    add_numbered(db_session, clock, range(100))
    done = []
    step = reindex.Steps.step
    monkeypatch.setattr(reindex.Steps, "step", lambda self: done.append(step(self)) or done[-1])
    engine = db.engine_of(app)
    assert reindex.rebuild_index(engine, True, lambda: "swap" in done) is reindex.Rebuilt.STOPPED
    for n in range(100, 100 + search.FTS5_CRISISMERGE + 4):  # a segment each, FTS5's merging still off
        add_numbered(db_session, clock, [n])
    assert max(structure(query)) >= search.FTS5_CRISISMERGE
    assert reindex.rebuild_index(engine, False) is reindex.Rebuilt.FINISHED
    assert max(structure(query)) < search.FTS5_CRISISMERGE
    assert merging_settings(query) == {"automerge": search.FTS5_AUTOMERGE, "crisismerge": search.FTS5_CRISISMERGE}


def test_a_stopped_rebuild_keeps_in_step_with_writes_and_finishes_later(app, db_session, clock, query, db_kind):
    numbered = add_numbered(db_session, clock, range(300))
    engine = db.engine_of(app)
    # Started and one step of copying (the first step copies ``FILL_ROWS`` inquiries), then stopped.
    rebuilt = reindex.rebuild_index(engine, True, stop_after(2))
    if db_kind != "sqlite":
        assert rebuilt is reindex.Rebuilt.NONE
        return
    assert rebuilt is reindex.Rebuilt.STOPPED
    copied = query.scalar(sa.text(f"SELECT max(id) FROM {reindex.NEXT}_docsize"))
    assert copied == numbered[reindex.FILL_ROWS - 1]
    # Meanwhile: one copied inquiry deleted, one not yet copied, one copied edited, one added.
    db_session.execute(delete(Inquiry).where(Inquiry.id.in_([numbered[3], numbered[200]])))
    db_session.execute(update(Inquiry).where(Inquiry.id == numbered[7]).values(message=f"Now {token(700)}"))
    (added,) = add_inquiries(db_session, [inquiry(clock, message=f"New {token(800)}")])
    db_session.commit()
    # Searches still read the index in use, which the writes kept in step as ever.
    assert index_holds(query, [3, 7, 200, 700, 800]) == {3: [], 7: [], 200: [], 700: [numbered[7]], 800: [added]}

    # A forgetting that asks no rebuild finishes this one, which may hold what went meanwhile: the purge follows.
    assert reindex.rebuild_index(engine, False) is reindex.Rebuilt.FINISHED
    assert reindex.rebuild_index(engine, False) is reindex.Rebuilt.NONE
    expected = {n: [numbered[n]] for n in range(300) if n not in (3, 7, 200)}
    assert index_holds(query, range(300)) == {n: expected.get(n, []) for n in range(300)}
    assert index_holds(query, [700, 800]) == {700: [numbered[7]], 800: [added]}
    tables = query(
        sa.text("SELECT name FROM sqlite_master WHERE name IN (:a, :b)").bindparams(a=reindex.NEXT, b=reindex.OLD)
    )
    assert tables == []


def test_a_cleanup_that_deletes_more_than_it_keeps_rebuilds_the_index(
    app, db_session, clock, query, db_kind, monkeypatch
):
    numbered = add_numbered(db_session, clock, range(20), days_old=400) | add_numbered(db_session, clock, range(20, 30))
    done = []
    step = reindex.Steps.step

    def counted(self):
        result = step(self)
        done.append(result)
        return result

    monkeypatch.setattr(reindex.Steps, "step", counted)
    with app.app_context():
        run = cleanup.run("test", force=True)
    assert run is not None and run.status == "ok"
    if db_kind == "sqlite":
        assert {"start", "swap", "dropped"} <= set(done) and done[-1] is None
        assert index_holds(query, range(30)) == {n: [numbered[n]] if n >= 20 else [] for n in range(30)}
    else:
        assert done == []


@pytest.mark.parametrize("db_kind", ["sqlite"])  # only SQLite refuses a lock after a busy timeout
def test_a_rebuild_refused_the_lock_past_the_busy_timeout_tries_again_and_finishes(
    app_config, make_app, clock, db_kind
):
    app = make_app({**app_config, "DB_STATEMENT_TIMEOUT": 0.05})
    with app.app_context():
        numbered = add_numbered(db.get_session(), clock, range(10))
    database = make_url(app.config["DATABASE_URL"]).database
    holder = sqlite3.connect(database, isolation_level=None, check_same_thread=False)  # released by a timer
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.3, holder.execute, ["COMMIT"])
    release.start()
    try:
        assert reindex.rebuild_index(db.engine_of(app), True) is reindex.Rebuilt.FRESH
    finally:
        release.join()
        holder.close()
    assert index_holds(Query(app), range(10)) == {n: [numbered[n]] for n in range(10)}
