"""What every benchmark shares: sizes for the mode, the report, a work folder, PostgreSQL, templates."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.databases import Database, realistic_rows
from bench.report import Report
from devtools.pgcluster import Cluster, find_bindir

FULL = {
    "backlog_rows": 1_000_000,  # expired; plus a tenth as many recent rows
    "backlog_trials": 3,  # of each: plain DELETE and cleanup run, alternated
    "secure_delete_trials": 3,  # of each: on and off, alternated
    "rate": 40.0,  # scheduled submissions per second during backlog trials
    "idle_seconds": 20.0,  # of open-loop traffic before each trial's delete starts
    "defaults_limit_seconds": 300.0,  # how long the shipped-defaults variant may run (then: a projection)
    "claiming_rows": 100_000,
    "claiming_rounds": 7,  # direct, and as many again through Caddy
    "pause": 1.0,  # seconds of quiet before each measured request in a claiming round
    "overhead_rounds": 8,
    "overhead_seconds": 3.0,
    "counted_requests": 400,
    "control_seconds": 20.0,  # the time budget of each backlog control's run
    "control_rows": 1_000_000,  # the backlog those runs start from
    "control_rounds": 3,
    "forms_sizes": (10_000, 30_000, 60_000),  # rows per database for bench/forms.py, one database per size
    "forms_cleanup_sizes": (10_000, 30_000),  # those with cleanup trials (SQLite deletes about 1000 rows/s)
    "forms_trials": 2,  # of each: the forms' own retentions and one for all, alternated
}
QUICK = {  # a smoke run under 5 minutes: figures with few samples, every control still run
    "backlog_rows": 10_000,
    "backlog_trials": 2,
    "secure_delete_trials": 1,  # of each: on and off
    "rate": 40.0,
    "idle_seconds": 2.0,
    "defaults_limit_seconds": 10.0,
    "claiming_rows": 2_000,
    "claiming_rounds": 3,
    "pause": 0.3,
    "overhead_rounds": 3,
    "overhead_seconds": 0.75,
    "counted_requests": 100,
    "control_seconds": 6.0,
    "control_rows": 10_000,  # the backlog's own template: no second one to load
    "control_rounds": 2,
    "forms_sizes": (2_000, 5_000),
    "forms_cleanup_sizes": (5_000,),
    "forms_trials": 2,
}


@dataclass
class Context:
    """Shared state of one ``python -m bench`` run."""

    quick: bool
    report: Report
    workdir: Path
    write_docs: bool = True
    _cluster: Cluster | None = field(default=None, repr=False)
    _templates: dict[tuple[str, int], Database] = field(default_factory=dict, repr=False)

    @property
    def sizes(self) -> dict:
        return QUICK if self.quick else FULL

    def cluster(self) -> Cluster:
        """The run's PostgreSQL cluster, started on first use."""
        if self._cluster is None:
            bindir = find_bindir()
            if bindir is None:
                raise RuntimeError("PostgreSQL server binaries are missing (apt-get install postgresql)")
            self._cluster = Cluster(bindir).start()
        return self._cluster

    def database(self, kind: str, name: str) -> Database:
        """A fresh migrated database of ``kind`` named ``name``."""
        if kind == "sqlite":
            return Database.sqlite(self.workdir, name)
        return Database.postgresql(self.cluster(), name)

    def template(self, kind: str, rows: int | None = None) -> Database:
        """A backlog on ``kind``: ``rows`` (default ``backlog_rows``) realistic expired rows and a tenth as many
        recent ones.

        Made once per run and size (the same rows on both databases); benchmarks work on copies of it.
        """
        rows = rows or self.sizes["backlog_rows"]
        if (kind, rows) not in self._templates:
            database = self.database(kind, f"template_{rows}")
            seconds = database.load_rows(realistic_rows(rows, rows // 10))
            print(f"# {kind}: loaded {rows + rows // 10} realistic rows in {seconds:.0f} s", flush=True)
            database.dispose()
            self._templates[kind, rows] = database
        return self._templates[kind, rows]

    def close(self) -> None:
        """Drop the templates and stop PostgreSQL if it was started."""
        for database in self._templates.values():
            database.drop()
        self._templates.clear()
        if self._cluster is not None:
            self._cluster.stop()
            self._cluster = None


def wait_until(moment: float) -> None:
    """Sleep until the epoch time ``moment`` (at once if it has passed)."""
    time.sleep(max(0.0, moment - time.time()))
