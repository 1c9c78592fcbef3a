"""Sundown: an inquiry inbox whose old data deletes itself, with no scheduler.

`create_app` reads like a table of contents: settings, logs and metrics,
database, security, login, the cleanup, the pages, error handlers and
operator commands, each in its own module.
"""

from __future__ import annotations

from typing import Any

from flask import Flask

from app import admin, auth, cleanup, cli, config, conversations, notify, outbox, replies, templating
from app.core import background, db, i18n, logs, metrics, paths
from app.forms import embed
from app.inquiries import forecast_store, gone
from app.web import errors, health, intake, internal, public, security


def create_app(overrides: dict[str, Any] | None = None) -> Flask:
    """Build the app: defaults, then ``SUNDOWN_*`` environment, then ``overrides``.

    Tests inject the clock (``CLOCK``), randomness (``RANDOM_BYTES``) and the
    database (``DATABASE_URL``) through ``overrides``.
    """
    app = Flask(
        __name__,
        instance_relative_config=True,
        template_folder=str(paths.TEMPLATES),  # beside app/ in the source tree, inside it once installed
        static_folder=str(paths.STATIC),
    )
    config.load(app, overrides or {})
    logs.init_app(app)  # text or JSON lines on stderr, a request id on every request
    metrics.init_app(app)  # request timings; the counters GET /metrics shows
    db.init_app(app)
    i18n.init_app(app)  # gettext in templates and code, one locale per request
    templating.init_app(app)  # every template filter and global, in one table
    embed.init_app(app)  # forms on the owner's own site: allowed origins, CORS for embed.js
    intake.init_app(app)  # every body received whole and bounded, before anything parses it
    security.init_app(app)
    auth.init_app(app)
    background.init_app(app)  # the runner for work after responses, off the connection
    cleanup.init_app(app)  # the after-response cleanup
    outbox.init_app(app)  # deliveries sent after responses, by the handler of their kind:
    notify.init_app(app)  # notifications of new inquiries, on every channel in force
    replies.init_app(app)  # replies and acknowledgements to the people who wrote
    conversations.init_app(app)  # people's answers by e-mail: the IMAP mailbox fetched after responses
    forecast_store.init_app(app)  # the retention forecast, computed after a response that asked for it
    gone.init_app(app)  # after a delete or an erasure: the index and the WAL forget it, off the connection
    app.register_blueprint(public.bp)  # /, /api/inquiries, /privacy
    app.register_blueprint(health.bp)  # /healthz
    app.register_blueprint(internal.bp)  # /internal/cleanup, /deliver, /mail, /metrics: bearer tokens
    app.register_blueprint(auth.bp)  # /auth: passkey login, enrollment, logout
    app.register_blueprint(admin.bp)  # /admin: every page behind the login
    errors.init_app(app)
    cli.init_app(app)
    return app
