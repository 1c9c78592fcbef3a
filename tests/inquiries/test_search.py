"""The search over name, email and message, and its index following every change (``app.inquiries.search``)."""

from __future__ import annotations

import random
import re
import string

import pytest
import sqlalchemy as sa
from sqlalchemy import select, update

from app import cleanup
from app.admin.inquiries import listed
from app.core import db
from app.core.db import make_engine
from app.core.migrate import upgrade
from app.inquiries import search
from app.inquiries.merging import MERGE_CROWDED
from app.models import Inquiry
from tests.factories import add_inquiries, inquiry
from tests.helpers import csrf_token
from tests.project.test_migrations import _downgrade

ROW_LINK = re.compile(r'href="/admin/inquiries/(\d+)"')
MARKER = "zebracorn-4711"


def found(client, text: str, path: str = "/admin/") -> list[int]:
    page = client.get(path, query_string={"q": text}).get_data(as_text=True)
    return sorted(int(row) for row in ROW_LINK.findall(page))


def post(client, path, data):
    return client.post(path, data={**data, "csrf_token": csrf_token(client, "/admin/")})


def indexed(query, db_kind, text: str = MARKER) -> list[int]:
    """SQLite: the rowids the FTS index still holds for ``text``;
    PostgreSQL: none to check (the index is the table's)."""
    if db_kind != "sqlite":
        return []
    return query.using(lambda session: search.index_rowids(session, text))


def fts_rows(query, row_id: int) -> int:
    """SQLite: whether the FTS index still has a document (its size record) for ``row_id``."""
    return query.scalar(sa.text("SELECT count(*) FROM submissions_fts_docsize WHERE id = :id").bindparams(id=row_id))


def test_search_finds_text_in_the_message_case_insensitively(admin_client, db_session, clock):
    ids = add_inquiries(
        db_session,
        [
            inquiry(clock, message="Our invoice number 88-41 is wrong"),
            inquiry(clock, message="Bitte um Rückruf, Größe XL"),
            inquiry(clock, message="nothing to see"),
        ],
    )
    assert found(admin_client, "INVOICE NUMBER") == [ids[0]]
    assert found(admin_client, "88-41") == [ids[0]]
    assert found(admin_client, "Rückruf") == [ids[1]]
    assert found(admin_client, "ING") == [ids[2]]
    assert found(admin_client, "absent text") == []


@pytest.mark.parametrize("text", ["a", "xy", "  x  "])
def test_a_search_needs_three_characters(admin_client, text):
    response = admin_client.get("/admin/", query_string={"q": text})
    assert response.status_code == 400
    assert "Search for at least 3 characters." in response.get_data(as_text=True)
    assert 'role="search"' in response.get_data(as_text=True)  # explained on the inbox page itself


@pytest.mark.parametrize("text", ['say "hi"', "a OR b", "NEAR(x y)", "col:umn", "xy*", "^start", "'quoted'"])
def test_search_text_is_never_read_as_query_syntax(admin_client, db_session, clock, text):
    ids = add_inquiries(db_session, [inquiry(clock, message=f"before {text} after"), inquiry(clock, message="other")])
    assert found(admin_client, text) == [ids[0]]


def test_common_text_walks_the_folder_instead_of_the_index(admin_client, db_session, clock, monkeypatch):
    monkeypatch.setattr(search, "CANDIDATE_LIMIT", 3)
    ids = add_inquiries(db_session, [inquiry(clock, message=f"delivery {i}") for i in range(5)])
    add_inquiries(db_session, [inquiry(clock, message="other")])
    assert found(admin_client, "DELIVERY") == ids
    assert found(admin_client, "delivery 3") == [ids[3]]


@pytest.mark.parametrize("db_kind", ["sqlite"])  # PostgreSQL folds as its LC_CTYPE does (the tests' cluster: C)
@pytest.mark.parametrize("candidates", [search.CANDIDATE_LIMIT, 3], ids=["rare text: the index", "common: the walk"])
def test_rare_and_common_text_fold_every_letters_case_alike(admin_client, db_session, clock, monkeypatch, candidates):
    monkeypatch.setattr(search, "CANDIDATE_LIMIT", candidates)
    ids = add_inquiries(db_session, [inquiry(clock, message=f"Grüße aus MÜNCHEN, Ärger Nr. {i}") for i in range(5)])
    (greek,) = add_inquiries(db_session, [inquiry(clock, name="ΣΩΚΡΆΤΗΣ Παππάς", message="other")])
    assert found(admin_client, "münchen") == ids
    assert found(admin_client, "ärger nr. 3") == [ids[3]]
    assert found(admin_client, "GRÜSSE") == []  # case, not spelling: ß stays ß
    assert found(admin_client, "σωκράτης") == [greek]
    assert found(admin_client, "aus münchen") == ids  # ASCII beside the rest


