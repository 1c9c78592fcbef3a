"""The search over inquiries: name, email and message, a case-insensitive substring match.

An index serves it on each database (migration 0004 makes both); this is
where the dialect difference lives (see ``app.core.dialect``):

* SQLite: the FTS5 table ``submissions_fts`` (trigram tokenizer, external
  content: the index only, no copy of the text), kept in step with
  ``submissions`` by triggers, so every delete (a cleanup batch, an admin's
  delete, "Delete all spam") removes the inquiry from the index in the same
  transaction. A search asks the index first, with a limit: when at most
  ``CANDIDATE_LIMIT`` inquiries contain the text, the page reads only those,
  by id (none at all when none does); when more do, the text is common and walking the
  folder newest first (its ``(status, created_at, id)`` index) with ``LIKE``
  fills a page within a few thousand rows.
* PostgreSQL: ``ILIKE`` on each column, each with a GIN trigram index
  (``pg_trgm``); the planner chooses between the indexes (rare text) and the
  newest-first walk (common text).

The text of the thread is searched too: the admins' replies (``app.replies``; not the acknowledgements,
whose text is the form's) and the people's answers in it (``app.conversations``; not held mail), as a
plain substring test on ``replies.body`` and ``inbound_messages.body``: on SQLite a scan of those
tables, kept out of FTS5 (a second index to keep in step and to forget deleted text from) since they
hold far fewer rows than the inquiries, so a deleted answer leaves nothing behind but its freed pages,
zeroed by ``secure_delete``, and the WAL the forgetting truncates (``app.inquiries.gone``); on
PostgreSQL each with its own trigram index (migrations 0012 and 0019).

Trigrams cannot serve one or two characters, which would read every
message: the inbox asks for at least three. Both keep the inbox's keyset
pagination: the search only narrows the rows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy import ColumnElement, Connection, Engine, column, func, literal_column, or_, select, table, union
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from app.core.db import UNICODE_LOWER, WRITE_OPTION, checkpoint, lock_refused, sqlite_driver
from app.core.pacing import Pacer
from app.models import InboundMessage, Inquiry, MessageState, Reply, ReplyKind

log = logging.getLogger(__name__)

CANDIDATE_LIMIT = 20_000
TRIGRAM = 3
LIKE_ESCAPE = "\\"
FTS_TABLE = "submissions_fts"
TRIGRAM_INDEXES = frozenset(f"ix_submissions_{name}_trgm" for name in ("name", "email", "message"))
REPLY_TRIGRAM_INDEX = "ix_replies_body_trgm"  # PostgreSQL: the replies' text (migration 0012)
MESSAGE_TRIGRAM_INDEX = "ix_inbound_messages_body_trgm"  # PostgreSQL: the people's answers (migration 0019)

# Index pages one step of forgetting writes: a step short enough on SQLite's write lock for live writers
# (docs/cleanup.md; figures: docs/benchmarks.md, "Figures behind the code").
FORGET_PAGES = 64  # the first step's, as many as a cleanup batch's merge step: 200 held the lock up to 170 ms
# Each next step's pages are sized so it holds the lock about as long as a cleanup batch does: after a large
# delete a step reads many pages of deleted entries for each page it writes, and 64 pages held it up to 337 ms.
FORGET_STEP_SECONDS, FORGET_PAGES_LEAST, FORGET_PAGES_MOST = 0.03, 4, 256
FORGET_PAUSE = 0.01  # seconds between steps at the least; a step that took longer is followed by as long a pause
MERGE, AUTOMERGE, CRISISMERGE = "merge", "automerge", "crisismerge"  # FTS5's commands with a number
FTS5_AUTOMERGE, FTS5_CRISISMERGE = 4, 16  # FTS5's defaults
# Segments on one level before the write that adds one merges the whole level, while the cleanup merges the
# index in steps of its own: never reached then (a loaded machine's run reached 63 on level 0), and still a
# bound, at most a few levels of it, far from FTS5's limit of 2000 segments, if a run dies before restoring 16.
QUIET_CRISISMERGE = 128
STRUCTURE_ROWID = 10  # FTS5's structure record (FTS5_STRUCTURE_ROWID) in the index's ``_data`` table
STRUCTURE_V2 = b"\xff\x00\x00\x01"  # after the cookie: a version 2 record, eight numbers per segment

_fts = table(FTS_TABLE, column("rowid"))


def found_ids(session: Session, query: str) -> list[int] | None:
    """SQLite: the ids of the inquiries (any folder, any age) containing ``query``, when the index finds at most
    ``CANDIDATE_LIMIT``; None when the search is a ``LIKE`` walk instead (common text, PostgreSQL)."""
    if session.get_bind().dialect.name == "sqlite" and len(query) >= TRIGRAM:
        candidates = _candidates(session, fts_phrase(query))
        if len(candidates) <= CANDIDATE_LIMIT:
            candidates = sorted(set(candidates) | set(session.scalars(_answered_with(session, query))))
            if len(candidates) <= CANDIDATE_LIMIT:
                return candidates
    return None


def _answered_with(session: Session, query: str):
    """The ids of the inquiries whose thread holds ``query``: in an admin's reply, or in the person's answer."""
    replies = select(Reply.inquiry_id).where(_text_contains(session, Reply.body, query), Reply.kind == ReplyKind.REPLY)
    answers = select(InboundMessage.inquiry_id).where(
        _text_contains(session, InboundMessage.body, query), InboundMessage.state == MessageState.THREAD
    )
    return union(replies, answers)


def _text_contains(session: Session, field, query: str) -> ColumnElement[bool]:
    """A thread's text containing ``query``, case-insensitive, as ``contains`` tests the inquiry's columns."""
    if session.get_bind().dialect.name == "sqlite" and any(map(_cased_beyond_ascii, query)):
        return _lowered_contains(field, query)
    return _ilike(field, query)


def contains(session: Session, query: str) -> ColumnElement[bool]:
    """The plain substring test on the three columns, case-insensitive: ``ILIKE``.

    SQLite's ``LIKE`` folds ASCII letters only, while its FTS5 index folds
    every letter, so whether "münchen" found "MÜNCHEN" would depend on how
    common the text is. There a query with letters beyond ASCII that have a
    case is matched on the columns lowered in Python (``db.UNICODE_LOWER``),
    after a ``LIKE`` on the query's longest stretch without such letters, so
    that only rows that can match are lowered (docs/inbox.md). PostgreSQL
    folds case as the database's ``LC_CTYPE`` does.
    """
    fields = (Inquiry.name, Inquiry.email, Inquiry.message)  # and the admins' replies
    if session.get_bind().dialect.name == "sqlite" and any(map(_cased_beyond_ascii, query)):
        return or_(*(_lowered_contains(field, query) for field in fields), *_answered(session, query))
    return or_(*(_ilike(field, query) for field in fields), *_answered(session, query))


def _answered(session: Session, query: str) -> list[ColumnElement[bool]]:
    """The test for inquiries answered with ``query``: their ids, read first (usually none, and then no test
    at all, so the plan of the inquiry's own columns is unchanged; as a list of ids, PostgreSQL still
    combines its trigram indexes with the primary key), or a subquery past ``CANDIDATE_LIMIT``."""
    ids = list(session.scalars(_answered_with(session, query).limit(CANDIDATE_LIMIT + 1)))
    if not ids:
        return []
    return [Inquiry.id.in_(ids if len(ids) <= CANDIDATE_LIMIT else _answered_with(session, query))]


def _ilike(field, text: str) -> ColumnElement[bool]:
    return field.ilike(f"%{escape_like(text)}%", escape=LIKE_ESCAPE)


def _lowered_contains(field, query: str) -> ColumnElement[bool]:
    lowered = func.instr(getattr(func, UNICODE_LOWER)(field), query.lower()) > 0
    stretch = max(_stretches_without_case_beyond_ascii(query), key=len)
    return _ilike(field, stretch) & lowered if stretch.strip() else lowered


def _cased_beyond_ascii(char: str) -> bool:
    return not char.isascii() and char.lower() != char.upper()


def _stretches_without_case_beyond_ascii(text: str) -> list[str]:
    return "".join("\0" if _cased_beyond_ascii(char) else char for char in text).split("\0")


def escape_like(query: str) -> str:
    """``query`` with LIKE wildcards escaped, for a literal substring match."""
    for char in (LIKE_ESCAPE, "%", "_"):
        query = query.replace(char, LIKE_ESCAPE + char)
    return query


def fts_phrase(query: str) -> str:
    """``query`` as one FTS5 phrase: with trigrams, a phrase matches any substring."""
    return '"' + query.replace('"', '""') + '"'


def index_rowids(session: Session, query: str) -> list[int]:
    """SQLite only: the rowids the search index holds for ``query`` (for checks after deletions)."""
    return list(session.scalars(select(_fts.c.rowid).where(_fts_match(fts_phrase(query)))))


def is_search_index(name: str | None) -> bool:
    """Whether a table or index ``name`` belongs to the search index (migrations 0004, 0012 and 0019, not the
    models)."""
    thread = (REPLY_TRIGRAM_INDEX, MESSAGE_TRIGRAM_INDEX)
    return bool(name and (name.startswith(FTS_TABLE) or name in TRIGRAM_INDEXES or name in thread))


def _fts_match(phrase: str) -> ColumnElement[bool]:
    return literal_column(FTS_TABLE).op("MATCH")(phrase)


def _candidates(session: Session, phrase: str) -> list[int]:
    """The ids of up to ``CANDIDATE_LIMIT + 1`` inquiries (any folder, any age) the index finds for the phrase."""
    return list(session.scalars(select(_fts.c.rowid).where(_fts_match(phrase)).limit(CANDIDATE_LIMIT + 1)))


def command(name: str, table: str = FTS_TABLE) -> str:
    """SQLite: the statement giving FTS5's command ``name`` its number (the one parameter) on ``table``."""
    return f"INSERT INTO {table}({table}, rank) VALUES ('{name}', ?)"


