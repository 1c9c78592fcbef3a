"""A real gunicorn server in a subprocess on 127.0.0.1, for tests and benchmarks.

``app_module`` may name a module (``tests/apps/``) that builds the app with
overrides (a barrier, a slow target); production code stays unchanged.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from devtools.pgcluster import free_port

ROOT = Path(__file__).resolve().parent.parent


def wait_until_up(base_url: str, process: subprocess.Popen, log: Path, timeout: float = 30) -> None:
    """Poll the server until it answers (any status), or fail with its log.

    Not ``/healthz``: that may claim a cleanup after its response, and tests arrange the first claim themselves.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}:\n{log.read_text()}")
        try:
            urllib.request.urlopen(f"{base_url}/robots.txt", timeout=1).close()
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server did not start in {timeout}s:\n{log.read_text()}")


@contextmanager
def running_server(
    env: dict[str, str],
    log: Path,
    app_module: str = "wsgi:app",
    workers: int = 1,
    worker_class: str = "gthread",
    threads: int = 4,
    port: int | None = None,
    extra_args: tuple[str, ...] = (),
    stop_signal: signal.Signals = signal.SIGTERM,
):
    """Start gunicorn with ``env`` (SUNDOWN_* settings); yield ``(base_url, process)``.

    The base URL uses ``localhost`` so that it is a WebAuthn-capable origin;
    the server listens on 127.0.0.1 only. The process group is stopped by PID
    with ``stop_signal``: SIGTERM, gunicorn's graceful stop (over a second for
    gthread workers), or SIGKILL for a server whose state is thrown away.
    """
    port = port or free_port()
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        app_module,
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--worker-class",
        worker_class,
        "--threads",
        str(threads),
        "--timeout",
        "120",
        "--graceful-timeout",
        "5",
        "--no-control-socket",  # gunicorn 27 otherwise shares ~/.gunicorn/gunicorn.ctl between servers
        *extra_args,
    ]
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    with open(log, "ab") as log_file:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=full_env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base_url = f"http://localhost:{port}"
    try:
        wait_until_up(base_url, process, log)
        yield base_url, process
    finally:
        stop(process, stop_signal)


def stop(process: subprocess.Popen, stop_signal: signal.Signals = signal.SIGTERM) -> None:
    """Stop a server started by ``running_server`` and everything it forked."""
    if process.poll() is None:
        os.killpg(process.pid, stop_signal)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
