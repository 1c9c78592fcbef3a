"""What every benchmark shares: sizes for the mode, the report, a work folder, PostgreSQL, templates."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bench.databases import Database, realistic_rows
from bench.report import Report
from devtools.pgcluster import Cluster, find_bindir

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / ".data"  # loaded templates, kept between runs (ignored by git)
# What a template's rows depend on: the schema and the generator. The ISO week is part of the key too,
# since the rows' ages are relative to the day they were made (a week moves none across a retention).
TEMPLATE_SOURCES = ("migrations/versions/*.py", "devtools/realistic.py", "bench/databases.py")

FULL = {
    "backlog_rows": 50_000,  # expired, plus a tenth as many recent rows: the template the other modules copy
    # The backlog module's sizes: how its figures grow from the smallest to the largest within 45 minutes of the
    # whole run (with 300,000 as the largest the run took 56). The sizes beyond, where the growth goes on:
    # ``make bench ONLY=backlog ROWS="300000 1000000"``.
    "backlog_sizes": (50_000, 150_000),
    # Below this many rows a SQLite run at 40/s is over too soon to hold 20 submissions above its p99 (13 to 18
    # at 50,000 in every full run: "too few samples"), so a longer idle phase would judge nothing there.
    "p99_rows": 100_000,
    "backlog_trials": 1,  # of each, per size and rate: plain DELETE and cleanup run, alternated
    "backlog_forms_sizes": (50_000,),  # those run again over twenty forms, with threads (bench/backlog.over_forms)
    "backlog_defaults_sizes": (50_000,),  # those with the shipped defaults' clearing (bench/backlog.shipped_defaults)
    "backlog_controls": True,  # the backlog's controls (``--rows`` runs its sizes' trials alone)
    "upload_rounds": 5,  # of eight 10 MB uploads at once (bench/uploads.py)
    "backlog_files_sizes": (50_000,),  # those run again with files present (bench/backlog_files.py)
    "backlog_files_share": 200,  # one inquiry in this many carries files (about 530 MB at 50k with the 24 of 10 MB)
    "secure_delete_trials": 1,  # of each: on and off, alternated
    "rates": (40.0, 100.0),  # scheduled submissions per second during backlog trials, each in turn
    "rate": 40.0,  # the backlog variants' (forms, files, secure_delete, controls)
    "idle_seconds": 10.0,  # of open-loop traffic before each trial's delete starts, at least...
    # ...and on SQLite as long as this many submissions take at the trial's rate (27.5 s at 40/s): two trials'
    # idle phases pooled hold 2,000 finished before the delete began, 20 above their p99.
    "idle_requests": 1100,
    "calm_busy": 0.25,  # a trial waits for a second in which the CPUs were busy less than this share...
    "calm_seconds": 10.0,  # ...for at most this long
    "defaults_limit_seconds": 300.0,  # how long the shipped-defaults variant may run (then: a projection)
    "claiming_rows": 5_000,  # a run of these outlasts the follow-up request many times over on both databases
    "claiming_rounds": 3,  # direct, and as many again through Caddy
    "pause": 1.0,  # seconds of quiet before each measured request in a claiming round
    "overhead_rounds": 5,  # with 3 the A/A strayed to 0.93 and the shipped side read "no" (0.905) in one run
    "overhead_seconds": 3.0,
    "counted_requests": 400,
    "control_seconds": 20.0,  # the time budget of each backlog control's run
    # the backlog those runs start from (the smallest size's template); crisis_default's too: enough deleted
    # rows for crisis merges to build up at 100/s (13 visitors' merges, the longest wait 896 ms; 21 and 618 ms
    # at 150,000)
    "control_rows": 50_000,
    "control_rounds": 2,
    # rows per database for bench/forms.py, one database per size (its control is caught at 30,000 on both)
    "forms_sizes": (10_000, 30_000),
    "forms_cleanup_sizes": (10_000, 30_000),  # those with cleanup trials (SQLite's are the slow ones)
    "forms_trials": 2,  # of each: the forms' own retentions and one for all, alternated
}
QUICK = {  # a smoke run (17 minutes here on 2026-12-07, the backlog 9): few samples, every control still run
    "backlog_rows": 5_000,
    "backlog_sizes": (5_000, 10_000, 20_000),
    "backlog_forms_sizes": (5_000,),
    "backlog_defaults_sizes": (5_000,),
    "backlog_controls": True,
    "upload_rounds": 3,
    "backlog_files_sizes": (5_000,),
    "backlog_files_share": 20,
    "backlog_trials": 2,
    "secure_delete_trials": 1,  # of each: on and off
    "rates": (40.0, 100.0),
    "rate": 40.0,
    "idle_seconds": 2.0,
    "idle_requests": 0,
    "calm_busy": 0.25,
    "calm_seconds": 0.0,  # a smoke run: the load is recorded, not waited out
    "defaults_limit_seconds": 10.0,
    "claiming_rows": 2_000,
    "claiming_rounds": 3,
    "pause": 0.3,
    "overhead_rounds": 3,
    "overhead_seconds": 0.75,
    "counted_requests": 100,
    "control_seconds": 6.0,
    "control_rows": 5_000,  # the smallest size's template: no second one to load
    "p99_rows": 0,
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
    rows: tuple[int, ...] = ()  # backlog sizes instead of the mode's (``make bench ROWS="150000 1000000"``)
    _cluster: Cluster | None = field(default=None, repr=False)
    _templates: dict[tuple[str, int], Database] = field(default_factory=dict, repr=False)

    @property
    def sizes(self) -> dict:
        sizes = QUICK if self.quick else FULL
        if not self.rows:
            return sizes
        return {
            **sizes,
            "backlog_rows": self.rows[0],
            "backlog_sizes": self.rows,
            # These sizes' alternated trials at both rates, nothing else: the variants and the controls keep to
            # the full run's smallest size (a million rows over twenty forms with threads would take hours).
            "backlog_forms_sizes": (),
            "backlog_defaults_sizes": (),
            "backlog_controls": False,
        }

    def cluster(self) -> Cluster:
        """The run's PostgreSQL cluster, started on first use."""
        if self._cluster is None:
            bindir = find_bindir()
            if bindir is None:
                raise RuntimeError("PostgreSQL server binaries are missing (apt-get install postgresql)")
            self._cluster = Cluster(bindir, keep=CACHE / "postgresql").start()
        return self._cluster

    def database(self, kind: str, name: str) -> Database:
        """A fresh migrated database of ``kind`` named ``name``."""
        if kind == "sqlite":
            return Database.sqlite(self.workdir, name)
        return Database.postgresql(self.cluster(), name)

    def template(self, kind: str, rows: int | None = None) -> Database:
        """A backlog on ``kind``: ``rows`` (default ``backlog_rows``) realistic expired rows and a tenth as many
        recent ones.

        Made once per size (the same rows on both databases) and kept in ``bench/.data`` for later runs, under
        a name that changes with the schema, the generator and the week; benchmarks work on copies of it.
        """
        rows = rows or self.sizes["backlog_rows"]
        if (kind, rows) not in self._templates:
            self._templates[kind, rows] = self._cached_template(kind, rows)
        return self._templates[kind, rows]

    def _cached_template(self, kind: str, rows: int) -> Database:
        return self.cached(kind, f"template_{rows}", rows, lambda db: db.load_rows(realistic_rows(rows, rows // 10)))

    def cached(self, kind: str, prefix: str, rows: int, load: Callable[[Database], object]) -> Database:
        """The database ``prefix`` of ``kind`` that ``load`` fills, made once (its ``rows`` named in the messages)
        and kept in ``bench/.data`` under a name that changes with the schema, the generator and the week.

        Benchmarks work on copies of it. A load is timed and printed; an interrupted one is never reused.
        """
        name = f"{prefix}_{template_key(rows)}"
        folder = CACHE / "sqlite"
        cached = (
            Database.existing_sqlite(folder, name)
            if kind == "sqlite"
            else Database.existing_postgresql(self.cluster(), name)
        )
        if cached is not None:
            print(f"# {kind}: reusing {prefix} ({rows} rows)", flush=True)
            return cached
        folder.mkdir(parents=True, exist_ok=True)
        # Loaded under a working name and renamed when whole, so an interrupted load is never reused.
        database = (
            Database.sqlite(folder, f"{name}_loading")
            if kind == "sqlite"
            else Database.postgresql(self.cluster(), f"{name}_loading")
        )
        started = time.perf_counter()
        load(database)
        print(f"# {kind}: loaded {prefix} ({rows} rows) in {time.perf_counter() - started:.0f} s", flush=True)
        database.drop_stale_templates(f"{prefix}_")
        return database.rename(name)

    def close(self) -> None:
        """Close the templates (they are kept) and stop PostgreSQL if it was started."""
        for database in self._templates.values():
            database.dispose()
        self._templates.clear()
        if self._cluster is not None:
            self._cluster.stop()
            self._cluster = None


def template_key(rows: int) -> str:
    """A short hash of what a template of ``rows`` rows is made from, and of this ISO week."""
    digest = hashlib.sha256(f"{rows} {datetime.now(UTC).isocalendar()[:2]}".encode())
    for pattern in TEMPLATE_SOURCES:
        for path in sorted(ROOT.glob(pattern)):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:10]


def machine_ticks() -> tuple[int, int]:
    """The whole machine's busy and total CPU ticks since boot (/proc/stat; idle and iowait are not busy)."""
    with open("/proc/stat") as stat:
        values = [int(v) for v in stat.readline().split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


def busy_share(seconds: float) -> float:
    """The share of the machine's CPU time that was busy over the next ``seconds``."""
    busy, total = machine_ticks()
    time.sleep(seconds)
    busy_after, total_after = machine_ticks()
    return (busy_after - busy) / max(total_after - total, 1)


def wait_until(moment: float) -> None:
    """Sleep until the epoch time ``moment`` (at once if it has passed)."""
    time.sleep(max(0.0, moment - time.time()))
