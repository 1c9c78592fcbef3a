"""SQLite: the search index merged in steps of its own, between the writes of a background writer.

Used by a cleanup run after each batch (``app.cleanup.plans``, ``app.cleanup.batches``) and by the index's
rebuild after each step (``app.inquiries.reindex``); here, beside the index, so that neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Connection
from sqlalchemy.exc import OperationalError

from app.core import db
from app.core.pacing import Pacer
from app.inquiries import search

lock_refused = db.lock_refused

# Pages merged per batch: a short merge on realistic rows, where twice as many could hold the lock
# several times as long (figures: docs/benchmarks.md, "Figures behind the code").
MERGE_STEP_PAGES = 64  # the first step's; the next ones are sized by time (``search.next_pages``)
# A level this crowded after a batch's merge step is merged further before the next batch, up to the most
# steps: FTS5 merges a level whole inside the write that takes it to ``search.QUIET_CRISISMERGE``.
MERGE_CROWDED, MERGE_STEPS_MOST = 32, 16


@dataclass
class IndexMerging:
    """SQLite: the run's own merging of the search index, a few steps after each batch (see
    ``index_merged_by_batches``), each step a transaction of its own sized by time and paced as the purge's
    are (``search.next_pages``; a pause at least as long as the step)."""

    pacer: Pacer = field(default_factory=lambda: Pacer(ratio=1.0, least=search.FORGET_PAUSE))
    pages: int = MERGE_STEP_PAGES
    table: str = search.FTS_TABLE  # the index being rebuilt beside it too (``app.inquiries.reindex``)
    crowded: int = MERGE_CROWDED  # merged on while a level holds this many segments

    def after_batch(self, connection: Connection) -> None:
        """SQLite: a step of the search index's merging, more while a level stays crowded, each followed by a
        copy of the WAL into the database file, on this connection.

        One step after each batch falls behind at 100 submissions a second:
        each visitor's insert adds a segment to the lowest level, pacing spaces
        the batches out, and a level reaching ``search.QUIET_CRISISMERGE``
        segments is merged whole inside whichever write adds the last one, a
        visitor's most often (49 of them in a 300,000-row run, one holding the
        lock a second). So while a level holds ``MERGE_CROWDED`` segments or
        more (``crowded``) the merge goes on, up to ``MERGE_STEPS_MOST`` steps before the
        next batch, each after a pause at least as long as the step before it
        (steps back to back kept visitors waiting up to 430 ms).

        Deleting long messages writes megabytes of WAL per batch (``SECURE_DELETE``
        zeroes every freed byte). Left to the automatic checkpoint, that copy is
        done by whichever connection commits past the threshold: often a
        visitor's insert, which then waits a second or more. Done here, it costs
        the cleanup, and it holds no write lock: live writers get in meanwhile.
        """
        if connection.dialect.name != "sqlite":
            return
        # On the driver's connection: the checkpoint must run outside any transaction of SQLAlchemy's.
        driver_connection = db.sqlite_driver(connection)
        db.checkpoint(driver_connection)  # the batch's pages first
        for step in range(MERGE_STEPS_MOST):
            if step:
                self.pacer.pause()
            merged = self._step(connection, driver_connection)
            db.checkpoint(driver_connection)
            if not merged or search.crowded_level(driver_connection, self.table) < self.crowded:
                return

    def _step(self, connection: Connection, driver_connection) -> bool:
        """One merge step, its pages sized by the last one's hold; False if live writers kept the lock for a
        whole busy timeout (the next batch's step catches up)."""
        try:
            with self.pacer.transaction(connection):
                search.merge_step(driver_connection, self.pages, self.table)
        except OperationalError as error:
            if not lock_refused(error):
                raise
            return False
        self.pages = search.next_pages(self.pages, self.pacer.held())
        return True
