"""Gunicorn servers for benchmarks: settings, start/stop, worker processes and memory."""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.client import port_of
from tests.server import running_server

# Benchmarks measure the server, not the rate limiter refusing a flood.
GENEROUS_LIMITS = "100000000/60,100000000/86400"
SECRET_KEY = "benchmark-secret-key-not-for-production"


def server_env(database_url: str, **settings) -> dict[str, str]:
    """The environment of a production-like server on ``database_url``; ``settings`` add SUNDOWN_*."""
    env = {
        "SUNDOWN_ENV": "production",
        "SUNDOWN_SECRET_KEY": SECRET_KEY,
        "SUNDOWN_DATABASE_URL": database_url,
        "SUNDOWN_ORIGIN": "http://localhost",
        "SUNDOWN_RP_ID": "localhost",
        "SUNDOWN_SUBMIT_RATE_LIMITS": GENEROUS_LIMITS,
    }
    env.update({f"SUNDOWN_{key.upper()}": str(value) for key, value in settings.items()})
    return env


@dataclass
class Server:
    """A running gunicorn: its base URL, port and master process id."""

    base_url: str
    pid: int

    @property
    def port(self) -> int:
        return port_of(self.base_url)

    def workers(self) -> list[int]:
        """The PIDs of the master's worker processes."""
        return children(self.pid)


@contextmanager
def serve(database_url: str, logdir: Path, name: str, workers: int = 4, threads: int = 4, **settings):
    """Run gunicorn (gthread) on 127.0.0.1 until the block ends; yield a ``Server``."""
    env = server_env(database_url, **settings)
    log = logdir / f"{name}.log"
    # --preload builds the app once before forking (it opens no connection),
    # so four workers start in about a second instead of four or five.
    with running_server(env, log, workers=workers, threads=threads, extra_args=("--preload",)) as (base_url, process):
        yield Server(base_url, process.pid)


def children(pid: int) -> list[int]:
    """Direct child processes of ``pid``, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry))
    return sorted(found)


def cpu_seconds(pids: list[int]) -> float:
    """User plus system CPU time used so far by ``pids``, from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / ticks


def memory_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) of a process, in kB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0])
    return values
