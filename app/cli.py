"""Operator commands: ``flask --app wsgi COMMAND``."""

from __future__ import annotations

import click
from flask import Flask
from flask.cli import with_appcontext

from app.models import CleanupStatus

from app import db, migrate
from app import cleanup


def init_app(app: Flask) -> None:
    """Register the operator commands."""
    app.cli.add_command(db_upgrade)
    app.cli.add_command(prune_command)
    app.cli.add_command(admin_group)


@click.command("db-upgrade")
@with_appcontext
def db_upgrade() -> None:
    """Migrate the database to the newest schema."""
    migrate.upgrade(db.get_engine())
    click.echo(f"Database at revision {migrate.head_revision()}.")


@click.command("prune")
@click.option("--force", is_flag=True, help="Ignore the interval (never overlaps a running prune).")
@click.option("--dry-run", is_flag=True, help="Only print what would be deleted per target.")
@with_appcontext
def prune_command(force: bool, dry_run: bool) -> None:
    """Delete data past retention now, through the same claim as every request."""
    if dry_run:
        for name, (count, oldest) in cleanup.dry_run().items():
            click.echo(f"{name}: {count} (oldest {oldest.isoformat() if oldest else '-'})")
        return
    row = cleanup.run("cli", force=force)
    if row is None:
        due = cleanup.next_due_at(db.get_session())
        click.echo(f"Not run: another run holds the claim or none is due (next due {due}); try --force.")
        return
    for name, count in cleanup.as_dict(row)["deleted"].items():
        click.echo(f"{name}: {count} deleted")
    click.echo(f"run {row.id}: {row.status}, {row.remaining} remaining")
    if row.status == CleanupStatus.ERROR:
        raise click.ClickException(f"run {row.id} failed: {row.error}")


@click.group("admin")
def admin_group() -> None:
    """Admin accounts: one-time enrollment links."""


@admin_group.command("invite")
@click.argument("name")
@click.option("--recover", is_flag=True, help="Add a passkey to an existing admin instead.")
@with_appcontext
def admin_invite(name: str, recover: bool) -> None:
    """Print a one-time link that lets NAME register a passkey."""
    from app.auth import invites

    session = db.get_session()
    try:
        url = invites.create(session, name, recover=recover)
    except invites.InviteError as error:
        raise click.ClickException(str(error)) from error
    session.commit()
    click.echo(url)


@admin_group.command("first-link")
@with_appcontext
def admin_first_link() -> None:
    """Print an enrollment link for the first admin, only while there is no admin."""
    from app.auth import invites

    session = db.get_session()
    url = invites.first_admin_link(session)
    if url is None:
        click.echo("An admin exists; no first-admin link is needed.")
        return
    session.commit()
    click.echo(f"No admin yet. Open this one-time link to create the first passkey:\n{url}")
