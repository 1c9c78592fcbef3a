"""The ``sundown`` command: every ``flask --app wsgi`` command, and the few an operator runs most.

``sundown serve`` runs gunicorn with the settings of docs/deploy.md and
gunicorn.conf.py's hooks; ``sundown migrate`` and ``sundown invite`` are short
for ``db-upgrade`` and ``admin invite``. The rest (cleanup, backup, health,
people, erasures, admin ...) are the app's own commands, unchanged.
"""

from __future__ import annotations

import os
import sys

import click
from flask.cli import FlaskGroup

from app import cli, create_app
from app.core import paths

# docs/deploy.md, section 3: threads for slow clients, a timeout well above the cleanup's time budget.
GUNICORN_OPTIONS = [
    "--worker-class", "gthread", "--threads", "4",
    "--timeout", "60", "--graceful-timeout", "30", "--keep-alive", "5",
]


@click.group(cls=FlaskGroup, create_app=create_app, add_default_commands=False, add_version_option=False)
def sundown() -> None:
    """Sundown's operator commands (settings come from SUNDOWN_* environment variables)."""


@sundown.command("serve")
@click.option("--bind", default="127.0.0.1:8000", show_default=True, help="Address and port to listen on.")
@click.option("--workers", default=4, show_default=True, type=click.IntRange(1, 64))
def serve(bind: str, workers: int) -> None:
    """Serve with gunicorn (the process becomes gunicorn: signals and reloads reach it)."""
    argv = gunicorn_argv(bind, workers)
    os.execv(argv[0], argv)


def gunicorn_argv(bind: str, workers: int) -> list[str]:
    """The gunicorn command line `serve` runs, with the installed gunicorn.conf.py."""
    gunicorn = os.path.join(os.path.dirname(sys.executable), "gunicorn")
    return [gunicorn, "app.cli.console:wsgi_app()", "--config", str(paths.GUNICORN_CONF),
            "--bind", bind, "--workers", str(workers), *GUNICORN_OPTIONS]


def wsgi_app():
    """The app gunicorn serves (``wsgi.py`` does the same from the source tree)."""
    return create_app()


@sundown.command("migrate")
@click.pass_context
def migrate(context: click.Context) -> None:
    """Migrate the database to the newest schema (the same as ``db-upgrade``)."""
    context.invoke(cli.db_upgrade)


@sundown.command("invite", params=cli.admin_invite.params)
@click.pass_context
def invite(context: click.Context, **options) -> None:
    """Print a one-time enrollment link for a new admin (the same as ``admin invite``)."""
    context.invoke(cli.admin_invite, **options)


def main() -> None:
    """Entry point of the console script."""
    sundown(prog_name="sundown")
