"""The development server behind ``make run``: 127.0.0.1 only, and a box as the last thing printed.

Flask's ``flask run`` ends its banner with "Running on http://127.0.0.1:5000",
an address where passkeys cannot work. This server binds first, then prints
one box with the address to open (``SUNDOWN_ORIGIN``, on ``localhost``) and,
while there is no admin, the one-time enrollment link; then it serves.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

import click
from flask import Flask
from werkzeug.serving import make_server

from app.auth import invites
from app.core import db

HOST = "127.0.0.1"

# What the box and the refusals say: whole sentences, for translation later.
RUNNING = "Sundown is running."
OPEN = "Open {origin} (not 127.0.0.1: passkeys are bound to the name localhost)."
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
    lines = [RUNNING, "", OPEN.format(origin=origin)]
    if link:
        lines += ["", FIRST_LINK, link]
    return lines + ["", STOP]


def box(lines: list[str]) -> str:
    """``lines`` framed, as wide as the longest (a link is never wrapped, so it stays clickable)."""
    width = max(len(line) for line in lines)
    rule = "─" * (width + 2)
    body = [f"│ {line.ljust(width)} │" for line in lines]
    return "\n".join([f"┌{rule}┐", *body, f"└{rule}┘"])
