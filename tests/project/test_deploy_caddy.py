"""The production path, for real: docs/deploy.md's Caddyfile in front of gunicorn (2 gthread workers).

One stack per database: gunicorn with ``gunicorn.conf.py``, ``SUNDOWN_PROXY_FIX=1``,
JSON logs and metrics on, behind Caddy on a loopback port. Clients connect
from their own loopback addresses (127.0.0.2, .3 ...), so the address Caddy
forwards is not Caddy's own 127.0.0.1, and the rate limiter's view of it can
be checked.
"""

from __future__ import annotations

import http.client
import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
import sqlalchemy as sa
from prometheus_client.parser import text_string_to_metric_families

from app.core import ratelimit
from app.core.db import make_engine
from app.forms.fields import CONTACT_FIELDS, Field, dump
from app.models import Attachment, Form, RateLimit
from devtools import caddy
from devtools.admins import app_for
from devtools.pgcluster import free_port
from devtools.server import ROOT, running_server
from tests.conftest import new_database_url, require
from tests.softauthn import PasskeyBrowser, invite

pytestmark = pytest.mark.slow

TOKEN = "scrape-token-for-the-deploy-test"
PERSON = {
    "name": "Bartholomew Nettlefold",
    "email": "b.nettlefold@example.org",
    "message": "Please call me back at Larkspur Cottage, 4 Ivy Row.",
}
PERSONAL = ("Bartholomew", "Nettlefold", "Larkspur", "Ivy Row", "Philippa Greenhalgh")


@dataclass
class Reply:
    status_code: int
    headers: http.client.HTTPMessage
    data: bytes

    def get_data(self, as_text: bool = False):
        return self.data.decode() if as_text else self.data

    def get_json(self):
        return json.loads(self.data)


class Browser:
    """An HTTP client from one loopback address that keeps cookies (enough for PasskeyBrowser)."""

    def __init__(self, base_url: str, source: str):
        self.netloc, self.port, self.source = urlsplit(base_url).netloc, urlsplit(base_url).port, source
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None) -> Reply:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20, source_address=(self.source, 0))
        cookie = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())} if self.cookies else {}
        try:
            connection.request(method, path, body=body, headers={"Host": self.netloc, **cookie, **(headers or {})})
            response = connection.getresponse()
            reply = Reply(response.status, response.headers, response.read())
        finally:
            connection.close()
        for header in reply.headers.get_all("Set-Cookie") or []:
            for name, morsel in SimpleCookie(header).items():
                if morsel.value and morsel["max-age"] != "0":
                    self.cookies[name] = morsel.value
                else:
                    self.cookies.pop(name, None)
        return reply

    def get(self, path: str, headers: dict | None = None) -> Reply:
        return self.request("GET", path, headers=headers)

    def post(self, path: str, json: dict | None = None, data: dict | None = None, headers: dict | None = None):
        if json is not None:
            body, kind = _json_bytes(json), "application/json"
        else:
            body, kind = urlencode(data or {}, doseq=True).encode(), "application/x-www-form-urlencoded"
        return self.request("POST", path, body, {"Content-Type": kind, **(headers or {})})


def _json_bytes(value) -> bytes:
    return json.dumps(value).encode()


@dataclass
class Stack:
    kind: str  # the database
    env: dict[str, str]
    proxy: str  # Caddy, the public origin
    direct: str  # gunicorn itself
    log: Path
    metrics_dir: Path

    def scrape(self, via: str | None = None) -> dict[tuple[str, tuple], float]:
        reply = Browser(via or self.proxy, "127.0.0.9").get("/metrics", {"Authorization": f"Bearer {TOKEN}"})
        assert reply.status_code == 200, reply.data
        return samples(reply.get_data(as_text=True))

    def log_lines(self) -> list[str]:
        return self.log.read_text().splitlines()