def test_inquiries_the_index_names_are_looked_up_by_id_not_by_walking_the_folder(
    app, admin_client, db_session, clock, db_kind
):
    """SQLite's planner, with no statistics, walked the folder's index for them: 263 ms at 1,100,000 rows."""
    ids = add_inquiries(db_session, [*[inquiry(clock, message=MARKER) for _ in range(16)], inquiry(clock)])
    statements = []
    sa.event.listen(db.engine_of(app), "before_cursor_execute", lambda *call: statements.append(call[2:4]))
    assert found(admin_client, MARKER) == ids[:16]
    by_id = [(sql, parameters) for sql, parameters in statements if "submissions.id IN" in sql]
    assert len(by_id) == (2 if db_kind == "sqlite" else 0)  # the page and its count of matches
    for sql, parameters in by_id:
        rows = db_session.connection().exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", parameters)
        plan = " ".join(str(row[-1]) for row in rows)
        assert "PRIMARY KEY" in plan and "ix_submissions_status" not in plan, plan


def test_search_covers_the_spam_folder_too(admin_client, db_session, clock):
    (spam,) = add_inquiries(db_session, [inquiry(clock, message=MARKER, status="spam")])
    assert found(admin_client, MARKER) == []
    assert found(admin_client, MARKER, "/admin/spam") == [spam]


def test_an_edited_inquiry_is_found_by_its_new_text_only(admin_client, db_session, clock, query, db_kind):
    (row,) = add_inquiries(db_session, [inquiry(clock, message="old words")])
    db_session.execute(update(Inquiry).where(Inquiry.id == row).values(message=f"new {MARKER}"))
    db_session.commit()
    assert found(admin_client, "old words") == [] and found(admin_client, MARKER) == [row]
    assert indexed(query, db_kind) == ([row] if db_kind == "sqlite" else [])


def test_an_inquiry_deleted_by_an_admin_is_gone_from_the_index(admin_client, db_session, clock, query, db_kind):
    gone, kept = add_inquiries(db_session, [inquiry(clock, message=MARKER), inquiry(clock, message="keep me")])
    assert found(admin_client, MARKER) == [gone]
    post(admin_client, "/admin/inquiries/delete", {"ids": [gone], "confirm": "1"})
    assert found(admin_client, MARKER) == [] and found(admin_client, "keep me") == [kept]
    assert indexed(query, db_kind) == []
    if db_kind == "sqlite":
        assert (fts_rows(query, gone), fts_rows(query, kept)) == (0, 1)


def test_spam_deleted_all_at_once_is_gone_from_the_index(admin_client, db_session, clock, query, db_kind):
    ids = add_inquiries(db_session, [inquiry(clock, message=f"{MARKER} {i}", status="spam") for i in range(3)])
    post(admin_client, "/admin/spam/delete-all", {"confirm": "1", "through": str(max(ids))})
    assert found(admin_client, MARKER, "/admin/spam") == []
    assert indexed(query, db_kind) == []
    if db_kind == "sqlite":
        assert [fts_rows(query, row) for row in ids] == [0, 0, 0]


def test_inquiries_deleted_by_cleanup_batches_are_gone_from_the_index(app, db_session, clock, query, db_kind):
    expired = add_inquiries(db_session, [inquiry(clock, days_old=200, message=f"{MARKER} {i}") for i in range(7)])
    (fresh,) = add_inquiries(db_session, [inquiry(clock, days_old=1, message=f"{MARKER} fresh")])
    app.config["CLEANUP_BATCH_SIZE"] = 2  # several batches
    with app.app_context():
        run = cleanup.run("test", force=True)
    assert run.status == "ok"
    assert query(select(Inquiry.id)) == [fresh]
    assert indexed(query, db_kind) == ([fresh] if db_kind == "sqlite" else [])
    if db_kind == "sqlite":
        assert [fts_rows(query, row) for row in expired] == [0] * 7


def merging(query) -> tuple[str | None, str | None]:
    """SQLite: FTS5's stored ``automerge`` and ``crisismerge`` for the search index (None: never set)."""
    stored = dict(
        query.using(
            lambda session: session.execute(
                sa.text("SELECT k, v FROM submissions_fts_config WHERE k IN ('automerge', 'crisismerge')")
            ).all()
        )
    )
    return stored.get("automerge"), stored.get("crisismerge")


