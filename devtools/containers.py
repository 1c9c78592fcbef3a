"""Podman for tests: the engine's settings for these machines, and a base image made from Debian's packages.

No image registry is reachable here, so the base the Dockerfile builds on
(``--build-arg BASE=...``) is made by ``mmdebstrap`` from the Debian mirror
apt already uses, imported with ``podman import``, and cached: the tarball
under ``~/.cache/sundown/containers/`` (``$XDG_CACHE_HOME`` if set) and the
image in podman's own storage, both named by a key of what went into them,
so a rerun makes nothing again.

The engine's settings (``CONTAINERS_CONF``) are the workarounds these
machines need: ulimits within what the process may set, ``runc`` (``crun``
refuses a hybrid cgroup layout), ``cgroupfs`` and a file for events (no
systemd). Builds and containers use the host's network.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

SUITE = "bookworm"
# What the public python:3.11-slim image has that Sundown needs: Python with its venv module, CA certificates
# and the time zone database (zoneinfo finds no "UTC" without it).
PACKAGES = ("python3", "python3-venv", "ca-certificates", "tzdata")
DEFAULT_MIRROR = "http://deb.debian.org/debian"
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
ENGINE_SETTINGS = """\
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
"""


def cache_dir() -> Path:
    """Where the base tarball and the engine's settings are kept between runs."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    path = Path(root) / "sundown" / "containers"
    path.mkdir(parents=True, exist_ok=True)
    return path


def missing() -> str | None:
    """What is missing to build and run images here (None when podman is installed)."""
    if shutil.which("podman") is None:
        return "podman is not installed (apt-get install podman buildah runc uidmap fuse-overlayfs catatonit)"
    return None


class Podman:
    """``podman`` with this machine's settings; calling it runs one command and returns its result."""

    def __init__(self) -> None:
        settings = cache_dir() / "containers.conf"
        if not settings.exists() or settings.read_text() != ENGINE_SETTINGS:
            settings.write_text(ENGINE_SETTINGS)
        self.env = {**os.environ, "CONTAINERS_CONF": str(settings)}

    def __call__(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        """Run ``podman ARGS``; with ``check``, a failure raises with podman's own words."""
        result = subprocess.run(["podman", *args], env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise RuntimeError(f"podman {' '.join(args)} exited {result.returncode}:\n{result.stdout}{result.stderr}")
        return result

    def build_options(self) -> list[str]:
        """What every build here needs: the host's network, and its CA bundle for the build's HTTPS only
        (this machine's HTTPS is intercepted by its own CA; the bundle is mounted, never copied in)."""
        options = ["--network", "host", "--format", "docker"]
        if HOST_CA.exists():
            options += ["--volume", f"{HOST_CA}:{HOST_CA}:ro"]
        return options


def debian_mirror() -> str:
    """The Debian mirror apt uses on this machine (deb822 or one-line sources), else deb.debian.org."""
    for source in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        if source.suffix not in ("", ".list", ".sources") or not source.is_file():
            continue
        for url in re.findall(r"(?:^URIs:\s*|^deb\s+(?:\[[^]]*\]\s+)?)(\S+)", source.read_text(), re.M):
            if url.rstrip("/").endswith("/debian"):
                return url.rstrip("/")
    return DEFAULT_MIRROR


def base_image(podman: Podman, timeout: float = 900) -> str:
    """The tag of a Debian base image with ``PACKAGES``: from podman's storage, else the cached tarball,
    else made now by mmdebstrap (about a minute) and cached."""
    mirror = debian_mirror()
    key = hashlib.sha256(f"{SUITE} {','.join(PACKAGES)} {mirror}".encode()).hexdigest()[:12]
    tag = f"localhost/sundown-base:{key}"
    if podman("image", "exists", tag, check=False).returncode == 0:
        return tag
    tarball = cache_dir() / f"base-{key}.tar"
    if not tarball.exists():
        if shutil.which("mmdebstrap") is None:
            raise RuntimeError("mmdebstrap is not installed (apt-get install mmdebstrap)")
        partial = tarball.with_name(f"{tarball.name}.{os.getpid()}.partial")
        made = subprocess.run(
            [
                "mmdebstrap",
                "--quiet",
                "--variant=apt",
                "--format=tar",
                f"--include={','.join(PACKAGES)}",
                SUITE,
                str(partial),
                mirror,
            ],
            timeout=timeout,
            capture_output=True,
            text=True,
        )
        if made.returncode != 0:
            partial.unlink(missing_ok=True)
            raise RuntimeError(f"mmdebstrap exited {made.returncode}:\n{made.stderr[-3000:]}")
        partial.rename(tarball)  # whole or not at all: a run stopped halfway leaves no tarball behind
    podman("import", "--quiet", str(tarball), tag, timeout=timeout)
    return tag