def samples(text: str) -> dict[tuple[str, tuple], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def submitted(scraped: dict) -> float:
    """Submissions counted under every outcome."""
    return sum(v for (name, _labels), v in scraped.items() if name == "sundown_inquiries_total")


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def stack(request, tmp_path_factory):
    require(caddy.binary() is not None, "Caddy is missing (apt-get install caddy)")
    directory = tmp_path_factory.mktemp(f"deploy-{request.param}")
    proxy_port, metrics_dir = free_port(), directory / "metrics"
    env = {
        "SUNDOWN_ENV": "production",
        "SUNDOWN_SECRET_KEY": "deploy-test-secret-key-long-enough-for-it",
        "SUNDOWN_DATABASE_URL": new_database_url(request.param, request, directory),
        "SUNDOWN_ORIGIN": f"http://localhost:{proxy_port}",
        "SUNDOWN_RP_ID": "localhost",
        "SUNDOWN_PROXY_FIX": "1",
        "SUNDOWN_LOG_FORMAT": "json",
        "SUNDOWN_METRICS_TOKEN": TOKEN,
        "SUNDOWN_SUBMIT_RATE_LIMITS": "30/1000000000",
        "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
    }
    log = directory / "gunicorn.log"
    config = ("--config", str(ROOT / "gunicorn.conf.py"))
    with running_server(env, log, workers=2, extra_args=config) as (direct, _process):
        with caddy.running_caddy(caddy.deploy_caddyfile(proxy_port, urlsplit(direct).port), directory, proxy_port):
            yield Stack(request.param, env, f"http://localhost:{proxy_port}", direct, log, metrics_dir)


def test_a_journey_through_caddy_counts_right_and_logs_no_personal_data(stack):
    with app_for(stack.env) as app:
        # The invite first: on SQLite, the CLI's write can fail while a cleanup started by traffic commits.
        admin = PasskeyBrowser(app, Browser(stack.proxy, "127.0.0.4"))
        assert admin.enroll(invite(app, "Philippa Greenhalgh")).status_code == 200
    visitor = Browser(stack.proxy, "127.0.0.2")
    form = visitor.get("/").get_data(as_text=True)
    fields = dict(re.findall(r'<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"', form))
    assert visitor.post("/", data={**fields, **PERSON}).status_code == 303
    assert visitor.post("/api/inquiries", json=PERSON).status_code == 201
    assert visitor.post("/api/inquiries", json={**PERSON, "email": "nope"}).status_code == 422
    assert admin.logout().status_code == 303
    assert admin.login().status_code == 200
    for path in ("/admin/", "/admin/export.csv", "/admin/cleanup"):
        assert admin.client.get(path).status_code == 200, path
    scraped = stack.scrape()
    assert scraped[("sundown_logins_total", (("outcome", "ok"),))] >= 1
    assert scraped[("sundown_inquiries_total", (("outcome", "invalid"),))] >= 1
    assert scraped[("sundown_request_duration_seconds_count", (("endpoint", "auth.login_verify"),))] >= 1
    sample = Browser(stack.proxy, "127.0.0.9").get("/metrics", {"Authorization": f"Bearer {TOKEN}"})
    (ROOT / "artifacts").mkdir(exist_ok=True)
    (ROOT / "artifacts" / f"metrics-after-journey-{stack.kind}.txt").write_bytes(sample.data)  # for a reader

    lines = stack.log_lines()
    logged = [json.loads(line) for line in lines]  # every line parses: the app's and gunicorn's own
    assert all({"time", "level", "logger", "message"} <= set(line) for line in logged)
    assert any(line["logger"].startswith("gunicorn") for line in logged)
    requests = [line for line in logged if "http" in line]
    assert requests and all(line.get("request_id") for line in requests)
    text = "\n".join(lines).lower() + (stack.log.parent / "caddy.log").read_text().lower()
    for personal in PERSONAL:
        assert personal.lower() not in text, personal


def test_submissions_across_two_workers_are_each_counted_once(stack):
    before = submitted(stack.scrape())
    sent = 0
    # Rounds of twenty at once until both workers have served some: on a loaded machine one worker can
    # accept a whole round before the other wakes.
    for first in range(1, 101, 20):
        sources = [f"127.0.1.{n}" for n in range(first, first + 20)]  # each a fresh connection, its own address
        with ThreadPoolExecutor(10) as pool:
            statuses = list(
                pool.map(
                    lambda source: Browser(stack.proxy, source).post("/api/inquiries", json=PERSON).status_code, sources
                )
            )
        assert statuses == [201] * 20
        sent += 20
        histogram_pids = {path.stem.split("_")[-1] for path in stack.metrics_dir.glob("histogram_*.db")}
        if len(histogram_pids) == 2:
            break
    assert len(histogram_pids) == 2  # both workers served and counted
    scrapes = [submitted(stack.scrape(via)) - before for via in [stack.proxy, stack.direct] * 4]
    assert scrapes == [sent] * 8  # whichever worker answers the scrape


def test_the_rate_limiter_sees_the_forwarded_address_and_not_a_spoofed_one(stack):
    spoofer = Browser(stack.proxy, "127.0.0.3")
    assert spoofer.post("/api/inquiries", json=PERSON, headers={"X-Forwarded-For": "203.0.113.7"}).status_code == 201
    # Straight to gunicorn (which must therefore listen on loopback only), a sent header is the forwarded one.
    direct = Browser(stack.direct, "127.0.0.3")
    assert direct.post("/api/inquiries", json=PERSON, headers={"X-Forwarded-For": "198.51.100.9"}).status_code == 201
    with app_for(stack.env) as app:

        def subject(address: str) -> str:
            with app.test_request_context(environ_base={"REMOTE_ADDR": address}):
                return ratelimit.client_id()

        engine = make_engine(stack.env["SUNDOWN_DATABASE_URL"])
        with engine.connect() as connection:
            keys = " ".join(connection.scalars(sa.select(RateLimit.key)))
        engine.dispose()
        assert subject("127.0.0.3") in keys  # Caddy forwarded the client's own address
        assert subject("203.0.113.7") not in keys  # the spoofed header from outside was not trusted
        assert subject("198.51.100.9") in keys
        assert subject("127.0.0.1") not in keys  # never Caddy's own address


def test_x_request_id_passes_through_caddy_into_the_log_and_back(stack):
    visitor = Browser(stack.proxy, "127.0.0.2")
    reply = visitor.get("/privacy", {"X-Request-ID": "journey-4f1c.7"})
    assert reply.headers["X-Request-ID"] == "journey-4f1c.7"
    generated = visitor.get("/privacy").headers["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", generated)
    logged = [json.loads(line) for line in stack.log_lines() if line.startswith("{")]
    ids = {line["request_id"] for line in logged if line.get("http", {}).get("endpoint") == "public.privacy"}
    assert {"journey-4f1c.7", generated} <= ids


def test_the_health_command_asks_the_running_server(stack):
    with app_for(stack.env) as app:
        runner = app.test_cli_runner()
        healthy = runner.invoke(args=["health", "--url", stack.direct])
        assert healthy.exit_code == 0
        assert json.loads(healthy.output) == {"database": True, "migrations": True, "ok": True, "cleanup": "ok"}
        gone = runner.invoke(args=["health", "--url", f"http://127.0.0.1:{free_port()}", "--timeout", "2"])
        assert gone.exit_code == 1 and json.loads(gone.output)["ok"] is False


def multipart(fields: dict[str, str], files: list[tuple[str, str, bytes]]) -> tuple[bytes, str]:
    """A multipart/form-data body of ``fields`` and ``(field, name, bytes)`` files, and its content type."""
    boundary = "sundown-test-boundary-7d1f"
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode()
        for key, value in fields.items()
    ]
    parts += [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"; filename="{name}"\r\n'
        f"Content-Type: application/octet-stream\r\n\r\n".encode()
        + data
        + b"\r\n"
        for key, name, data in files
    ]
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def test_files_pass_through_caddy_and_an_upload_over_the_limit_gets_the_apps_answer(stack):
    engine = make_engine(stack.env["SUNDOWN_DATABASE_URL"])
    try:
        with engine.begin() as connection:
            connection.execute(
                sa.insert(Form).values(
                    slug="files",
                    title={"en": "Files"},
                    description={},
                    email_field="email",
                    enabled=True,
                    fields=dump((*CONTACT_FIELDS, Field("files", "file", {"en": "Files"}))),
                    created_at=datetime.now(UTC),
                    updated_at=datetime.now(UTC),
                )
            )
        visitor = Browser(stack.proxy, "127.0.0.5")
        five_mb = b"log line\n" * (5 * 1024 * 1024 // 9)
        body, kind = multipart(PERSON, [("files", "server.log", five_mb)])
        reply = visitor.request("POST", "/api/forms/files/inquiries", body, {"Content-Type": kind})
        assert reply.status_code == 201, reply.data[:300]
        body, kind = multipart(PERSON, [("files", "a.log", five_mb), ("files", "b.log", five_mb + five_mb[:1024])])
        reply = visitor.request("POST", "/api/forms/files/inquiries", body, {"Content-Type": kind})
        assert reply.status_code == 413 and "The files are larger than 10 MB" in reply.get_json()["errors"]["files"]
        with engine.connect() as connection:
            assert list(connection.execute(sa.select(Attachment.name, Attachment.size))) == [
                ("server.log", len(five_mb))
            ]
    finally:
        engine.dispose()
