"""Prometheus metrics at ``GET /metrics``, on only when ``SUNDOWN_METRICS_TOKEN`` is set.

Counters and the request histogram are module-level objects, as
prometheus_client expects. Under gunicorn each worker is its own process, so
they use the library's multiprocess mode: with ``PROMETHEUS_MULTIPROC_DIR``
set (``gunicorn.conf.py`` sets it and wipes it at start), every process writes
its values to files there and a scrape adds them up, whichever worker answers.
Without it (one process: ``flask dev-server``, a test client) a scrape reads
this process's own registry.

The cleanup's gauges are read from the ledger at each scrape, so they agree
across workers and replicas and survive restarts.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator

from flask import Flask, Response, current_app, g, request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from sqlalchemy import select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from app.core import db
from app.core.parsing import ConfigurationError
from app.models import CleanupRun, CleanupStatus

log = logging.getLogger(__name__)

MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"
INQUIRY_OUTCOMES = ("accepted", "spam", "honeypot", "invalid", "rate_limited")
LOGIN_OUTCOMES = ("ok", "refused", "rate_limited")
RUN_STATUSES = (CleanupStatus.OK, CleanupStatus.PARTIAL, CleanupStatus.ERROR)
SUCCEEDED = (CleanupStatus.OK, CleanupStatus.PARTIAL)  # ended without an error

disable_created_metrics()  # no *_created series: multiprocess mode has none either, so both read alike
INQUIRIES = Counter("sundown_inquiries", "Inquiry submissions (form and API) by outcome.", ["outcome"])
LOGINS = Counter("sundown_logins", "Passkey login verifications, and login requests over the rate limit.", ["outcome"])
DELIVERY_OUTCOMES = ("ok", "retry", "failed")  # retry: failed, tried again later; failed: given up
DELIVERIES = Counter(
    "sundown_delivery_attempts", "Notification delivery attempts, by channel and outcome.", ["channel", "outcome"]
)
CLEANUP_RUNS = Counter("sundown_cleanup_runs", "Cleanup runs ended, by status.", ["status"])
NOTIFY_CAPPED = Counter("sundown_notifications_capped", "Inquiry e-mails held back by the hourly cap (sent as one).")
ACK_OUTCOMES = ("queued", "address_capped", "client_capped", "hourly_capped")
ACKNOWLEDGEMENTS = Counter(
    "sundown_acknowledgements",
    "Acknowledgement e-mails to people who wrote, queued or held back by a cap (app.replies.ack).",
    ["outcome"],
)
INBOUND_OUTCOMES = ("thread", "held", "duplicate")  # ``app.conversations.store.Stored.outcome``
INBOUND_REFUSALS = ("too_large", "unreadable", "rate_limited")
INBOUND = Counter(
    "sundown_inbound_messages",
    "Received e-mails (POST /internal/mail and the IMAP fetch) by outcome: in a thread, held apart, a duplicate.",
    ["outcome"],
)
INBOUND_REFUSED = Counter(
    "sundown_inbound_refused", "Received e-mails refused (the IMAP fetch holds a note of them), by reason.", ["reason"]
)
IMAP_ERRORS = Counter("sundown_imap_fetch_errors", "IMAP fetches that failed: connection, TLS, login or protocol.")
CLEANUP_DELETED = Counter("sundown_cleanup_deleted_rows", "Rows deleted by cleanup runs, by target.", ["target"])
REQUEST_SECONDS = Histogram(
    "sundown_request_duration_seconds",
    "Time to produce a response, by endpoint.",
    ["endpoint"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)


def init_app(app: Flask) -> None:
    """Check the multiprocess directory, declare the counters, time every request."""
    directory = os.environ.get(MULTIPROC_DIR)
    if directory and not os.path.isdir(directory):
        raise ConfigurationError(f"{MULTIPROC_DIR} must be an existing directory, not {directory!r}.")
    if app.config["METRICS_TOKEN"] and not directory and "gunicorn" in os.environ.get("SERVER_SOFTWARE", ""):
        log.warning("metrics without %s under gunicorn: each worker counts alone (use gunicorn.conf.py)", MULTIPROC_DIR)
    for counter, labels in (
        (INQUIRIES, INQUIRY_OUTCOMES),
        (LOGINS, LOGIN_OUTCOMES),
        (CLEANUP_RUNS, RUN_STATUSES),
        (INBOUND, INBOUND_OUTCOMES),
        (INBOUND_REFUSED, INBOUND_REFUSALS),
    ):
        for label in labels:
            counter.labels(label)  # present as 0 from the start, so rates work from the first scrape
    app.before_request(_start_timer)
    app.after_request(_observe)


def declare_cleanup_targets(names: Iterable[str]) -> None:
    """Show each cleanup target's deleted rows as 0 from the start (the cleanup names them)."""
    for name in names:
        CLEANUP_DELETED.labels(name)


# Gauges a feature reads from the database at each scrape, by name (``declare_scraped``).
_SCRAPED: dict[str, Callable[[], Iterable[GaugeMetricFamily]]] = {}


def declare_scraped(name: str, collect: Callable[[], Iterable[GaugeMetricFamily]]) -> None:
    """Read ``collect()``'s gauges at each scrape (the cleanup's alarm names its own); a database error
    leaves them out of that scrape."""
    _SCRAPED[name] = collect


