"""The container recipe: the Dockerfile's instructions, and the entrypoint run for real (no database).

The image itself is built and run by test_container_image.py (podman, on a base made from Debian's packages).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (KEYWORD, arguments), continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def test_dockerfile_runs_unprivileged_with_a_volume_and_a_health_check():
    instructions = _instructions()
    keywords = [keyword for keyword, _ in instructions]
    assert set(keywords) <= {
        "FROM",
        "ENV",
        "RUN",
        "COPY",
        "USER",
        "WORKDIR",
        "VOLUME",
        "EXPOSE",
        "HEALTHCHECK",
        "ENTRYPOINT",
        "CMD",
        "ARG",
        "LABEL",
    }
    # The base is a build argument (CI passes one made from Debian's packages); by default the public slim image.
    assert instructions[0] == ("ARG", "BASE=python:3.11-slim")
    assert [args.split()[0] for k, args in instructions if k == "FROM"] == ["${BASE}", "${BASE}"]
    final = instructions[max(i for i, (k, _) in enumerate(instructions) if k == "FROM") :]
    users = [args for k, args in final if k == "USER"]
    assert users and users[-1] not in ("root", "0")
    assert [args for k, args in final if k == "VOLUME"] == ["/data"]
    assert any("sundown health" in args.replace('", "', " ") for k, args in final if k == "HEALTHCHECK")
    assert any("--require-hashes -r" in args for k, args in final if k == "RUN")


def test_compose_runs_the_app_on_a_read_only_root_with_its_volume_and_a_tmpfs():
    service = (ROOT / "compose.yaml").read_text().split("\n  caddy:")[0]
    assert "read_only: true" in service and "tmpfs:\n      - /tmp" in service
    assert "- sundown-data:/data" in service


def _entrypoint(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """Run docker-entrypoint.sh with a fake `sundown` that records its calls."""
    log = tmp_path / "calls"
    fake = tmp_path / "sundown"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {log}\n[ "$1" = admin ] && echo "No admin yet. LINK"\nexit 0\n')
    fake.chmod(0o755)
    run = subprocess.run(
        [str(ROOT / "docker-entrypoint.sh"), "echo", "served"],
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"], "SUNDOWN_COMMAND": str(fake), **env},
    )
    run.calls = log.read_text().splitlines() if log.exists() else []
    return run


def test_entrypoint_migrates_only_when_asked(tmp_path):
    asked = _entrypoint(tmp_path, SUNDOWN_MIGRATE_ON_START="1")
    assert asked.returncode == 0 and asked.calls == ["migrate", "admin first-link"]
    assert asked.stdout == "served\n" and "LINK" in asked.stderr
    (tmp_path / "calls").unlink()
    unasked = _entrypoint(tmp_path)
    assert unasked.calls == ["admin first-link"] and unasked.stdout == "served\n"


def test_entrypoint_stops_when_the_migration_fails(tmp_path):
    fake = tmp_path / "sundown"
    fake.write_text('#!/bin/sh\n[ "$1" = migrate ] && exit 3\nexit 0\n')
    fake.chmod(0o755)
    env = {"PATH": os.environ["PATH"], "SUNDOWN_COMMAND": str(fake), "SUNDOWN_MIGRATE_ON_START": "1"}
    run = subprocess.run(
        [str(ROOT / "docker-entrypoint.sh"), "echo", "served"], capture_output=True, text=True, env=env
    )
    assert run.returncode == 3 and run.stdout == ""