def set_merging(connection: Connection, automerge: int, crisismerge: int, table: str = FTS_TABLE) -> None:
    """SQLite: store FTS5's ``automerge`` (0: off) and ``crisismerge`` for the search index, in a transaction of
    its own (stored in the index's config table: every connection's writes follow them)."""
    with connection.begin():
        set_merging_within(connection, automerge, crisismerge, table)


def set_merging_within(connection: Connection, automerge: int, crisismerge: int, table: str = FTS_TABLE) -> None:
    """``set_merging`` inside the transaction under way."""
    connection.exec_driver_sql(command(AUTOMERGE, table), (automerge,))
    connection.exec_driver_sql(command(CRISISMERGE, table), (crisismerge,))


def set_merging_or_warn(connection: Connection, automerge: int, crisismerge: int) -> None:
    """``set_merging``, logged, not raised, when live writers kept the lock for a whole busy timeout (the
    index's merging then stays as it was until the next try)."""
    try:
        set_merging(connection, automerge, crisismerge)
    except OperationalError as error:
        if not lock_refused(error):
            raise
        log.warning(
            "could not set the search index's merging to %d/%d: the database was locked", automerge, crisismerge
        )


def merge_step(driver_connection, pages: int, table: str = FTS_TABLE) -> None:
    """SQLite: up to ``pages`` pages of the search index's pending merges, on the driver's connection."""
    driver_connection.execute(command(MERGE, table), (pages,)).close()


