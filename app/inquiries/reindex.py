"""SQLite: after a large delete, the search index built again beside the one in use, in short steps.

The purge after a delete (``search.forget_deleted``) merges the index into
one segment, which drops the deleted entries. It reads every entry the index
holds, deleted or kept, and FTS5 merges all of one term's entries in one step
whatever the step's page budget (it checks the budget between terms): after
a million expired inquiries were deleted, one step of 4 pages held SQLite's
write lock 6 s and one of 112 pages 8 s, and visitors waited past their busy
timeout (docs/benchmarks.md). Built again, the index reads only what is kept,
so its steps, and what any one term holds, grow with the inquiries kept, not
with those deleted. So when a run deleted more inquiries than it kept
(``worth_rebuilding``), the index is built again instead of purged (the new
index never held what the run deleted; anything deleted during the rebuild
has a forgetting of its own, which purges once the rebuild is done):

1. ``submissions_fts_next`` is made as migration 0004 makes the index, FTS5's
   merging off for it (the rebuild merges it, ``IndexMerging``), with three
   triggers that keep it in step with the inquiries it holds already: those
   up to the highest id it holds (its ``_docsize`` table has a row per
   inquiry held, keyed by id).
2. Each step copies the next inquiries by id, as many as hold the write lock
   about ``search.FORGET_STEP_SECONDS``, then merges the new index a step
   or more (more while a level is crowded), each its own transaction.
3. Once a step has copied every inquiry, the same step merges the new index
   towards one segment (the purge's incremental ``optimize``, a step sized
   by time), until a step finds nothing left to merge. Its filling leaves
   merges under way whose terms hold every kept inquiry's entries: left for
   later, they were carried on inside visitors' inserts once FTS5's defaults
   came back (one held the lock 3.5 s after 300,000 rows went).
4. The step that finds nothing left to copy or merge swaps, in the same
   transaction: the triggers of both go, the old index is renamed
   ``submissions_fts_old`` and the new one ``submissions_fts``, and the
   index's triggers are made as migration 0004 made them. Searches read the
   old index until then.
5. The old index's rows are deleted in steps (``secure_delete`` zeroes
   them), then the table is dropped. The index in use is merged down until
   no level is near FTS5's crisis merge, and FTS5's defaults come back.

Every step is a write transaction of its own, paced as the purge's are (a
pause as long as the step, longer while live writers queue: ``app.core.pacing``).
Each reads where the rebuild stands from the schema, so a stopped rebuild
goes on where it was at the next forgetting (``app.inquiries.gone``), and two
processes forgetting at once share the steps. Statements are SQL text: the
index, its triggers and its commands are SQLite's FTS5 and nothing else's. A
no-op on PostgreSQL, whose trigram indexes lose dead entries to vacuum.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import Connection, Engine, func, select
from sqlalchemy.exc import OperationalError

from app.core.db import WRITE_OPTION, checkpoint, lock_refused, sqlite_driver
from app.core.pacing import Pacer
from app.inquiries import search
from app.inquiries.merging import IndexMerging
from app.models import Inquiry

log = logging.getLogger(__name__)

INDEX = search.FTS_TABLE
NEXT, OLD = f"{INDEX}_next", f"{INDEX}_old"
CREATE_INDEX = (
    "CREATE VIRTUAL TABLE {table} USING fts5("
    "name, email, message, content='submissions', content_rowid='id', tokenize='trigram')"
)
# The index's triggers as migration 0004 makes them (``when`` empty); the new index's fire for the inquiries it
# holds already (step 1 of the module's docstring).
TRIGGERS = {
    "insert": (
        "CREATE TRIGGER {table}_insert AFTER INSERT ON submissions {when}BEGIN "
        "INSERT INTO {table}(rowid, name, email, message) VALUES (new.id, new.name, new.email, new.message); "
        "END"
    ),
    "delete": (
        "CREATE TRIGGER {table}_delete AFTER DELETE ON submissions {when}BEGIN "
        "INSERT INTO {table}({table}, rowid, name, email, message) "
        "VALUES ('delete', old.id, old.name, old.email, old.message); "
        "END"
    ),
    "update": (
        "CREATE TRIGGER {table}_update AFTER UPDATE OF name, email, message ON submissions {when}BEGIN "
        "INSERT INTO {table}({table}, rowid, name, email, message) "
        "VALUES ('delete', old.id, old.name, old.email, old.message); "
        "INSERT INTO {table}(rowid, name, email, message) VALUES (new.id, new.name, new.email, new.message); "
        "END"
    ),
}
HELD = f"(SELECT max(id) FROM {NEXT}_docsize)"  # the highest id the new index holds
ROW_OF_TRIGGER = {"insert": "new", "delete": "old", "update": "old"}
# The old index's tables, each with its key and what of it stays until the table is dropped: the records FTS5
# reads to open the table (the averages, id 1, and the structure, id 10) stay, or it cannot be dropped.
OLD_TABLES = ((f"{OLD}_data", "id", "id > 10"), (f"{OLD}_docsize", "id", "1"), (f"{OLD}_idx", "segid, term", "1"))
FILL_ROWS, FILL_ROWS_LEAST, FILL_ROWS_MOST = 50, 1, 2_000  # inquiries a step copies: the first step's, the range
# The old index's rows a step deletes (pages of about 4 KB): at up to 8,192 a step, 13 of 1,838 steps held the
# lock over 100 ms (352 ms at most) after a million rows went, though each was sized for 30 ms.
DROP_ROWS, DROP_ROWS_LEAST, DROP_ROWS_MOST = 256, 16, 1_024


def worth_rebuilding(engine: Engine, deleted: int) -> bool:
    """SQLite: whether the index is better built again than merged after ``deleted`` inquiries went: when more
    went than are kept, the merge would read more deleted entries than the rebuild reads kept text."""
    if engine.dialect.name != "sqlite" or not deleted:
        return False
    with engine.connect() as connection:
        kept = connection.scalar(select(func.count()).select_from(Inquiry))
    return deleted > (kept or 0)


class Rebuilt(enum.Enum):
    """How ``rebuild_index`` ended."""

    NONE = "none"  # none was under way or asked for
    FRESH = "fresh"  # begun and finished by this call: the index holds nothing deleted before it began
    FINISHED = "finished"  # one under way before (a stopped one): it may hold what was deleted meanwhile
    STOPPED = "stopped"  # stopped by ``should_stop``; the next call goes on


def rebuild_index(engine: Engine, start: bool, should_stop: Callable[[], bool] = lambda: False) -> Rebuilt:
    """SQLite: build the search index again (``start``), or finish a rebuild under way.

    A rebuild this call began leaves an index that holds none of what was
    deleted before it began, and anything deleted meanwhile has a forgetting
    of its own to come, which finishes the rebuild and then purges (both
    ``app.inquiries.gone``). FTS5's merging comes back to its defaults for
    the new index once the old one is gone, as after a purge. A no-op on
    PostgreSQL (``NONE``).
    """
    if engine.dialect.name != "sqlite":
        return Rebuilt.NONE
    with engine.connect().execution_options(**{WRITE_OPTION: True}) as connection:
        steps = Steps(connection, start)
        if not run_steps(steps, should_stop):
            return Rebuilt.STOPPED
        if not steps.done:
            return Rebuilt.NONE
        # A level left at or past FTS5's crisis merge would be merged whole by the next visitor's insert.
        _merge_in_use_if_crowded(steps, IndexMerging(crowded=search.FTS5_CRISISMERGE))
        search.set_merging_or_warn(connection, search.FTS5_AUTOMERGE, search.FTS5_CRISISMERGE)
        return Rebuilt.FRESH if steps.begun else Rebuilt.FINISHED


@dataclass
class Steps:
    """The rebuild's steps on one connection, each sized by how long the one before held the lock."""

    connection: Connection
    start: bool
    pacer: Pacer = field(default_factory=lambda: Pacer(ratio=1.0, least=search.FORGET_PAUSE))
    merging: IndexMerging = field(default_factory=lambda: IndexMerging(table=NEXT))
    in_use: IndexMerging = field(default_factory=IndexMerging)  # the index searches read, when crowded
    rows: int = FILL_ROWS
    pages: int = search.FORGET_PAGES  # the new index's merge into one segment, per step
    settling: bool = False  # that merge begun by this call
    dropped: int = DROP_ROWS
    begun: bool = False  # this call made the new index
    done: int = 0  # steps done

    def step(self) -> str | None:
        """One step in a write transaction of its own: what it did (``start``, ``fill``, ``settle``,
        ``swap``, ``drop``, ``dropped``), None when no rebuild is under way or asked for. Raises
        ``OperationalError`` when live writers kept the lock for a whole busy timeout."""
        with self.pacer.transaction(self.connection):
            tables = set(
                self.connection.exec_driver_sql(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)", (NEXT, OLD)
                ).scalars()
            )
            if NEXT in tables:
                done = self._fill()
            elif OLD in tables:
                done = self._drop()
            elif self.start:
                done = self._begin()
            else:
                return None
        self.done += 1
        if done == "fill":
            self.rows = search.next_pages(self.rows, self.pacer.held(), FILL_ROWS_LEAST, FILL_ROWS_MOST)
        elif done == "settle":
            self.pages = search.next_pages(self.pages, self.pacer.held())
        elif done == "drop":
            self.dropped = search.next_pages(self.dropped, self.pacer.held(), DROP_ROWS_LEAST, DROP_ROWS_MOST)
        return done

    def _begin(self) -> str:
        self.start, self.begun = False, True
        self.connection.exec_driver_sql(CREATE_INDEX.format(table=NEXT))
        search.set_merging_within(self.connection, 0, search.QUIET_CRISISMERGE, NEXT)
        for kind, trigger in TRIGGERS.items():
            when = f"WHEN {ROW_OF_TRIGGER[kind]}.id <= {HELD} "
            self.connection.exec_driver_sql(trigger.format(table=NEXT, when=when))
        return "start"

    def _fill(self) -> str:
        self.connection.exec_driver_sql(
            f"INSERT INTO {NEXT}(rowid, name, email, message) "
            "SELECT id, name, email, message FROM submissions WHERE id > ? ORDER BY id LIMIT ?",
            (self._held(), self.rows),
        )
        newest = self.connection.exec_driver_sql("SELECT coalesce(max(id), 0) FROM submissions").scalar() or 0
        if self._held() < newest:
            return "fill"
        # Every inquiry is copied, and none can come before this transaction ends: it holds the write lock.
        if self._settle():
            return "settle"
        self._swap()
        return "swap"

    def _held(self) -> int:
        return self.connection.exec_driver_sql(f"SELECT coalesce({HELD}, 0)").scalar() or 0

    def _settle(self) -> bool:
        """A step of the new index's merge into one segment (step 3 of the module's docstring): whether it
        merged anything. The first step of a call puts every segment on one level (a negative size), the
        next ones carry that merge on, as ``search.forget_deleted`` does."""
        driver = sqlite_driver(self.connection)
        before = driver.total_changes
        search.merge_step(driver, self.pages if self.settling else -self.pages, NEXT)
        self.settling = True
        return driver.total_changes - before >= 2

    def _swap(self) -> None:
        for table in (NEXT, INDEX):
            for kind in TRIGGERS:
                self.connection.exec_driver_sql(f"DROP TRIGGER {table}_{kind}")
        self.connection.exec_driver_sql(f"ALTER TABLE {INDEX} RENAME TO {OLD}")
        self.connection.exec_driver_sql(f"ALTER TABLE {NEXT} RENAME TO {INDEX}")
        for trigger in TRIGGERS.values():
            self.connection.exec_driver_sql(trigger.format(table=INDEX, when=""))

    def _drop(self) -> str:
        for table, key, going in OLD_TABLES:
            emptied = self.connection.exec_driver_sql(
                f"DELETE FROM {table} WHERE ({key}) IN (SELECT {key} FROM {table} WHERE {going} LIMIT ?)",
                (self.dropped,),
            )
            if emptied.rowcount:
                return "drop"
        self.connection.exec_driver_sql(f"DROP TABLE {OLD}")
        return "dropped"


