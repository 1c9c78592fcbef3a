"""The ``sundown`` command: every ``flask --app wsgi`` command, and the few an operator runs most.

``sundown serve`` runs gunicorn with the settings of docs/deploy.md and
gunicorn.conf.py's hooks; ``sundown migrate`` and ``sundown invite`` are short
for ``db-upgrade`` and ``admin invite``. The rest (cleanup, backup, health,
people, erasures, admin ...) are the app's own commands (``cli.commands``),
unchanged. All are the group's own, so ``sundown --help`` and each
command's ``--help`` need no settings; a command that runs builds the app,
and a missing setting stops it with its one line.
"""

from __future__ import annotations

import os
import sys

import click
from flask.cli import FlaskGroup, ScriptInfo

from app import cli, create_app
from app.core import paths

# docs/deploy.md, section 3: threads for slow clients, a timeout well above the cleanup's time budget.
GUNICORN_OPTIONS = [
    "--worker-class",
    "gthread",
    "--threads",
    "4",
    "--timeout",
    "60",
    "--graceful-timeout",
    "30",
    "--keep-alive",
    "5",
]


class OperatorGroup(FlaskGroup):
    """A ``FlaskGroup`` whose commands are all its own: listing or finding one never builds the app."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The group's commands, sorted (the app is not built to ask it for more)."""
        return click.Group.list_commands(self, ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The group's command ``cmd_name``, or None (the app is not built to ask it)."""
        return click.Group.get_command(self, ctx, cmd_name)


def _checked_app():
    return cli.checked(create_app)


@click.group(cls=OperatorGroup, create_app=_checked_app, add_default_commands=False, add_version_option=False)
def sundown() -> None:
    """Sundown's operator commands (settings come from SUNDOWN_* environment variables)."""


for _command in cli.commands():
    sundown.add_command(_command)


@sundown.command("serve")
@click.option("--bind", default="127.0.0.1:8000", show_default=True, help="Address and port to listen on.")
@click.option("--workers", default=4, show_default=True, type=click.IntRange(1, 64))
@click.pass_context
def serve(context: click.Context, bind: str, workers: int) -> None:
    """Serve with gunicorn (the process becomes gunicorn: signals and reloads reach it)."""
    context.ensure_object(ScriptInfo).load_app()  # the settings checked here: a bad one is one line, not a crash loop
    argv = gunicorn_argv(bind, workers)
    os.execv(argv[0], argv)


def gunicorn_argv(bind: str, workers: int) -> list[str]:
    """The gunicorn command line `serve` runs, with the installed gunicorn.conf.py."""
    gunicorn = os.path.join(os.path.dirname(sys.executable), "gunicorn")
    return [
        gunicorn,
        "app.cli.console:wsgi_app()",
        "--config",
        str(paths.GUNICORN_CONF),
        "--bind",
        bind,
        "--workers",
        str(workers),
        *GUNICORN_OPTIONS,
    ]


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
