"""The container image built from the real Dockerfile and run, as an operator would.

The base is made from Debian's packages (``devtools.containers``, cached
between runs) and passed as ``--build-arg BASE``; the image is built once
for the module, then one container runs it with a volume for its data, a
read-only root file system and the host's network (on a free loopback
port). ``.dockerignore`` is checked by building a tree of decoys.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.error
import urllib.request
from pathlib import Path

import altcha
import pytest

from devtools import containers
from devtools.pgcluster import free_port
from tests.conftest import require

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "localhost/sundown:test"
UID = "10001"
MAX_IMAGE_BYTES = 450 * 1024**2  # measured 367 MB on the Debian base (222 MB of it the base)
STOP_SECONDS = 10  # SIGTERM to stopped; gunicorn's workers finish their requests, idle ones at once
WAIT = 90  # seconds before a wait gives up (a failure, never a timing assertion)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def podman() -> containers.Podman:
    """Podman with this machine's settings; skipped loudly without it (a failure under CI=true)."""
    reason = containers.missing()
    require(reason is None, str(reason))
    return containers.Podman()


@pytest.fixture(scope="module")
def base(podman) -> str:
    """The Debian base image's tag (made once, then cached)."""
    return containers.base_image(podman)


@pytest.fixture(scope="module")
def image(podman, base) -> dict:
    """The image built from this tree's Dockerfile on ``base``; its inspected configuration."""
    podman("build", *podman.build_options(), "--build-arg", f"BASE={base}", "--tag", IMAGE, str(ROOT), timeout=1200)
    built = json.loads(podman("image", "inspect", IMAGE).stdout)[0]
    # The images this build replaced (the previous one, the build stage) go; the layers it reuses stay.
    podman("image", "prune", "--force", check=False)
    return built


