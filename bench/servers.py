"""Servers for benchmarks: gunicorn serving ``bench.wsgi`` (a variant), Caddy in front, /proc readings."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.client import Connection, port_of
from devtools.pgcluster import free_port
from devtools.server import running_server, stop

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
        "SUNDOWN_SUBMIT_GLOBAL_RATE_LIMITS": GENEROUS_LIMITS,
        "SUNDOWN_NOTIFY_HOURLY_CAP": "100000000",
        # The uploads' rounds send gigabytes from one address in minutes: far past a day's budgets.
        "SUNDOWN_SUBMIT_CLIENT_FILE_BYTES": str(2**50),
        "SUNDOWN_SUBMIT_FILE_BYTES": str(2**50),
    }
    env.update({f"SUNDOWN_{key.upper()}": str(value) for key, value in settings.items()})
    return env


@dataclass
class Server:
    """A running gunicorn: its base URL, port and master process."""

    base_url: str
    process: subprocess.Popen

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def port(self) -> int:
        return port_of(self.base_url)

    def workers(self) -> list[int]:
        """The PIDs of the master's worker processes."""
        return children(self.pid)

    def counters(self) -> dict[str, int]:
        """Requests and statements counted by ``bench.wsgi`` in every worker so far."""
        connection = Connection(self.port)
        try:
            return connection.get_json("/_bench/counters")
        finally:
            connection.close()

    def stop(self) -> None:
        """Kill it now (its database connections close); the ``serve`` block may go on."""
        stop(self.process, signal.SIGKILL)


@contextmanager
def serve(
    database_url: str,
    logdir: Path,
    name: str,
    variant: str = "shipped",
    workers: int = 4,
    threads: int = 4,
    log_writes: Path | None = None,
    **settings,
):
    """Run gunicorn (gthread) with ``bench.wsgi:app`` of ``variant`` on 127.0.0.1; yield a ``Server``.

    ``--preload`` builds the app once before forking (it opens no connection
    then), so the workers share ``bench.wsgi``'s counters and start in about a
    second.
    ``log_writes``: a folder where each worker logs its write transactions (``bench.txlog``).
    Each server is killed (SIGKILL) at the end: its database is thrown away
    or its work finished, and gunicorn's graceful stop would add 1.4 s to
    each of the quick run's sixty-odd servers.
    """
    env = {**server_env(database_url, **settings), "BENCH_VARIANT": variant}
    if log_writes is not None:  # every write transaction and cleanup statement (bench.txlog)
        env["BENCH_TXN_LOG"] = str(log_writes)
    with running_server(
        env,
        logdir / f"{name}.log",
        "bench.wsgi:app",
        workers=workers,
        threads=threads,
        extra_args=("--preload",),
        stop_signal=signal.SIGKILL,
    ) as (base_url, process):
        yield Server(base_url, process)


@contextmanager
def caddy(upstream_port: int, workdir: Path):
    """Caddy on 127.0.0.1 in front of ``upstream_port`` (upstream keep-alive, its default); yield its port."""
    binary = shutil.which("caddy")
    if binary is None:
        raise RuntimeError("Caddy is missing (apt-get install caddy)")
    port = free_port()
    home = workdir / f"caddy-{port}"
    home.mkdir()
    (home / "Caddyfile").write_text(
        "{\n  admin off\n  auto_https off\n}\n"
        f":{port} {{\n  bind 127.0.0.1\n  reverse_proxy 127.0.0.1:{upstream_port}\n}}\n"
    )
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home), "XDG_CONFIG_HOME": str(home)}
    with open(home / "caddy.log", "ab") as log:
        process = subprocess.Popen(
            [binary, "run", "--config", str(home / "Caddyfile"), "--adapter", "caddyfile"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_listening(port, process, home / "caddy.log")
        yield port
    finally:
        stop(process)


def _wait_listening(port: int, process: subprocess.Popen, log: Path, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"Caddy exited:\n{log.read_text()}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"Caddy did not listen in {timeout}s:\n{log.read_text()}")


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


def memory_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) of a process, in kB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0])
    return values


def reset_peak(pid: int) -> None:
    """Reset VmHWM to the current RSS (``/proc/PID/clear_refs``, value 5)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