def test_during_a_cleanup_run_and_its_purge_only_the_run_merges_the_index_then_fts5_merges_again(
    app, db_session, clock, query, db_kind
):
    add_inquiries(db_session, [inquiry(clock, days_old=200, message=f"{MARKER} {i}") for i in range(12)])
    (fresh,) = add_inquiries(db_session, [inquiry(clock, days_old=1, message=f"{MARKER} fresh")])
    app.config["CLEANUP_BATCH_SIZE"] = 2  # six batches
    asked = []

    def look() -> bool:  # the run asks after each batch whether to stop, and the purge after each step
        asked.append(merging(query) if db_kind == "sqlite" else None)
        return False

    with app.app_context():
        run = cleanup.run("test", force=True, should_stop=look)
    assert run.status == "ok" and query(select(Inquiry.id)) == [fresh]
    if db_kind == "sqlite":
        # Automerge off and crisis merges out of reach while the batches merge in steps of their own, and
        # through the purge after the run (asked between its steps too); FTS5's defaults once it has ended.
        assert len(asked) >= 7 and set(asked) == {(0, search.QUIET_CRISISMERGE)}
        assert merging(query) == (search.FTS5_AUTOMERGE, search.FTS5_CRISISMERGE) == (4, 16)
        query.using(
            lambda session: session.execute(
                sa.text("INSERT INTO submissions_fts(submissions_fts) VALUES ('integrity-check')")
            )
        )
        assert indexed(query, db_kind) == [fresh]
    else:
        assert len(asked) >= 6  # PostgreSQL's search index needs no merging
    assert query.using(
        lambda session: list(session.scalars(select(Inquiry.id).where(listed(session, query=MARKER))))
    ) == [fresh]


def crowded(query) -> int:
    """SQLite: the most segments one level of the search index holds (``search.crowded_level``)."""
    return max(
        search.segments_per_level(
            query.scalar(sa.text(f"SELECT block FROM {search.FTS_TABLE}_data WHERE id = {search.STRUCTURE_ROWID}"))
        )
    )


def test_a_run_merges_a_crowded_level_of_the_index_down_before_its_next_batch(app, db_session, clock, query, db_kind):
    # Visitors' inserts while the merging is the run's: each adds a segment of several pages to level 0.
    if db_kind == "sqlite":
        with app.app_context(), db.get_engine().connect() as connection:
            search.set_merging(connection, 0, search.QUIET_CRISISMERGE)
    letters = random.Random(4711)  # text of many distinct trigrams: a segment of several pages per insert
    words = [f"{MARKER}-{i}-" + "".join(letters.choices(string.ascii_lowercase, k=3000)) for i in range(40)]
    for text in words:
        add_inquiries(db_session, [inquiry(clock, days_old=1, message=text)])
    add_inquiries(db_session, [inquiry(clock, days_old=200, message=MARKER) for _ in range(4)])
    if db_kind == "sqlite":
        assert crowded(query) >= 40
    app.config["CLEANUP_BATCH_SIZE"] = 2
    after_batches = []

    def look() -> bool:
        after_batches.append(crowded(query) if db_kind == "sqlite" else 0)
        return False

    with app.app_context():
        run = cleanup.run("test", force=True, should_stop=look)
    assert run.status == "ok"
    # One 64-page step a batch leaves level 0 as crowded (a merge under way keeps its inputs on the level).
    assert after_batches and after_batches[0] < MERGE_CROWDED
    assert (
        query.using(lambda session: len(session.scalars(select(Inquiry.id).where(listed(session, query=MARKER))).all()))
        == 40
    )


def test_the_structure_record_of_fts5_version_2_is_read_too():
    def varints(*values: int) -> bytes:
        assert all(value < 0x80 for value in values)
        return bytes(values)

    # cookie, the version 2 marker, 2 levels, 3 segments, write counter; level 0: no merge, 2 segments of
    # 8 numbers each; level 1: no merge, 1 segment.
    record = b"\x00\x00\x00\x01" + search.STRUCTURE_V2 + varints(2, 3, 5, 0, 2) + varints(*range(1, 9)) * 2
    record += varints(0, 1) + varints(*range(1, 9))
    assert search.segments_per_level(record) == [2, 1]
    # Version 1: three numbers a segment; a varint of two bytes (200 pages).
    assert search.segments_per_level(
        b"\x00\x00\x00\x01" + varints(1, 2, 0, 0, 2, 1, 1) + b"\x81\x48" + varints(2, 1, 3)
    ) == [2]