def run_steps(steps: Steps, should_stop: Callable[[], bool]) -> bool:
    """The rebuild's steps until none is left (True) or ``should_stop`` (False): each followed by a
    ``PASSIVE`` checkpoint (the WAL stays small) and a pause, a copy by merge steps of the new index.

    Visitors' inserts go on adding a segment each to the index in use, whose
    merging stays the run's (FTS5's off): so when one of its levels is
    crowded it is merged down here too, or the insert that takes it to
    ``search.QUIET_CRISISMERGE`` would merge it whole (39 such merges landed in
    visitors' transactions while a million rows' index was rebuilt; with a
    look once a step, 6 at 300,000 rows and 100 submissions a second, each of
    128 small segments, about 1,000 rows and 25-51 ms). After the swap too:
    the new index comes into use merged into one segment, so FTS5's
    ``'merge'`` has no large merge under way to carry on first, and merges
    the visitors' small segments.
    """
    driver = sqlite_driver(steps.connection)
    while not should_stop():
        try:
            done = steps.step()
        except OperationalError as error:
            if not lock_refused(error):
                raise
            log.info("live writers kept the lock from the search index's rebuild for a busy timeout; trying again")
            steps.pacer.pause()  # the longest: the pacer learned it from the refusal
            continue
        if done is None:
            return True
        checkpoint(driver)
        _merge_in_use_if_crowded(steps)
        if done == "fill":
            steps.merging.after_batch(steps.connection)
            _merge_in_use_if_crowded(steps)  # the new index's merging took its pauses meanwhile
        steps.pacer.pause()
    return False


def _merge_in_use_if_crowded(steps: Steps, merging: IndexMerging | None = None) -> None:
    """The index in use (the old one, then the new one) merged down while a level holds ``merging``'s
    ``crowded`` segments or more (``steps.in_use``'s by default)."""
    merging = merging or steps.in_use
    if search.crowded_level(sqlite_driver(steps.connection)) >= merging.crowded:
        merging.after_batch(steps.connection)