class Container:
    """One container of the image, started by ``run`` and followed by its logs."""

    def __init__(self, podman: containers.Podman, name: str, port: int):
        self.podman, self.name, self.port = podman, name, port
        self.origin = f"http://localhost:{port}"

    def exec(self, *command: str, check: bool = True):
        """Run ``command`` in the running container, as its user."""
        return self.podman("exec", self.name, *command, check=check)

    def logs(self) -> str:
        """Everything the container printed, both streams, since it was created."""
        result = self.podman("logs", self.name)
        return result.stdout + result.stderr

    def url(self, path: str) -> str:
        """``path`` on the container's server, by its loopback address."""
        return f"http://127.0.0.1:{self.port}{path}"

    def wait_healthy(self) -> dict:
        """``/healthz`` once it answers 200 (the entrypoint migrates first)."""
        deadline = time.monotonic() + WAIT
        while True:
            try:
                with urllib.request.urlopen(self.request("/healthz"), timeout=5) as response:
                    return json.load(response)
            except (OSError, ValueError):
                state = self.podman("inspect", "--format", "{{.State.Running}}", self.name).stdout.strip()
                if state != "true" or time.monotonic() > deadline:
                    pytest.fail(f"no healthy answer (running: {state}); the container printed:\n{self.logs()}")
                time.sleep(0.5)

    def request(self, path: str, body: dict | None = None) -> urllib.request.Request:
        """A request for ``path`` naming the configured origin's host (a JSON POST with ``body``)."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Host": f"localhost:{self.port}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        return urllib.request.Request(self.url(path), data=data, headers=headers)


@pytest.fixture(scope="module")
def container(podman, image):
    """The image running with a fresh volume at /data, migrating at its start, read-only elsewhere."""
    name = f"sundown-test-{os.getpid()}"
    port = free_port()
    podman("volume", "create", name)
    running = Container(podman, name, port)
    settings = {
        "SUNDOWN_SECRET_KEY": "s" * 64,
        "SUNDOWN_ORIGIN": running.origin,
        "SUNDOWN_RP_ID": "localhost",
        "SUNDOWN_MIGRATE_ON_START": "1",
    }
    environment = [option for key, value in settings.items() for option in ("--env", f"{key}={value}")]
    try:
        # The image's own command, on a free loopback port: the host's network is shared with other servers.
        # Writable: the volume and a /tmp in memory, as compose.yaml has it (podman's other tmpfs mounts off).
        podman(
            "run",
            "--detach",
            "--name",
            name,
            "--network",
            "host",
            "--no-healthcheck",
            "--read-only",
            "--read-only-tmpfs=false",
            "--tmpfs",
            "/tmp",
            "--volume",
            f"{name}:/data",
            *environment,
            IMAGE,
            "sundown",
            "serve",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
        )
        running.wait_healthy()
        yield running
    finally:
        podman("rm", "--force", "--time", "0", name, check=False)
        podman("volume", "rm", "--force", name, check=False)


def test_the_image_runs_unprivileged_with_one_volume_a_health_check_and_a_modest_size(image):
    config = image["Config"]
    assert config["User"] == "sundown" and list(config["Volumes"]) == ["/data"]
    assert image["Healthcheck"]["Test"][1:] == ["sundown", "health", "--url", "http://127.0.0.1:8000"]
    assert config["Entrypoint"] == ["/usr/local/bin/docker-entrypoint.sh"]
    assert image["Size"] < MAX_IMAGE_BYTES, f"{image['Size'] / 1024**2:.0f} MB"


def test_without_its_settings_the_container_stops_with_one_line_and_its_help_still_works(podman, image):
    stopped = podman("run", "--rm", "--network", "none", "--env", "SUNDOWN_MIGRATE_ON_START=1", IMAGE, check=False)
    assert stopped.returncode == 1 and "Traceback" not in stopped.stderr
    assert stopped.stderr.splitlines()[-1].startswith("Error: SUNDOWN_SECRET_KEY is not set: set it to")
    helped = podman("run", "--rm", "--network", "none", IMAGE, "sundown", "--help")
    assert helped.returncode == 0 and "serve " in helped.stdout and "people " in helped.stdout


def test_the_entrypoint_migrates_and_prints_the_first_admin_link(container):
    logs = container.logs()
    assert "Migrating the database (SUNDOWN_MIGRATE_ON_START=1)" in logs and "Database at revision" in logs
    assert (
        f"No admin yet. Open this one-time link to create the first passkey:\n{container.origin}/auth/enroll/" in logs
    )
    assert "Traceback" not in logs


def test_healthz_answers_and_the_health_command_inside_agrees(container):
    assert container.wait_healthy() == {"database": True, "migrations": True, "ok": True, "cleanup": "ok"}
    asked = container.exec("sundown", "health", "--url", container.url(""))
    assert json.loads(asked.stdout)["ok"] is True


def test_the_server_runs_as_its_own_user_on_a_read_only_root(container):
    assert container.exec("id", "-u").stdout.strip() == UID
    assert container.exec("stat", "-c", "%u", "/proc/1").stdout.strip() == UID  # gunicorn is PID 1, unprivileged
    refused = container.exec("touch", "/opt/sundown/written", check=False)
    assert refused.returncode != 0 and "Read-only file system" in refused.stderr
    assert container.exec("stat", "-c", "%u %a", "/data/sundown.db").stdout.split() == [UID, "600"]


def test_an_inquiry_is_kept_across_a_stop_by_sigterm_and_a_start(container):
    challenge = altcha.Challenge.from_dict(_json(container.request("/api/challenge")))
    solved = altcha.Payload(challenge, altcha.solve_challenge(challenge)).to_base64()
    inquiry = {"name": "Ada", "email": "ada@example.com", "message": "Kept in the volume?", "altcha": solved}
    assert _json(container.request("/api/inquiries", inquiry)) == {"ok": True}
    assert "ada@example.com: 1 inquiries" in container.exec("sundown", "people", "find", "ada@example.com").stdout

    started = time.monotonic()
    container.podman("stop", "--time", "30", container.name)  # SIGTERM, then SIGKILL after 30 s
    stopped_in = time.monotonic() - started
    state = json.loads(container.podman("inspect", container.name).stdout)[0]["State"]
    assert state["ExitCode"] == 0 and stopped_in < STOP_SECONDS, (state["ExitCode"], stopped_in)
    assert "Handling signal: term" in container.logs()

    container.podman("start", container.name)
    container.wait_healthy()
    assert "ada@example.com: 1 inquiries" in container.exec("sundown", "people", "find", "ada@example.com").stdout


DECOYS = (
    ".env",
    ".env.production",
    "app/.env",
    "instance/secret_key",
    "instance/sundown.db",
    "sundown.db",
    "sundown.db-wal",
    "sundown.db-shm",
    "app/local.sqlite3",
    ".venv/bin/python",
    "venv/bin/python",
    ".git/config",
    "app/__pycache__/models.cpython-311.pyc",
    ".pytest_cache/v/cache/lastfailed",
    ".hypothesis/examples/x",
    ".ruff_cache/CACHEDIR.TAG",
    "bench/.data/run.db",
    "artifacts/screenshot.png",
    "server.pem",
    "app/tls.key",
    "node_modules/x/index.js",
    "build/lib/app/__init__.py",
    "dist/sundown.whl",
    "sundown.egg-info/PKG-INFO",
    "app/translations/ja/LC_MESSAGES/messages.mo",
    "tests/test_x.py",
)
NEEDED = (
    "app/__init__.py",
    "app/translations/ja/LC_MESSAGES/messages.po",
    "templates/base.html",
    "static/site.css",
    "migrations/env.py",
    "pyproject.toml",
    "setup.py",
    "alembic.ini",
    "gunicorn.conf.py",
    "requirements.lock",
    "docker-entrypoint.sh",
    "wsgi.py",
    "MANIFEST.in",
    "babel.cfg",
)


def test_dockerignore_keeps_secrets_databases_virtualenvs_and_caches_out_of_the_build(podman, base, tmp_path):
    tree = tmp_path / "tree"
    for name in DECOYS + NEEDED:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text("decoy\n")
    shutil.copy(ROOT / ".dockerignore", tree / ".dockerignore")
    (tmp_path / "Containerfile").write_text(
        f"FROM {base}\nCOPY . /ctx\nRUN find /ctx -type f -printf 'IN-CONTEXT %P\\n'\n"
    )
    built = podman(
        "build",
        "--no-cache",
        "--network",
        "host",
        "--file",
        str(tmp_path / "Containerfile"),
        "--tag",
        f"localhost/sundown-context:{os.getpid()}",
        str(tree),
        timeout=300,
    )
    podman("rmi", "--force", f"localhost/sundown-context:{os.getpid()}", check=False)
    copied = {
        line.split(" ", 1)[1] for line in (built.stdout + built.stderr).splitlines() if line.startswith("IN-CONTEXT ")
    }
    assert copied == set(NEEDED), (sorted(copied - set(NEEDED)), sorted(set(NEEDED) - copied))


def _json(request: urllib.request.Request) -> dict:
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        with error:
            pytest.fail(f"{request.full_url}: {error.code} {error.read()[:500]!r}")
