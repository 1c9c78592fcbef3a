"""The wheel is complete by itself: built, installed into a fresh venv outside the tree, it migrates,
serves in Japanese and passes ``sundown health``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from devtools.pgcluster import free_port

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from this tree by its build hook (setup.py)."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(ROOT)], check=True, cwd=out
    )
    return next(out.glob("sundown-*.whl"))


def test_wheel_holds_catalogs_templates_static_and_migrations(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for locale in ("ja", "zh_Hans"):
        assert f"app/translations/{locale}/LC_MESSAGES/messages.mo" in names
    assert "app/_files/templates/base.html" in names
    assert "app/_files/alembic.ini" in names and "app/_files/gunicorn.conf.py" in names
    assert any(n.startswith("app/_files/static/") for n in names)
    assert any(n.startswith("app/_files/migrations/versions/") and n.endswith(".py") for n in names)
    assert any(n.endswith("entry_points.txt") for n in names)


def test_installed_wheel_migrates_serves_japanese_and_is_healthy(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin/pip"), "install", "--quiet", str(wheel)], check=True, cwd=tmp_path)
    port = free_port()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "SUNDOWN_SECRET_KEY": "k" * 40,
        "SUNDOWN_ORIGIN": f"http://localhost:{port}",
        "SUNDOWN_RP_ID": "localhost",
        "SUNDOWN_DATABASE_URL": f"sqlite:///{tmp_path}/s.db",
        "SUNDOWN_LOG_FORMAT": "json",
    }
    sundown = str(venv / "bin/sundown")
    run = subprocess.run([sundown, "migrate"], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    with open(tmp_path / "server.log", "wb") as log:
        server = subprocess.Popen(
            [sundown, "serve", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
            env=env,
            cwd=tmp_path,
            stdout=log,
            stderr=log,
        )
    try:
        page = _get_when_up(f"http://127.0.0.1:{port}/", {"Accept-Language": "ja", "Host": f"localhost:{port}"})
        assert 'lang="ja"' in page
        assert any("\u3040" <= ch <= "\u30ff" for ch in page)  # kana: the catalog was compiled and found
        health = subprocess.run(
            [sundown, "health", "--url", f"http://127.0.0.1:{port}"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert health.returncode == 0, health.stdout + health.stderr
    finally:
        server.terminate()
        server.wait(timeout=30)
    lines = [line for line in (tmp_path / "server.log").read_text().splitlines() if line.strip()]
    assert any("Booting worker" in json.loads(line)["message"] for line in lines)  # gunicorn's own lines too
    assert all(isinstance(json.loads(line), dict) for line in lines), lines


def _get_when_up(url: str, headers: dict[str, str], timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as response:
                return response.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