def test_a_run_that_deletes_nothing_gives_fts5_its_merging_back_at_once(app, db_session, clock, query, db_kind):
    add_inquiries(db_session, [inquiry(clock, days_old=1, message=MARKER)])
    with app.app_context():
        run = cleanup.run("test", force=True)
    assert run.status == "ok" and run.forgotten_at is None  # nothing deleted, nothing to forget
    if db_kind == "sqlite":
        assert merging(query) == (4, 16)


def test_the_migration_indexes_inquiries_that_already_exist(database_url, db_kind):
    engine = make_engine(database_url)
    _downgrade(engine, "0002")
    with engine.begin() as connection:
        connection.execute(
            sa.text(
                "INSERT INTO submissions (name, email, message, created_at, legal_hold, status) "
                "VALUES ('Old', 'old@example.com', :message, '2026-05-01 00:00:00', false, 'inbox')"
            ),
            {"message": f"from before {MARKER}"},
        )
    upgrade(engine)
    with engine.connect() as connection:
        if db_kind == "sqlite":
            assert connection.execute(
                sa.text("SELECT rowid FROM submissions_fts WHERE submissions_fts MATCH :phrase"),
                {"phrase": search.fts_phrase(MARKER)},
            ).scalars().all() == [1]
        else:
            names = (
                connection.execute(
                    sa.text(
                        "SELECT indexname FROM pg_indexes WHERE tablename = 'submissions' AND indexname LIKE '%trgm'"
                    )
                )
                .scalars()
                .all()
            )
            assert sorted(names) == sorted(search.TRIGRAM_INDEXES)
    engine.dispose()


def test_a_rare_search_is_answered_from_the_index(app, db_session, clock, db_kind):
    ids = add_inquiries(db_session, [inquiry(clock, message=MARKER), inquiry(clock, message="other")])
    # PostgreSQL's search is the ILIKE test itself; whether a trigram index can serve it is asked below.
    found = listed(db_session, query=MARKER) if db_kind == "sqlite" else search.contains(db_session, MARKER)
    statement = select(Inquiry.id).where(found)
    compiled = statement.compile(db_session.get_bind(), compile_kwargs={"literal_binds": True})
    if db_kind == "sqlite":
        # The index gives the ids; the rows are then looked up by primary key, never scanned.
        assert f"IN ({ids[0]})" in str(compiled)
        plan = " ".join(str(row[-1]) for row in db_session.execute(sa.text(f"EXPLAIN QUERY PLAN {compiled}")))
        assert "PRIMARY KEY" in plan and "SCAN" not in plan
        assert str(listed(db_session, query="absent text").compile(compile_kwargs={"literal_binds": True})) in (
            "false",
            "0 = 1",
        )
    else:
        db_session.execute(sa.text("SET enable_seqscan = off"))  # a tiny table: ask whether the index can serve
        plan = "\n".join(db_session.execute(sa.text(f"EXPLAIN {compiled}")).scalars())
        assert "ix_submissions_message_trgm" in plan


def test_the_index_purge_goes_in_steps_stops_when_told_and_finishes_later(app, db_session, clock, query, db_kind):
    ids = add_inquiries(
        db_session, [inquiry(clock, message=f"{MARKER} {i} " + "lorem ipsum dolor " * 150) for i in range(300)]
    )
    db_session.execute(sa.delete(Inquiry).where(Inquiry.id.in_(ids[::2])))
    db_session.commit()
    engine = db.engine_of(app)
    checks = []

    def stop_after_one_step() -> bool:
        checks.append(1)
        return len(checks) > 1

    # On SQLite the index is more than one step's pages, so the first step does not finish it.
    assert search.forget_deleted(engine, stop_after_one_step) is (db_kind == "postgresql")
    assert search.forget_deleted(engine) is True
    if db_kind == "sqlite":
        assert sorted(indexed(query, db_kind)) == sorted(ids[1::2])
        checks.clear()
        assert search.forget_deleted(engine, stop_after_one_step) is True and len(checks) == 1  # nothing left


def test_the_purges_steps_are_sized_by_how_long_the_last_one_held_the_lock():
    """After a large delete a step reads many pages of deleted entries for each it writes: a slow step's
    successor writes fewer pages, a quick one's at most twice as many, within the bounds."""
    aim = search.FORGET_STEP_SECONDS
    assert search.next_pages(64, 10 * aim) == 6
    assert search.next_pages(64, aim / 10) == 128
    assert search.next_pages(64, aim) == 64
    assert search.next_pages(4, 100 * aim) == search.FORGET_PAGES_LEAST
    assert search.next_pages(search.FORGET_PAGES_MOST, aim / 10) == search.FORGET_PAGES_MOST
