"""A real Caddy (Debian's ``caddy``) in a subprocess, on 127.0.0.1 only, for tests.

``deploy_caddyfile`` takes the Caddyfile that docs/deploy.md gives operators
and points it at a loopback port and a test upstream, so the tests run the
documented configuration itself.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

from devtools.server import ROOT

DOC = ROOT / "docs" / "deploy.md"
DOC_SITE = "inbox.example.org"
DOC_UPSTREAM = "127.0.0.1:8000"
# Tests only: no admin API (it would listen on :2019), bind loopback only.
TEST_OPTIONS = "{\n\tadmin off\n\tdefault_bind 127.0.0.1\n}\n"


def binary() -> str | None:
    """The ``caddy`` executable, or None when it is not installed."""
    return shutil.which("caddy")


def deploy_caddyfile(port: int, upstream_port: int) -> str:
    """The first ``caddyfile`` block of docs/deploy.md, served at http://localhost:PORT."""
    block = re.search(r"```caddyfile\n(.*?)```", DOC.read_text(), re.S).group(1)
    assert DOC_SITE in block and DOC_UPSTREAM in block, "docs/deploy.md's Caddyfile changed shape"
    site = block.replace(f"{DOC_SITE} {{", f"http://localhost:{port} {{", 1)
    return TEST_OPTIONS + site.replace(DOC_UPSTREAM, f"127.0.0.1:{upstream_port}")


@contextmanager
def running_caddy(caddyfile: str, directory: Path, port: int, timeout: float = 30):
    """Run Caddy with ``caddyfile`` until the block ends; yield its process once ``port`` accepts."""
    path = directory / "Caddyfile"
    path.write_text(caddyfile)
    home = directory / "caddy-home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home), "XDG_CONFIG_HOME": str(home)}
    log = directory / "caddy.log"
    with open(log, "ab") as output:
        process = subprocess.Popen(
            [binary(), "run", "--config", str(path), "--adapter", "caddyfile"],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + timeout
        while not _listening(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Caddy did not start:\n{log.read_text()}")
            time.sleep(0.05)
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0
