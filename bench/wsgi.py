"""The app as benchmarks serve it (``bench.wsgi:app``): a variant, and a statement counter.

``BENCH_VARIANT`` picks what is served; the production code is unchanged:

* ``shipped``: ``create_app()``, as ``wsgi.py`` builds it.
* ``off``: the same app without its after-response hook: no cleanup ever
  starts and no request asks whether one is due (the real off switch).
* ``secure_delete_off``: the shipped app with ``PRAGMA secure_delete=OFF`` on
  every SQLite connection, to measure what "deleted means gone" costs the
  cleanup (``bench.secure_delete``).
* Controls, deliberately broken, which the suite must catch:
  ``always_due`` (the not-due shortcut disabled: ``runs.is_due`` always
  true, so every request hands a claim attempt to the runner), ``inline``
  (the run inside the close callback, on the connection, as the first
  version did) and ``stock_lock`` (live writers on SQLite back on its stock
  busy handler, a plain ``BEGIN``, as before they polled for the lock; a
  pause after each batch is no longer the protection: the shipped default
  is none), ``notify_inline`` (notifications sent inside the close
  callback, so the connection waits for the SMTP server and the receiver),
  ``files_by_cascade`` (the cleanup without its ``attachment_chunks``
  target: each batch of expired inquiries deletes their files by cascade,
  however many bytes they hold), ``uploads_in_memory`` (a submission's
  body and each of its files kept in memory, never spooled to disk).

Every variant counts, in memory shared by all workers (gunicorn ``--preload``
imports this module once, before forking): requests, statements, statements
that name the ``settings`` table and those of them that write, from a
SQLAlchemy ``before_cursor_execute`` listener on the app's engine (the
runner's claims and batches included). ``GET /_bench/counters`` returns them.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import re
import tempfile
from types import SimpleNamespace

from flask import Flask, jsonify, request
from sqlalchemy import event

from app import create_app
from app.cleanup import hook, runs, state
from app.core import background, db
from app.outbox import hook as outbox_hook
from app.web import intake

COUNTERS = ("requests", "statements", "settings_statements", "settings_writes")
_SETTINGS = re.compile(r"\bsettings\b", re.IGNORECASE)
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")
_shared = multiprocessing.Array("q", len(COUNTERS))  # before the fork: one block for every worker


def _count(*names: str) -> None:
    with _shared.get_lock():
        for name in names:
            _shared[COUNTERS.index(name)] += 1


def _count_statement(_conn, _cursor, statement: str, *_args) -> None:
    names = ["statements"]
    if _SETTINGS.search(statement):
        names.append("settings_statements")
        if statement.lstrip().upper().startswith(_WRITES):
            names.append("settings_writes")
    _count(*names)


def _count_request() -> None:
    if not request.path.startswith(("/_bench/", "/healthz")):
        _count("requests")


def counters():
    """``GET /_bench/counters``: every worker's counts so far, as JSON."""
    with _shared.get_lock():
        return jsonify(dict(zip(COUNTERS, _shared[:], strict=False)))


def instrument(app: Flask) -> Flask:
    """Count requests and statements, and serve the counts."""
    event.listen(db.engine_of(app), "before_cursor_execute", _count_statement)
    app.before_request(_count_request)
    app.add_url_rule("/_bench/counters", "bench_counters", counters)
    return app


def _run_inline(app: Flask, job_name: str, feature) -> None:
    """``job_name`` runs inside the close callback, with no wait for a quiet moment, as the first version did."""
    runner = background.runner_of(app)
    queued = runner.submit

    def submit(name, job) -> bool:
        if name != job_name:
            return queued(name, job)
        job()  # in the close callback: the connection waits
        return True

    runner.submit = submit
    feature.background = SimpleNamespace(activity_of=lambda _app: _NO_WAIT)


def _plain_begin(_busy_timeout, connection) -> None:
    connection.exec_driver_sql("BEGIN")


def _secure_delete_off(dbapi_connection, _record) -> None:
    dbapi_connection.execute("PRAGMA secure_delete=OFF").close()


_NO_WAIT = SimpleNamespace(wait_for_quiet=lambda *_args: None)


def _uploads_in_memory(app: Flask) -> None:
    # A SpooledTemporaryFile of max_size 0 never rolls over to disk.
    intake.tempfile = SimpleNamespace(SpooledTemporaryFile=lambda max_size: tempfile.SpooledTemporaryFile(max_size=0))  # noqa: SIM115

    class InMemory(app.request_class):
        def _get_file_stream(self, *_args, **_kwargs):
            return io.BytesIO()

    app.request_class = InMemory


def build(variant: str) -> Flask:
    """The app of ``variant`` (see the module docstring)."""
    if variant == "stock_lock":
        db._begin_sqlite = _plain_begin  # looked up when create_app makes the engine
    app = create_app()
    if variant == "off":
        app.after_request_funcs[None].remove(background.runner_of(app).hand_offs[hook.JOB])
    elif variant == "always_due":
        runs.is_due = lambda: True
    elif variant == "inline":
        _run_inline(app, hook.JOB, hook)
    elif variant == "secure_delete_off":
        # Listeners run in order: this one after the app's own tuning, which turns it on.
        event.listen(db.engine_of(app), "connect", _secure_delete_off)
    elif variant == "notify_inline":
        _run_inline(app, outbox_hook.JOB, outbox_hook)
    elif variant == "files_by_cascade":
        cleanup_state = state.of(app)
        cleanup_state.targets = [t for t in cleanup_state.targets if t.name != "attachment_chunks"]
    elif variant == "uploads_in_memory":
        _uploads_in_memory(app)
    elif variant not in ("shipped", "stock_lock"):
        raise ValueError(f"unknown BENCH_VARIANT {variant!r}")
    return app


app = instrument(build(os.environ.get("BENCH_VARIANT", "shipped")))
