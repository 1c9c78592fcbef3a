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
  ``uploads_in_memory`` (a submission's
  body and each of its files kept in memory, never spooled to disk),
  ``crisis_default`` (FTS5's crisis merge left at its default of 16 during
  a run and its purge, so a visitor's insert can merge a whole level),
  ``files_in`` (the file pieces' target as a list of every expired inquiry's
  files, ``attachment_id IN (...)``, read inside each of its batches),
  ``purge_unpaused`` (the index purge after a run, and the index's rebuild
  before it, without their pauses and passive checkpoints, with FTS5's
  automerge back on meanwhile),
  ``fixed_pauses`` (the cleanup's pauses between its write transactions a
  fixed share of each, learning nothing from its waits for the lock:
  ``app.core.pacing``), and ``landed`` (all four: the cleanup as it was
  before them, to measure before and after).

With ``BENCH_TXN_LOG`` set, every variant also logs its write transactions
and the cleanup's statements (``bench.txlog``).

Every variant counts, in memory shared by all workers (gunicorn ``--preload``
imports this module once, before forking): requests, statements, statements
that name the ``settings`` table and those of them that write, from a
SQLAlchemy ``before_cursor_execute`` listener on the app's engine (the
runner's claims and batches included), and the microseconds its jobs waited
for quiet moments (``background.Activity.wait_for_quiet``) with when the last
wait longer than ``MACHINE_WAIT`` ended. ``GET /_bench/counters`` returns them.
"""

from __future__ import annotations

import dataclasses
import io
import multiprocessing
import os
import re
import tempfile
import time
from contextlib import contextmanager
from types import SimpleNamespace

from flask import Flask, jsonify, request
from sqlalchemy import event, or_, select

from app import create_app
from app.cleanup import hook, runs, state, targets
from app.core import background, db, pacing
from app.inquiries import reindex, retention, search
from app.models import Attachment, AttachmentChunk, Inquiry
from app.outbox import hook as outbox_hook
from app.web import intake
from bench import txlog

COUNTERS = ("requests", "statements", "settings_statements", "settings_writes", "quiet_waits_us", "machine_wait_end_us")
# A wait for a quiet moment longer than this waited for the machine (other work on the CPUs), not for a gap
# between requests (``background.QUIET_GAP``): the notify benchmark keeps when the last such wait ended.
MACHINE_WAIT = background.STOP_CHECK  # bench.notify uses the same
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


def _timed_quiet(activity: background.Activity) -> None:
    """Count how long ``activity``'s jobs wait for quiet moments, and when the last long wait ended."""
    waiting = activity.wait_for_quiet

    def wait_for_quiet(*args, **kwargs) -> None:
        began = time.time()
        try:
            waiting(*args, **kwargs)
        finally:
            ended = time.time()
            with _shared.get_lock():
                _shared[COUNTERS.index("quiet_waits_us")] += int((ended - began) * 1_000_000)
                if ended - began > MACHINE_WAIT:
                    end = COUNTERS.index("machine_wait_end_us")
                    _shared[end] = max(_shared[end], int(ended * 1_000_000))

    activity.wait_for_quiet = wait_for_quiet


def counters():
    """``GET /_bench/counters``: every worker's counts so far, as JSON."""
    with _shared.get_lock():
        return jsonify(dict(zip(COUNTERS, _shared[:], strict=False)))


def instrument(app: Flask) -> Flask:
    """Count requests and statements, and serve the counts."""
    event.listen(db.engine_of(app), "before_cursor_execute", _count_statement)
    app.before_request(_count_request)
    app.add_url_rule("/_bench/counters", "bench_counters", counters)
    _timed_quiet(background.activity_of(app))
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


def _files_in(app: Flask) -> None:
    """The file pieces' target as it was: ``attachment_id IN`` the files of every expired inquiry."""
    cleanup_state = state.of(app)

    def files_expired(moment):
        expired = or_(retention.expired_in(retention.INBOX, moment.cutoff), targets.spam_expired(moment))
        of_expired = select(Attachment.id).join(Inquiry, Inquiry.id == Attachment.inquiry_id).where(expired)
        return AttachmentChunk.attachment_id.in_(of_expired)

    cleanup_state.targets = [
        dataclasses.replace(t, where=files_expired) if t.name == "attachment_chunks" else t
        for t in cleanup_state.targets
    ]


def _purge_unpaused(connection, should_stop) -> bool:
    """The index purge as it was: 10 ms between steps, no checkpoint, FTS5's automerge back on meanwhile."""
    search.set_merging_or_warn(connection, search.FTS5_AUTOMERGE, search.FTS5_CRISISMERGE)
    driver = connection.connection.driver_connection
    pages = -search.FORGET_PAGES
    while not should_stop():
        with connection.begin():
            before = driver.total_changes
            search.merge_step(driver, pages)
            changed = driver.total_changes - before
        if changed < 2:
            return True
        pages = search.FORGET_PAGES
        time.sleep(search.FORGET_PAUSE)
    return False


def _rebuild_unpaused(steps, should_stop) -> bool:
    """The index's rebuild the same way: 10 ms between steps, no checkpoint, FTS5's automerge on for the new
    index, which visitors' inserts then carry on."""
    while not should_stop():
        done = steps.step()
        if done is None:
            return True
        if done == "start":
            search.set_merging(steps.connection, search.FTS5_AUTOMERGE, search.FTS5_CRISISMERGE, reindex.NEXT)
        time.sleep(search.FORGET_PAUSE)
    return False


def _fixed_pauses() -> None:
    """The cleanup's pauses a fixed share of each transaction, learning nothing from its waits for the lock."""
    transaction = pacing.Pacer.transaction

    @contextmanager
    def unlearning(self, connection):
        with transaction(self, connection):
            self.learned = 0.0
            yield

    pacing.Pacer.transaction = unlearning


def _broken_cleanup(app: Flask, parts: tuple[str, ...]) -> None:
    if "crisis_default" in parts:
        search.QUIET_CRISISMERGE = search.FTS5_CRISISMERGE
    if "files_in" in parts:
        _files_in(app)
    if "purge_unpaused" in parts:
        search._merge_into_one = _purge_unpaused
        reindex.run_steps = _rebuild_unpaused
    if "fixed_pauses" in parts:
        _fixed_pauses()


CLEANUP_CONTROLS = {
    **{name: (name,) for name in ("crisis_default", "files_in", "purge_unpaused", "fixed_pauses")},
    "landed": ("crisis_default", "files_in", "purge_unpaused", "fixed_pauses"),
}


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
    elif variant == "uploads_in_memory":
        _uploads_in_memory(app)
    elif variant in CLEANUP_CONTROLS:
        _broken_cleanup(app, CLEANUP_CONTROLS[variant])
    elif variant not in ("shipped", "stock_lock"):
        raise ValueError(f"unknown BENCH_VARIANT {variant!r}")
    return app


app = instrument(build(os.environ.get("BENCH_VARIANT", "shipped")))
if os.environ.get(txlog.ENV):
    txlog.install(app)
