"""GET /metrics in one process: the token guard, and what each counter and gauge counts.

The counters are process-wide (prometheus_client's module-level metrics), so
each test compares a scrape after with a scrape before. Counts across
gunicorn workers (multiprocess mode) are proven in test_deploy_caddy.py.
"""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from app import cleanup, create_app
from app.config import ConfigurationError
from app.core import metrics
from tests.factories import add_inquiries, aged_inquiries
from tests.helpers import VALID, settle
from tests.softauthn import PasskeyBrowser, invite

TOKEN = "metrics-token-for-tests"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
SAVED = ("accepted", "spam")  # a valid submission is filed in the inbox or the spam folder


def scrape(client) -> dict[tuple[str, tuple], float]:
    """Every sample of ``/metrics`` as ``{(name, sorted labels): value}``."""
    response = client.get("/metrics", headers=BEARER)
    assert response.status_code == 200, response.get_data(as_text=True)
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.get_data(as_text=True))
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def inquiries(samples: dict, outcome: str) -> float:
    return value(samples, "sundown_inquiries_total", outcome=outcome)


@pytest.fixture
def app_config(app_config):
    app_config["METRICS_TOKEN"] = TOKEN
    return app_config


def test_metrics_are_not_served_without_a_token(app_config, make_app):
    client = make_app({**app_config, "METRICS_TOKEN": None}).test_client()
    assert client.get("/metrics", headers=BEARER).status_code == 404


def test_the_token_is_required_as_a_bearer_and_compared_exactly(client):
    missing = client.get("/metrics")
    assert missing.status_code == 401 and missing.headers["WWW-Authenticate"].startswith("Bearer")
    assert client.get("/metrics", headers={"Authorization": f"Basic {TOKEN}"}).status_code == 401
    assert client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}x"}).status_code == 403
    assert client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN[:-1]}"}).status_code == 403
    answer = client.get("/metrics", headers=BEARER)
    assert answer.status_code == 200
    assert answer.headers["Content-Type"].startswith("text/plain")
    assert answer.headers["Cache-Control"] == "no-store"
    assert TOKEN not in answer.get_data(as_text=True)


def test_every_outcome_is_present_from_the_start(client):
    samples = scrape(client)
    for outcome in metrics.INQUIRY_OUTCOMES:
        assert ("sundown_inquiries_total", (("outcome", outcome),)) in samples
    for outcome in metrics.LOGIN_OUTCOMES:
        assert ("sundown_logins_total", (("outcome", outcome),)) in samples
    for target in ("inquiries", "one_time_secrets", "admin_logins", "rate_limits", "cleanup_runs"):
        assert ("sundown_cleanup_deleted_rows_total", (("target", target),)) in samples


def test_submissions_are_counted_by_outcome(app_config, make_app):
    client = make_app({**app_config, "SUBMIT_RATE_LIMITS": "3/60"}).test_client()
    before = scrape(client)
    assert client.post("/api/inquiries", json=VALID).status_code == 201
    assert client.post("/api/inquiries", json={**VALID, "website": "http://spam.example"}).status_code == 201
    assert client.post("/api/inquiries", json={**VALID, "email": "not an address"}).status_code == 422
    assert client.post("/api/inquiries", json=[1, 2]).status_code == 422
    statuses = [client.post("/api/inquiries", json=VALID).status_code for _ in range(4)]
    settle(client.application)
    after = scrape(client)
    saved = sum(inquiries(after, o) - inquiries(before, o) for o in SAVED)
    assert saved == statuses.count(201) + 1
    assert inquiries(after, "honeypot") - inquiries(before, "honeypot") == 1
    assert inquiries(after, "invalid") - inquiries(before, "invalid") == 2
    assert inquiries(after, "rate_limited") - inquiries(before, "rate_limited") == statuses.count(429) > 0


def test_unknown_outcomes_are_refused_so_the_series_stay_few():
    with pytest.raises(ValueError, match="unknown outcome"):
        metrics.count_inquiry("maybe")
    with pytest.raises(ValueError, match="unknown outcome"):
        metrics.count_login("maybe")


def test_logins_are_counted_by_outcome(app_config, make_app):
    app = make_app({**app_config, "AUTH_RATE_LIMIT_PER_CLIENT": "7/600"})
    client = app.test_client()
    browser = PasskeyBrowser(app, client)
    before = scrape(client)
    assert browser.enroll(invite(app, "Ada")).status_code == 200  # 2 attempts: options, verify (pages are free)
    browser.logout()
    assert browser.login().status_code == 200  # 2 more
    assert browser.login_verify({"id": "AAAA", "rawId": "AAAA", "type": "public-key"}).status_code == 400
    statuses = [browser.post_json("/auth/login/options").status_code for _ in range(3)]
    after = scrape(client)
    logins = {
        o: value(after, "sundown_logins_total", outcome=o) - value(before, "sundown_logins_total", outcome=o)
        for o in metrics.LOGIN_OUTCOMES
    }
    assert statuses == [200, 200, 429]
    assert logins == {"ok": 1, "refused": 1, "rate_limited": 1}


def test_a_run_is_counted_and_the_ledger_gives_the_gauges(app_config, make_app, db_session, clock):
    client = make_app(app_config).test_client()
    first = scrape(client)
    assert value(first, "sundown_cleanup_last_success_timestamp_seconds") == 0  # no run yet
    assert value(first, "sundown_cleanup_interval_seconds") == 3600
    add_inquiries(db_session, aged_inquiries(clock, [200, 300]))
    with client.application.app_context():
        row = cleanup.run("test")
    after = scrape(client)
    runs = "sundown_cleanup_runs_total"
    assert value(after, runs, status="ok") - value(first, runs, status="ok") == 1
    deleted = "sundown_cleanup_deleted_rows_total"
    assert value(after, deleted, target="inquiries") - value(first, deleted, target="inquiries") == 2
    assert value(after, "sundown_cleanup_last_success_timestamp_seconds") == row.finished_at.timestamp()
    assert value(after, "sundown_cleanup_backlog_rows") == 0


def test_a_partial_run_leaves_its_backlog_in_the_gauge(app_config, make_app, db_session, clock):
    client = make_app(
        {**app_config, "CLEANUP_BATCH_SIZE": 2, "CLEANUP_TIME_BUDGET": 0, "CLEANUP_YIELD": 0}
    ).test_client()
    add_inquiries(db_session, aged_inquiries(clock, [181, 190, 200, 250, 300]))
    before = scrape(client)
    with client.application.app_context():
        row = cleanup.run("test")
    after = scrape(client)
    assert (row.status, row.remaining) == ("partial", 3)
    assert value(after, "sundown_cleanup_backlog_rows") == 3
    partial = ("sundown_cleanup_runs_total", (("status", "partial"),))
    assert after[partial] - before.get(partial, 0) == 1
    assert value(after, "sundown_cleanup_last_success_timestamp_seconds") == clock().timestamp()


def test_request_durations_are_observed_by_endpoint(client):
    before = scrape(client)
    assert client.get("/").status_code == 200
    assert client.get("/no/such/page").status_code == 404
    after = scrape(client)
    count = "sundown_request_duration_seconds_count"
    for endpoint in ("public.inquiry_form", "unmatched"):
        assert value(after, count, endpoint=endpoint) - value(before, count, endpoint=endpoint) == 1


def test_a_multiprocess_directory_that_is_missing_stops_the_app(app_config, monkeypatch, tmp_path):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "missing"))
    with pytest.raises(ConfigurationError, match="PROMETHEUS_MULTIPROC_DIR must be an existing directory"):
        create_app(app_config)
