"""Operator commands: ``flask --app wsgi COMMAND`` and ``sundown COMMAND`` (``app.cli.console``).

Every command is listed in ``COMMANDS`` and declared to Flask as a plugin
(``flask.commands`` in pyproject.toml), so ``--help`` lists and explains
them without loading the app, with no settings at all. A command loads the
app when it runs; a setting that is missing or wrong then stops it with its
one line (``SettingsRefused``), never a traceback.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import click
from flask import Flask
from flask.cli import NoAppException, with_appcontext
from flask_babel import force_locale
from sqlalchemy import func, select

from app import audit, cleanup
from app.auth import invites, logins, roles
from app.cleanup import chain
from app.cli import devserver
from app.core import background, backup, clock, db, migrate
from app.core.parsing import ConfigurationError
from app.forms import store as form_store
from app.models import Admin, AdminLogin, AdminRole, AuditAction, CleanupStatus, Passkey
from app.outbox import deliver
from app.people import cli as people_cli
from app.web import health


class SettingsRefused(NoAppException):
    """The app cannot be built from the settings: the command line prints the one line that says which
    setting and why, and exits 1 (Flask's own listing of commands prints it as its error line)."""

    exit_code = 1

    def show(self, file=None) -> None:
        """``Error: SUNDOWN_... is not set: ...``, without a usage line: the command was used right."""
        click.echo(f"Error: {self.format_message()}", file=file, err=True)


def checked(factory: Callable[[], Flask]) -> Flask:
    """``factory()``, with a ``ConfigurationError`` raised as ``SettingsRefused`` (``wsgi.py``, ``sundown``)."""
    try:
        return factory()
    except ConfigurationError as error:
        raise SettingsRefused(str(error)) from None


def init_app(app: Flask) -> None:
    """Register the operator commands."""
    for command in commands():
        app.cli.add_command(command)


def commands() -> tuple[click.Command, ...]:
    """Every operator command (also listed as ``flask.commands`` plugins in pyproject.toml)."""
    return (
        db_upgrade,
        cleanup_command,
        old_cleanup_name,
        deliver_command,
        admin_group,
        health_command,
        dev_server,
        backup_command,
        verify_ledger_command,
        people_cli.people_group,
        people_cli.erasures_group,
    )


@click.command("db-upgrade")
@with_appcontext
def db_upgrade() -> None:
    """Migrate the database to the newest schema."""
    migrate.upgrade(db.get_engine())
    click.echo(f"Database at revision {migrate.head_revision()}.")


@click.command("cleanup")
@click.option("--force", is_flag=True, help="Ignore the interval (never overlaps a running cleanup).")
@click.option("--dry-run", is_flag=True, help="Only print what would be deleted per target.")
@with_appcontext
def cleanup_command(force: bool, dry_run: bool) -> None:
    """Delete data past retention now, through the same claim as every request."""
    if dry_run:
        for name, (count, oldest) in cleanup.dry_run().items():
            click.echo(f"{name}: {count} (oldest {oldest.isoformat() if oldest else '-'})")
        session = db.get_session()
        for form in form_store.all_forms(session):
            if form.retention_days or form.spam_retention_days:
                click.echo(
                    f"form {form.slug}: keeps inquiries {form.retention_days or 'the site default'} days, "
                    f"spam {form.spam_retention_days or 'the site default'} days"
                )
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


@click.command("prune", hidden=True, params=cleanup_command.params)
@click.pass_context
def old_cleanup_name(context: click.Context, **options) -> None:
    """The old name of ``flask cleanup``: says so, then runs it."""
    click.echo("`flask prune` is now `flask cleanup`; running that.", err=True)
    context.invoke(cleanup_command, **options)


@click.command("deliver")
@with_appcontext
def deliver_command() -> None:
    """Send the deliveries that are due now: notifications, replies (for idle sites; requests do it otherwise)."""
    summary = deliver.deliver_due()
    click.echo(
        f"{summary.attempts} attempted: {summary.counts['done']} delivered, "
        f"{summary.counts['pending']} to retry, {summary.counts['failed']} failed"
    )


@click.group("admin")
def admin_group() -> None:
    """Admin accounts: one-time enrollment links."""


@admin_group.command("invite")
@click.argument("name")
@click.option("--recover", is_flag=True, help="Add a passkey to an existing admin instead.")
@click.option(
    "--role",
    type=click.Choice([role.value for role in AdminRole]),
    default=AdminRole.OWNER.value,
    show_default=True,
    help="What the new admin may do.",
)
@click.option("--forms", default="", help="A responder's or viewer's forms, by slug: quote,jobs")
@with_appcontext
def admin_invite(name: str, recover: bool, role: str, forms: str) -> None:
    """Print a one-time link that lets NAME register a passkey."""
    session = db.get_session()
    try:
        with force_locale("en"):  # operator output stays English
            form_ids = roles.form_ids_of(session, forms.split(","), by="slug")
            url = invites.create(session, name, recover=recover, role=AdminRole(role), form_ids=tuple(form_ids))
    except (invites.InviteError, roles.RoleError) as error:
        raise click.ClickException(str(error)) from error
    slugs = [slug.strip() for slug in forms.split(",") if slug.strip()]
    audit.record(
        session,
        audit.OPERATOR,
        AuditAction.INVITE_CREATED,
        1,
        f"for {name}" if recover else f"for {name} as {roles.describe(role, slugs)}",
    )
    session.commit()
    click.echo(url)


@admin_group.command("list")
@with_appcontext
def admin_list() -> None:
    """Print every admin: name, passkeys, live logins."""
    session = db.get_session()
    now = clock.now()
    forms = form_store.names(session)
    for admin in session.scalars(select(Admin).order_by(Admin.name)):
        keys = session.scalar(select(func.count()).select_from(Passkey).where(Passkey.admin_id == admin.id))
        live = session.scalar(
            select(func.count())
            .select_from(AdminLogin)
            .where(AdminLogin.admin_id == admin.id, logins.live_login_clause(now))
        )
        click.echo(
            f"{admin.name} ({roles.describe(admin.role, (forms.get(each, '?') for each in admin.form_ids))}): "
            f"{keys} passkeys, {live} logins"
        )


@admin_group.command("remove")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@with_appcontext
def admin_remove(name: str, yes: bool) -> None:
    """Remove admin NAME with their passkeys and logins (audited); never the last admin."""
    session = db.get_session(write=True)
    admin = session.scalar(select(Admin).where(Admin.name == name))
    if admin is None:
        raise click.ClickException(f"no admin named {name!r}")
    if session.scalar(select(func.count()).select_from(Admin)) == 1:
        raise click.ClickException("this is the last admin; invite another one first")
    try:
        with force_locale("en"):
            roles.check_removable(session, admin)
    except roles.RoleError as error:
        raise click.ClickException(str(error)) from error
    if not yes:
        click.confirm(f"Remove {name}, their passkeys and logins?", abort=True)
    session.delete(admin)
    audit.record(session, audit.OPERATOR, AuditAction.ADMIN_REMOVED, 1, f"admin {name}")
    session.commit()
    click.echo(f"{name} was removed, with their passkeys and logins.")


@admin_group.command("first-link")
@with_appcontext
def admin_first_link() -> None:
    """Print an enrollment link for the first admin, only while there is no admin."""
    session = db.get_session()
    url = invites.first_admin_link(session)
    if url is None:
        click.echo("An admin exists; no first-admin link is needed.")
        return
    session.commit()
    click.echo(f"No admin yet. Open this one-time link to create the first passkey:\n{url}")


@click.command("health")
@click.option("--url", help="Ask the server at this base URL instead, e.g. http://127.0.0.1:8000.")
@click.option("--timeout", default=5.0, show_default=True, help="Seconds to wait for the server.")
@with_appcontext
def health_command(url: str | None, timeout: float) -> None:
    """Check the database and its schema, as GET /healthz does; exit 0 when healthy, else 1.

    With --url, ask a running server's /healthz (a container's health check, no curl needed).
    """
    if url:
        healthy, report = _ask_server(url, timeout)
    else:
        report = health.checks()
        healthy = all(report.values())
        report["ok"] = healthy
    click.echo(json.dumps(report, sort_keys=True))
    if not healthy:
        click.get_current_context().exit(1)


def _ask_server(url: str, timeout: float) -> tuple[bool, dict]:
    if not url.startswith(("http://", "https://")):
        raise click.BadParameter("an http:// or https:// URL", param_hint="--url")
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/healthz", timeout=timeout) as response:
            return response.status == 200, json.load(response)
    except urllib.error.HTTPError as error:  # 503: the body still says which check failed
        with error:
            return False, json.load(error)
    except (OSError, ValueError) as error:
        return False, {"ok": False, "error": f"no answer from {url}: {type(error).__name__}"}


@click.command("dev-server")
@click.option("--port", type=click.IntRange(1, 65535), help="Port on 127.0.0.1; by default SUNDOWN_ORIGIN's.")
@with_appcontext
def dev_server(port: int | None) -> None:
    """Serve on 127.0.0.1 for development (make run): last, a box with the address to open."""
    devserver.serve(background.this_app(), port)


@click.command("backup")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@with_appcontext
def backup_command(path: Path) -> None:
    """Copy the SQLite database to PATH, consistently, while the app serves (PostgreSQL: use pg_dump)."""
    try:
        size = backup.backup(db.get_engine(), path)
    except backup.NotSQLite as error:
        raise click.ClickException(f"{error}: pg_dump --format=custom --file=PATH DATABASE_URL") from None
    except FileExistsError as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"backup written to {path} ({size} bytes); keep 'flask erasures export' beside it")


@click.command("verify-ledger")
@with_appcontext
def verify_ledger_command() -> None:
    """Check the cleanup ledger's hash chain; exit 1 naming the first broken row."""
    with db.transaction() as session:
        checked, broken = chain.verify(session)
    if broken is not None:
        click.echo(f"Ledger chain broken at run {broken.run_id}: {broken.reason} ({checked} rows before it intact).")
        click.get_current_context().exit(1)
    click.echo(f"Ledger chain intact: {checked} rows.")
