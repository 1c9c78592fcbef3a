"""The development server behind ``make run``: 127.0.0.1 only, and a box as the last thing printed.

Flask's ``flask run`` ends its banner with "Running on http://127.0.0.1:5000",
an address where passkeys cannot work. This server binds first, then prints
one box with the address to open (``SUNDOWN_ORIGIN``, on ``localhost``), the
admin pages' address and, while there is no admin, the one-time enrollment
link; then it serves. The box fits an 80-column terminal: a bar on its left
only, sentences wrapped, and a link never wrapped (so it stays clickable).
"""

from __future__ import annotations

import logging
import textwrap
from urllib.parse import urlsplit

import click
from flask import Flask
from werkzeug.serving import make_server

from app.auth import invites
from app.core import db

HOST = "127.0.0.1"
COLUMNS = 80  # the narrowest terminal the box must fit

# What the box and the refusals say: whole sentences, for translation later.
RUNNING = "Sundown is running."
OPEN = "Open {origin} (not 127.0.0.1: passkeys are bound to the name localhost)."
ADMIN = "Admin pages: {origin}/admin/"
FIRST_LINK = "No admin yet. Open this one-time link to create the first passkey:"
STOP = "Press Ctrl+C to stop."
NOT_LOCALHOST = (
    "SUNDOWN_ORIGIN is {origin}, but this development server serves http://localhost:{port}: "
    "set SUNDOWN_ORIGIN=http://localhost:{port} (make run PORT={port} does)."
)
PORT_HINT = "With make: make run PORT=5050 (any free port)."


def serve(app: Flask, port: int | None) -> None:
    """Bind 127.0.0.1:``port`` (default: the origin's), print the box, serve until Ctrl+C."""
    origin = app.config["ORIGIN"]
    parts = urlsplit(origin)
    port = port or parts.port or 80
    if parts.scheme != "http" or parts.hostname != "localhost" or (parts.port or 80) != port:
        raise click.ClickException(NOT_LOCALHOST.format(origin=origin, port=port))
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # the app logs each request itself
    try:
        server = make_server(HOST, port, app, threaded=True)
    except SystemExit:  # werkzeug has printed why (a port in use; AirPlay on macOS)
        click.echo(PORT_HINT, err=True)
        raise
    click.echo(box(_lines(app, origin)))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def _lines(app: Flask, origin: str) -> list[str]:
    with app.app_context():
        session = db.get_session()
        link = invites.first_admin_link(session)
        session.commit()
    lines = [RUNNING, "", OPEN.format(origin=origin), ADMIN.format(origin=origin)]
    if link:
        lines += ["", FIRST_LINK, link]
    return lines + ["", STOP]


def box(lines: list[str]) -> str:
    """``lines`` framed in at most ``COLUMNS`` columns: a bar on the left, a rule above and below as wide as
    the widest line; a sentence is wrapped, a link (no space) never is."""
    text = COLUMNS - 2
    body = [part for line in lines for part in (textwrap.wrap(line, text, break_long_words=False) or [""])]
    rule = "─" * min(COLUMNS - 1, max(len(part) for part in body) + 1)
    return "\n".join([f"┌{rule}", *(f"│ {part}".rstrip() for part in body), f"└{rule}"])