def crowded_level(driver_connection, table: str = FTS_TABLE) -> int:
    """SQLite: the most segments one level of the search index holds now (a write that takes a level to
    ``crisismerge`` merges all of it), read from FTS5's structure record on the driver's connection."""
    row = driver_connection.execute(f"SELECT block FROM {table}_data WHERE id = ?", (STRUCTURE_ROWID,)).fetchone()
    return max(segments_per_level(row[0]), default=0) if row else 0


def segments_per_level(record: bytes) -> list[int]:
    """Each level's segment count in FTS5's structure record, decoded as ``fts5StructureDecode`` does: a
    4-byte cookie, perhaps the version 2 marker, then varints: levels, segments, the write counter, and per
    level the inputs of its merge, its segment count and each segment's numbers (3, or 8 in version 2)."""
    at, per_segment = (8, 8) if record[4:8] == STRUCTURE_V2 else (4, 3)
    levels, at = _varint(record, at)
    at = _varint(record, _varint(record, at)[1])[1]  # the segments in all, the write counter
    counts = []
    for _ in range(levels):
        at = _varint(record, at)[1]  # the inputs of a merge under way
        count, at = _varint(record, at)
        for _ in range(count * per_segment):
            at = _varint(record, at)[1]
        counts.append(count)
    return counts


