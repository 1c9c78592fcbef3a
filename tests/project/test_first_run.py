"""The first run: `make run` ends with a box (the localhost address, the first admin's link), then serves.

Also the wrong-origin notice: a login or enrollment page opened at an address
that is not the configured origin (127.0.0.1 instead of localhost) says so and
links to the same page at the right one.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
import urllib.request

import pytest

from app.cli.devserver import box
from devtools.pgcluster import free_port
from devtools.server import ROOT, stop
from tests.conftest import require
from tests.softauthn import invite

WAIT = 60  # seconds before a wait gives up (a failure, never a timing assertion)
MAKE = ["make", "-s", "--old-file=.venv/.installed", "run"]  # never reinstall inside a test


class Output:
    """The lines a process prints (stdout and stderr together), collected as they come."""

    def __init__(self, process: subprocess.Popen):
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process) -> None:
        for line in process.stdout:
            self.lines.append(line.rstrip("\n"))

    def close(self, process) -> None:
        """After the process has ended: the rest of its output read, the pipe closed."""
        self._thread.join(WAIT)
        process.stdout.close()

    def wait_for(self, predicate, what: str) -> int:
        """The index of the first line matching ``predicate``."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            for index, line in enumerate(list(self.lines)):
                if predicate(line):
                    return index
            time.sleep(0.05)
        pytest.fail(f"gave up waiting for {what}; printed so far:\n" + "\n".join(self.lines))


@pytest.mark.slow
def test_make_run_prints_the_box_last_then_serves_on_the_chosen_port(tmp_path):
    require((ROOT / ".venv" / "bin" / "flask").exists(), "no .venv here: run make install first")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUNDOWN_")}
    env["SUNDOWN_DATABASE_URL"] = f"sqlite:///{tmp_path / 'first.db'}"  # not the developer's database
    process = subprocess.Popen(
        [*MAKE, f"PORT={port}"],
        cwd=ROOT,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    output = Output(process)
    try:
        bottom = output.wait_for(lambda line: line.startswith("└"), "the box")
        top = max(i for i, line in enumerate(output.lines[:bottom]) if line.startswith("┌"))
        inside = [line.strip("│ ") for line in output.lines[top + 1 : bottom]]
        assert all(len(line) <= 80 for line in output.lines[top : bottom + 1])  # an 80-column terminal
        said = " ".join(inside)
        assert f"Open http://localhost:{port} (not 127.0.0.1: passkeys are bound to the name localhost)." in said
        assert f"Admin pages: http://localhost:{port}/admin/" in inside
        [link] = [line for line in inside if line.startswith(f"http://localhost:{port}/auth/enroll/")]
        with urllib.request.urlopen(link, timeout=20) as page:
            assert "Create your passkey" in page.read().decode()
        served = output.wait_for(lambda line: "GET auth.enroll 200" in line, "the request's log line")
        assert output.lines[bottom + 1 : served] == []  # nothing between the box and serving
        assert not any("Running on" in line for line in output.lines)
    finally:
        stop(process)
        output.close(process)


def test_the_dev_server_refuses_an_origin_it_does_not_serve(runner):
    result = runner.invoke(args=["dev-server", "--port", "5050"])  # the test origin is http://localhost
    assert result.exit_code != 0
    assert "set SUNDOWN_ORIGIN=http://localhost:5050 (make run PORT=5050 does)" in result.output


def test_the_box_fits_80_columns_wraps_sentences_and_never_a_link():
    link = "http://localhost:54321/auth/enroll/" + "x" * 43
    sentence = "Open http://localhost:54321 (not 127.0.0.1: passkeys are bound to the name localhost)."
    lines = box(["Sundown is running.", "", sentence, link]).splitlines()
    assert max(len(line) for line in lines) == 80 and len(sentence) > 78
    assert lines[0] == "┌" + "─" * 79 and lines[-1] == "└" + "─" * 79
    assert lines[2] == "│" and lines[-2] == f"│ {link}"
    assert " ".join(line[2:] for line in lines[3:5]) == sentence


def test_a_box_of_short_lines_is_as_wide_as_its_longest():
    lines = box(["Sundown is running.", "Press Ctrl+C to stop."]).splitlines()
    assert lines[0] == "┌" + "─" * 22 and lines[1:3] == ["│ Sundown is running.", "│ Press Ctrl+C to stop."]


def notice(page: str) -> str | None:
    found = re.search(r'<div class="alert" role="alert">(.*?)</div>', page, re.S)
    return " ".join(found.group(1).split()) if found else None


def test_the_login_page_at_another_origin_says_so_and_links_to_the_configured_one(client):
    assert notice(client.get("/auth/login").get_data(as_text=True)) is None
    page = client.get("/auth/login?next=/admin/retention", base_url="http://127.0.0.1:5000").get_data(as_text=True)
    assert notice(page) == (
        "<p>This page is open at http://127.0.0.1:5000, but passkeys for this site work only at "
        'http://localhost. <a href="http://localhost/auth/login?next=/admin/retention">'
        "Open this page at http://localhost</a>.</p>"
    )


def test_the_enrollment_page_at_another_origin_links_to_the_same_link_at_the_configured_one(app, client):
    path = invite(app, "Ada").removeprefix("http://localhost")
    assert notice(client.get(path).get_data(as_text=True)) is None
    page = client.get(path, base_url="http://127.0.0.1:5000").get_data(as_text=True)
    assert f'<a href="http://localhost{path}">' in notice(page)
    assert "Create passkey" in page  # the page still works at the right address