class _Scraped:
    def __init__(self, collect: Callable[[], Iterable[GaugeMetricFamily]]) -> None:
        self._collect = collect

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            families = list(self._collect())
        except (DBAPIError, PoolTimeout) as error:
            log.warning("metrics: a gauge could not be read: %s", type(error).__name__)
            return iter(())
        return iter(families)


_delivery_channels: set[str] = set()  # the channels notifications go out on (``app.notify.channels``)


def declare_delivery_channels(names: Iterable[str]) -> None:
    """Show each channel's delivery attempts as 0 from the start, by outcome (the notifications name them)."""
    for name in names:
        _delivery_channels.add(str(name))
        for outcome in DELIVERY_OUTCOMES:
            DELIVERIES.labels(name, outcome)


def count_capped_notifications(count: int) -> None:
    """Count inquiry e-mails the hourly cap held back for the end of the hour."""
    NOTIFY_CAPPED.inc(count)


def count_acknowledgement(outcome: str) -> None:
    """Count one acknowledgement: ``queued``, or held back (``address_capped``, ``hourly_capped``)."""
    _count(ACKNOWLEDGEMENTS, ACK_OUTCOMES, outcome)


def count_inquiry(outcome: str) -> None:
    """Count one submission: ``accepted``, ``spam``, ``honeypot``, ``invalid`` or ``rate_limited``."""
    _count(INQUIRIES, INQUIRY_OUTCOMES, outcome)


def count_inbound(outcome: str) -> None:
    """Count one received e-mail stored: ``thread``, ``held`` or ``duplicate``."""
    _count(INBOUND, INBOUND_OUTCOMES, outcome)


def count_inbound_refused(reason: str) -> None:
    """Count one received e-mail refused: ``too_large``, ``unreadable`` or ``rate_limited``."""
    _count(INBOUND_REFUSED, INBOUND_REFUSALS, reason)


def count_imap_error() -> None:
    """Count one IMAP fetch that failed (connection, TLS, login or protocol)."""
    IMAP_ERRORS.inc()


def count_login(outcome: str) -> None:
    """Count one login: ``ok``, ``refused`` or ``rate_limited``."""
    _count(LOGINS, LOGIN_OUTCOMES, outcome)


def count_cleanup_run(status: str, deleted: dict[str, int]) -> None:
    """Count an ended run and the rows it deleted per target."""
    CLEANUP_RUNS.labels(str(status)).inc()
    for target, rows in deleted.items():
        CLEANUP_DELETED.labels(target).inc(rows)


def count_delivery(channel: str, outcome: str) -> None:
    """Count one delivery attempt: ``ok``, ``retry`` (tried again later) or ``failed`` (given up)."""
    if channel not in _delivery_channels or outcome not in DELIVERY_OUTCOMES:
        raise ValueError(f"unknown delivery {channel!r} {outcome!r}")
    DELIVERIES.labels(channel, outcome).inc()


def _count(counter: Counter, allowed: tuple[str, ...], label: str) -> None:
    if label not in allowed:  # a fixed set keeps the number of series bounded
        raise ValueError(f"unknown outcome {label!r}; expected one of {allowed}")
    counter.labels(label).inc()


def _start_timer() -> None:
    g.metrics_started = time.perf_counter()  # a duration, not a date: not the app's clock


def _observe(response):
    started = g.pop("metrics_started", None)
    if started is not None:
        endpoint = request.url_rule.endpoint if request.url_rule else "unmatched"
        REQUEST_SECONDS.labels(endpoint).observe(time.perf_counter() - started)
    return response


def exposition() -> Response:
    """The counters of every worker, then the cleanup's gauges, in Prometheus text format (``GET /metrics``)."""
    body = generate_latest(_registry()) + generate_latest(_LedgerGauges())
    for collector in _SCRAPED.values():
        body += generate_latest(_Scraped(collector))
    return Response(body, content_type=CONTENT_TYPE_LATEST, headers={"Cache-Control": "no-store"})


def _registry():
    if not os.environ.get(MULTIPROC_DIR):
        return REGISTRY
    registry = CollectorRegistry()  # a fresh one per scrape, as the library documents
    MultiProcessCollector(registry)
    return registry


class _LedgerGauges:
    """The cleanup's state from the ledger (``cleanup_runs``), read at scrape time."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(
            "sundown_cleanup_interval_seconds",
            "SUNDOWN_CLEANUP_INTERVAL: seconds between cleanups.",
            value=current_app.config["CLEANUP_INTERVAL"],
        )
        try:
            last = (
                db.get_session()
                .execute(
                    select(CleanupRun.finished_at, CleanupRun.remaining)
                    .where(CleanupRun.status.in_(SUCCEEDED))
                    .order_by(CleanupRun.started_at.desc(), CleanupRun.id.desc())
                    .limit(1)
                )
                .first()
            )
        except (DBAPIError, PoolTimeout) as error:
            log.warning("metrics: the cleanup ledger could not be read: %s", type(error).__name__)
            return
        yield GaugeMetricFamily(
            "sundown_cleanup_last_success_timestamp_seconds",
            "When the last cleanup run that ended without an error (ok or partial) finished; 0 before the first.",
            value=last.finished_at.timestamp() if last else 0,
        )
        yield GaugeMetricFamily(
            "sundown_cleanup_backlog_rows",
            "Expired rows left after the last cleanup run that ended without an error.",
            value=last.remaining if last else 0,
        )
