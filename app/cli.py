"""Operator commands: ``flask --app wsgi COMMAND``."""

from __future__ import annotations

import click
from flask import Flask
from flask.cli import with_appcontext

from app import db, migrate


def init_app(app: Flask) -> None:
    """Register the operator commands."""
    app.cli.add_command(db_upgrade)


@click.command("db-upgrade")
@with_appcontext
def db_upgrade() -> None:
    """Migrate the database to the newest schema."""
    migrate.upgrade(db.get_engine())
    click.echo(f"Database at revision {migrate.head_revision()}.")
