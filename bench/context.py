"""What every benchmark shares: sizes for the mode, the report, a work folder, PostgreSQL."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bench.databases import Database
from bench.report import Report
from tests.pgcluster import Cluster, find_bindir

FULL = {
    "backlog_rows": 1_000_000,
    "claiming_rows": 100_000,
    "claiming_rounds": 7,
    "export_rows": (100_000, 1_000_000),
    "load_seconds": 15.0,
    "overhead_rounds": 8,
    "overhead_seconds": 4.0,
    "idle_seconds": 8.0,
    "writes_requests": 400,
}
QUICK = {
    "backlog_rows": 100_000,
    "claiming_rows": 20_000,
    "claiming_rounds": 4,
    "export_rows": (20_000, 200_000),
    "load_seconds": 4.0,
    "overhead_rounds": 4,
    "overhead_seconds": 2.0,
    "idle_seconds": 3.0,
    "writes_requests": 200,
}


@dataclass
class Context:
    """Shared state of one ``python -m bench`` run."""

    quick: bool
    report: Report
    workdir: Path
    _cluster: Cluster | None = field(default=None, repr=False)

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

    def close(self) -> None:
        """Stop PostgreSQL if it was started."""
        if self._cluster is not None:
            self._cluster.stop()
            self._cluster = None