def _varint(record: bytes, at: int) -> tuple[int, int]:
    """SQLite's varint at ``at`` (big-endian, 7 bits a byte while the top bit is set, the ninth byte whole)
    and where the next value starts."""
    value = 0
    for index in range(at, at + 8):
        value = (value << 7) | (record[index] & 0x7F)
        if record[index] < 0x80:
            return value, index + 1
    return (value << 8) | record[at + 8], at + 9


def forget_deleted(engine: Engine, should_stop: Callable[[], bool] = lambda: False) -> bool:
    """SQLite: rewrite the search index so deleted inquiries leave no entries in it; True when done.

    The triggers remove a deleted inquiry from the index at once, but FTS5
    (before SQLite 3.44's ``secure-delete`` option) only adds a tombstone: the
    trigrams of the deleted text, with their positions, stay in older
    segments until those are merged with it. So after deletions the segments
    are merged into one, which drops both (FTS5's ``optimize``), in steps of
    about ``FORGET_STEP_SECONDS`` (``next_pages``), each its own short write transaction, so live
    writers get in between: the first ``'merge'`` with a negative size puts
    every segment on one level, the next ones carry that merge on until a
    step changes nothing (the procedure FTS5's documentation gives for an
    incremental ``optimize``). The freed pages are zeroed by
    ``secure_delete``; the WAL is truncated after (``app.inquiries.gone``). Its cost
    grows with the whole index, not with what was deleted (docs/cleanup.md).

    It rewrites the whole index, gigabytes of WAL for a large one, so it must
    leave live writers alone: while it runs, ``automerge`` is off and
    ``crisismerge`` raised (no visitor's insert carries its merge on), each
    step is followed by a ``PASSIVE`` checkpoint (the WAL stays small, and no
    visitor's commit copies it) and by a pause as long as the step, so the
    purge holds the write lock half the time at most, and longer while live
    writers queue for the lock (``app.core.pacing``: each step takes it as a
    background writer and learns from its wait). FTS5's defaults come
    back when it ends, however it ends. Stopped by ``should_stop``, it
    returns False and the next one starts over. A no-op on PostgreSQL, whose
    trigram indexes lose dead entries to vacuum (docs/cleanup.md).
    """
    if engine.dialect.name != "sqlite":
        return True
    with engine.connect().execution_options(**{WRITE_OPTION: True}) as connection:
        set_merging_or_warn(connection, 0, QUIET_CRISISMERGE)
        try:
            return _merge_into_one(connection, should_stop)
        finally:
            set_merging_or_warn(connection, FTS5_AUTOMERGE, FTS5_CRISISMERGE)


def _merge_into_one(connection: Connection, should_stop: Callable[[], bool]) -> bool:
    """The steps of ``forget_deleted``: True once a step changed nothing, False when stopped first."""
    driver = sqlite_driver(connection)
    pages, pacer = -FORGET_PAGES, Pacer(ratio=1.0, least=FORGET_PAUSE)
    while not should_stop():
        with pacer.transaction(connection):
            before = driver.total_changes
            merge_step(driver, pages)
            changed = driver.total_changes - before
        pages = next_pages(abs(pages), pacer.held())
        checkpoint(driver)
        if changed < 2:
            return True
        pacer.pause()
    return False


def next_pages(pages: int, took: float, least: int = FORGET_PAGES_LEAST, most: int = FORGET_PAGES_MOST) -> int:
    """The pages of the next merge step (the purge's, or the run's after a batch) after one of ``pages`` that
    held the lock ``took`` seconds: about ``FORGET_STEP_SECONDS`` of it, at most twice as many as before,
    within ``least``..``most`` (the rebuild's steps count rows the same way: ``app.inquiries.reindex``)."""
    scaled = int(pages * FORGET_STEP_SECONDS / max(took, 0.001))
    return max(least, min(most, 2 * pages, scaled))
