"""Operator commands for people and erasures: ``flask --app wsgi people ...`` and ``erasures ...``.

Output is for the operator, in English; ``people export`` writes JSON only,
so it can be piped. An address that is not valid exits with status 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from flask.cli import with_appcontext

from app import audit
from app.core import background, db
from app.inquiries import gone
from app.people import erasure, lookup, reapply, records


def _address(raw: str) -> str:
    address = lookup.normalise(raw)
    if address is None:
        raise click.BadParameter("not a valid e-mail address", param_hint="EMAIL")
    return address


@click.group("people")
def people_group() -> None:
    """What is held about one e-mail address: find, export, erase."""


@people_group.command("find")
@click.argument("email")
@with_appcontext
def people_find(email: str) -> None:
    """List the inquiries held for EMAIL (every folder, held or not)."""
    address = _address(email)
    person = lookup.find(db.get_session(), address)
    click.echo(f"{address}: {len(person.inquiries)} inquiries, {len(person.held)} on legal hold")
    for inquiry in person.inquiries:
        hold = f"  legal hold: {inquiry.hold_reason}" if inquiry.legal_hold else ""
        click.echo(
            f"#{inquiry.id}  {records.iso(inquiry.created_at)}  {inquiry.status}  "
            f"{len(person.audit[inquiry.id])} audit entries{hold}"
        )


@people_group.command("export")
@click.argument("email")
@with_appcontext
def people_export(email: str) -> None:
    """Write everything held about EMAIL to stdout as JSON (docs/people.md gives the shape)."""
    address = _address(email)
    out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else None
    for chunk in records.stream_json(background.this_app(), address):
        if out is None:
            click.echo(chunk.decode("utf-8"), nl=False)
        else:
            out.write(chunk)
    if out is not None:
        out.flush()


@people_group.command("erase")
@click.argument("email")
@click.option("--yes", is_flag=True, help="Erase without asking (required when not at a terminal).")
@with_appcontext
def people_erase(email: str, yes: bool) -> None:
    """Erase every inquiry of EMAIL not on legal hold; keep only a keyed hash of the address."""
    address = _address(email)
    with db.transaction() as session:  # ends before the erasure: no snapshot pins the WAL
        person = lookup.find(session, address)
    for inquiry in person.held:
        click.echo(f"kept: #{inquiry.id} is on legal hold ({inquiry.hold_reason})")
    if not yes and not click.confirm(f"Erase {person.erasable} inquiries of {address}?"):
        raise click.ClickException("nothing erased")
    outcome = erasure.erase(address, audit.OPERATOR)
    gone.forget_now()
    click.echo(f"erased {outcome.erased} inquiries, {outcome.kept_on_hold} kept on legal hold")


@click.group("erasures")
def erasures_group() -> None:
    """Erasure records: export them beside backups, apply them after a restore."""


@erasures_group.command("export")
@click.argument("file", type=click.Path(dir_okay=False, writable=True, path_type=Path))
@with_appcontext
def erasures_export(file: Path) -> None:
    """Write every erasure record (address hashes, never addresses) to FILE as JSON ('-' for stdout)."""
    document = reapply.export_records(db.get_session())
    text = json.dumps(document, indent=1) + "\n"
    if str(file) == "-":
        click.echo(text, nl=False)
    else:
        file.write_text(text, encoding="utf-8")
        click.echo(f"{len(document['erasures'])} erasure records written to {file}")


@erasures_group.command("apply")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@with_appcontext
def erasures_apply(file: Path) -> None:
    """After a restore: erase again every inquiry that an erasure in FILE covered."""
    try:
        parsed = reapply.parse_records(file.read_text(encoding="utf-8"))
    except (reapply.RecordsError, UnicodeDecodeError) as error:
        raise click.ClickException(f"{file}: {error}") from None
    outcome = reapply.apply_records(parsed)
    gone.forget_now()
    click.echo(
        f"{len(parsed)} erasure records applied: {outcome.erased} inquiries erased again, "
        f"{outcome.kept_on_hold} kept on legal hold"
    )
