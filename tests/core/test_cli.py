"""Operator commands (app/cli): ``flask cleanup``, with ``--dry-run`` and ``--force``; every command's
``--help`` with no settings at all, and a missing setting as one line.

``flask admin invite`` and ``first-link`` are tested with enrollment
(test_auth_enroll.py), ``flask db-upgrade`` with the migrations.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from flask.cli import cli as flask_cli
from sqlalchemy import select

from app import cli
from app.cli.console import sundown
from app.models import CleanupRun
from tests.factories import add_inquiries, aged_inquiries

ROOT = Path(__file__).resolve().parents[2]
MISSING_KEY = "Error: SUNDOWN_SECRET_KEY is not set: set it to a random string of at least 32 characters"

LEDGER = select(CleanupRun).order_by(CleanupRun.id)


def test_cleanup_dry_run_then_run_then_not_due_then_force(runner, db_session, clock, query):
    add_inquiries(db_session, aged_inquiries(clock, [200, 300]))
    dry = runner.invoke(args=["cleanup", "--dry-run"])
    assert "inquiries: 2 (oldest " in dry.output
    assert query(LEDGER) == []
    first = runner.invoke(args=["cleanup"])
    assert "inquiries: 2 deleted" in first.output and ": ok, 0 remaining" in first.output
    assert "Not run" in runner.invoke(args=["cleanup"]).output
    forced = runner.invoke(args=["cleanup", "--force"])
    assert forced.exit_code == 0 and "inquiries: 0 deleted" in forced.output
    assert [run.trigger for run in query(LEDGER)] == ["cli", "cli"]


def test_the_old_command_name_says_it_is_now_cleanup_and_runs_it(runner, db_session, clock, query):
    add_inquiries(db_session, aged_inquiries(clock, [200]))
    result = runner.invoke(args=["prune", "--dry-run"])
    assert result.exit_code == 0
    assert "`flask prune` is now `flask cleanup`" in result.output and "inquiries: 1 (oldest " in result.output
    assert query(LEDGER) == []
    assert "inquiries: 1 deleted" in runner.invoke(args=["prune"]).output


def no_settings() -> dict[str, str | None]:
    """The environment's SUNDOWN_* and FLASK_* variables removed (CliRunner's way of unsetting one)."""
    return {name: None for name in os.environ if name.startswith(("SUNDOWN_", "FLASK_"))}


def command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command and subcommand of ``group``, as the words that name it."""
    for name, command in sorted(group.commands.items()):
        yield (*prefix, name)
        if isinstance(command, click.Group):
            yield from command_paths(command, (*prefix, name))


def test_sundown_and_every_command_explain_themselves_with_no_settings():
    runner = CliRunner()
    listed = runner.invoke(sundown, ["--help"], env=no_settings(), prog_name="sundown")
    assert listed.exit_code == 0 and "Traceback" not in listed.output and "Error" not in listed.output
    names = {command.name for command in cli.commands() if not command.hidden} | {"serve", "migrate", "invite"}
    assert {line.split()[0] for line in listed.output.split("Commands:")[1].splitlines() if line.strip()} == names
    paths = list(command_paths(sundown))
    assert ("admin", "first-link") in paths and ("people", "erase") in paths and ("erasures", "apply") in paths
    for path in paths:
        shown = runner.invoke(sundown, [*path, "--help"], env=no_settings(), prog_name="sundown")
        assert shown.exit_code == 0 and shown.output.startswith(f"Usage: sundown {' '.join(path)} "), shown.output


def test_every_flask_command_explains_itself_with_no_settings(monkeypatch):
    monkeypatch.chdir(ROOT)  # where `flask --app wsgi` is run from
    runner = CliRunner()
    listed = runner.invoke(flask_cli, ["--app", "wsgi", "--help"], env=no_settings(), prog_name="flask")
    assert listed.exit_code == 0 and "Traceback" not in listed.output
    assert f"{MISSING_KEY}" in listed.output  # the one line, then the help with every command
    assert all(f"  {command.name} " in listed.output for command in cli.commands() if not command.hidden)
    for path in command_paths(click.Group(commands=cli.commands())):
        shown = runner.invoke(flask_cli, ["--app", "wsgi", *path, "--help"], env=no_settings(), prog_name="flask")
        assert shown.exit_code == 0 and shown.output.startswith(f"Usage: flask {' '.join(path)} "), shown.output


def _run(*command: str, **env: str) -> subprocess.CompletedProcess:
    """``command`` from the venv's bin, in the source tree, with no settings but ``env``."""
    environment = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), **env}
    executable = str(Path(sys.executable).parent / command[0])
    return subprocess.run(
        [executable, *command[1:]], env=environment, cwd=ROOT, capture_output=True, text=True, timeout=60
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [("sundown", "cleanup"), ("sundown", "serve"), ("sundown", "admin", "list"), ("flask", "--app", "wsgi", "cleanup")],
)
def test_a_missing_setting_stops_a_command_with_its_one_line(command):
    stopped = _run(*command)
    assert stopped.returncode == 1 and stopped.stdout == ""
    assert stopped.stderr.startswith(MISSING_KEY) and stopped.stderr.count("\n") == 1, stopped.stderr


@pytest.mark.slow
def test_a_wrong_setting_stops_a_command_with_its_one_line():
    stopped = _run("sundown", "migrate", SUNDOWN_ENV="staging")
    assert stopped.returncode == 1
    assert stopped.stderr == "Error: SUNDOWN_ENV must be production or development, not 'staging'.\n"
