"""Sundown: an inquiry inbox whose old data deletes itself, with no scheduler.

`create_app` reads like a table of contents: settings, database, security,
blueprints, error handlers and operator commands, each in its own module.
"""

from __future__ import annotations

from typing import Any

from flask import Flask

from app import admin, auth, cli, config, db, errors, public, security
from app import internal, pruning


def create_app(overrides: dict[str, Any] | None = None) -> Flask:
    """Build the app: defaults, then ``SUNDOWN_*`` environment, then ``overrides``.

    Tests inject the clock (``CLOCK``), randomness (``RANDOM_BYTES``) and the
    database (``DATABASE_URL``) through ``overrides``.
    """
    app = Flask(
        __name__,
        instance_relative_config=True,
        template_folder="../templates",
        static_folder="../static",
    )
    config.load(app, overrides or {})
    db.init_app(app)
    security.init_app(app)
    auth.init_app(app)
    pruning.init_app(app)
    app.register_blueprint(public.bp)
    app.register_blueprint(auth.bp)
    app.register_blueprint(auth.account.bp)
    app.register_blueprint(admin.bp)
    app.register_blueprint(internal.bp)
    errors.init_app(app)
    cli.init_app(app)
    return app
