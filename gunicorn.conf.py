"""Gunicorn's settings file (read from the working directory, or ``--config``): hooks only.

With ``SUNDOWN_METRICS_TOKEN`` set, /metrics uses prometheus_client's
multiprocess mode: each worker writes its counts to files in
``PROMETHEUS_MULTIPROC_DIR`` and a scrape adds them up. The library needs that
variable set before any worker imports it, and the directory wiped at each
start; this file does both (a fresh temporary directory when the variable is
unset, removed at exit) and tells the library when a worker has exited.
Command-line options still set everything else (workers, threads, bind).

With ``SUNDOWN_LOG_FORMAT=json``, gunicorn's own lines (start, workers,
errors) are JSON objects with the same fields as the app's (app/core/logs.py), so
every line the server writes parses.
"""

import os
import shutil
import tempfile
from pathlib import Path

MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"
# Files the server makes (the SQLite database, its WAL, logs it writes) are for its own user only.
umask = 0o077
PREFIX = "sundown-metrics-"

if os.environ.get("SUNDOWN_LOG_FORMAT", "").strip('"') == "json":
    logconfig_dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "json": {
                "()": "pythonjsonlogger.json.JsonFormatter",
                "fmt": "%(levelname)s %(name)s %(message)s",
                "rename_fields": {"levelname": "level", "name": "logger"},
                "timestamp": "time",
            }
        },
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}},
        "root": {"level": "INFO", "handlers": ["stderr"]},
        "loggers": {
            "gunicorn.error": {"level": "INFO", "handlers": ["stderr"], "propagate": False},
            "gunicorn.access": {"level": "INFO", "handlers": ["stderr"], "propagate": False},
        },
    }

# This file is read by the master before it loads the app or forks a worker
# (and again on a reload, when the variable is set already).
if os.environ.get("SUNDOWN_METRICS_TOKEN") and not os.environ.get(MULTIPROC_DIR):
    os.environ[MULTIPROC_DIR] = tempfile.mkdtemp(prefix=PREFIX)


def on_starting(server):
    """Before any worker: an empty metrics directory (counts from a previous run would add up)."""
    directory = os.environ.get(MULTIPROC_DIR)
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        for stale in Path(directory).glob("*.db"):
            stale.unlink()


def child_exit(server, worker):
    """A worker exited: the library drops its live gauges (its counters keep counting in the sum)."""
    if os.environ.get(MULTIPROC_DIR):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)


def on_exit(server):
    """Remove the temporary directory this file made (never one the operator named)."""
    directory = Path(os.environ.get(MULTIPROC_DIR, ""))
    if directory.name.startswith(PREFIX) and directory.parent == Path(tempfile.gettempdir()):
        shutil.rmtree(directory, ignore_errors=True)
