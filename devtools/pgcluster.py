"""A throwaway PostgreSQL cluster on 127.0.0.1 for tests and benchmarks.

``initdb`` refuses to run as root, so as root the server runs as the
``postgres`` user in a directory that user owns.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def find_bindir() -> Path | None:
    """The newest PostgreSQL server bin directory on this machine, if any."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if candidates:
        return Path(candidates[-1]).parent
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def _version(path: str) -> float:
    try:
        return float(Path(path).parent.parent.name)
    except ValueError:
        return 0.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


MEMORY_FOLDER = "/dev/shm"
MEMORY_NEEDED = 2 * 1024**3  # bytes free: a cluster, its template and the databases of the tests running at once


def memory_folder() -> str | None:
    """``/dev/shm`` when this machine has it (a RAM file system) with room to spare, else None (the usual
    temporary folder): a container's default 64 MB would not hold a cluster."""
    if not (os.path.isdir(MEMORY_FOLDER) and os.access(MEMORY_FOLDER, os.W_OK)):
        return None
    stats = os.statvfs(MEMORY_FOLDER)
    return MEMORY_FOLDER if stats.f_bavail * stats.f_frsize >= MEMORY_NEEDED else None


class Cluster:
    """Start with ``start()``, stop with ``stop()``; ``url(dbname)`` connects.

    ``parent`` is the folder the cluster's files go in (default: the usual
    temporary folder). Tests put it in ``memory_folder()``: creating a
    database from a template there takes a tenth of the time it takes on
    disk, and removing the cluster's files at the end likewise.

    ``keep`` instead names a folder whose cluster outlives ``stop()`` and is
    started again by the next ``start()``: the benchmarks keep their loaded
    templates there from one run to the next.
    """

    def __init__(self, bindir: Path, parent: str | None = None, keep: Path | None = None):
        self.bindir = bindir
        self.port = free_port()
        self.kept = keep is not None
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
        self.root = keep if keep is not None else Path(tempfile.mkdtemp(prefix="sundown-pg-", dir=parent))
        self.datadir = self.root / "data"
        self.as_root = os.geteuid() == 0

    def _run(self, *args: str) -> None:
        command = list(args)
        if self.as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def start(self) -> Cluster:
        """Create and start the cluster; return self."""
        if self.as_root:
            shutil.chown(self.root, "postgres", "postgres")
        if not (self.datadir / "PG_VERSION").exists():
            self._run(
                str(self.bindir / "initdb"),
                "-D",
                str(self.datadir),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
            )
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=300"
        )
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.datadir),
            "-o",
            options,
            "-l",
            str(self.root / "server.log"),
            "-w",
            "start",
        )
        return self

    def stop(self) -> None:
        """Stop the server and remove its files (unless it is kept)."""
        try:
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-m", "fast", "-w", "stop")
        finally:
            if not self.kept:
                shutil.rmtree(self.root, ignore_errors=True)

    def url(self, dbname: str = "postgres") -> str:
        """A SQLAlchemy URL for ``dbname`` on this cluster."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{dbname}"
