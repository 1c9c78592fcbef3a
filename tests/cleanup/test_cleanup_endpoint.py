"""``POST /internal/cleanup``: for sites with no traffic, a bearer token runs the cleanup once."""

from __future__ import annotations

import pytest

TOKEN = "s3cret-token-0123456789"


@pytest.fixture
def token_client(app_config, make_app):
    return make_app({**app_config, "CLEANUP_TOKEN": TOKEN}).test_client()


def test_the_endpoint_is_404_without_a_configured_token(client):
    assert client.post("/internal/cleanup", headers={"Authorization": "Bearer x"}).status_code == 404


def test_the_endpoint_refuses_a_missing_or_wrong_token(token_client):
    assert token_client.post("/internal/cleanup").status_code == 401
    assert token_client.post("/internal/cleanup", headers={"Authorization": "Basic abc"}).status_code == 401
    wrong = token_client.post("/internal/cleanup", headers={"Authorization": "Bearer s3cret-token-0123456788"})
    assert wrong.status_code == 403


def test_the_endpoint_runs_once_and_returns_the_run(token_client):
    headers = {"Authorization": f"Bearer {TOKEN}"}
    first = token_client.post("/internal/cleanup", headers=headers)
    assert first.status_code == 200
    assert first.json["ran"] is True
    assert first.json["run"]["trigger"] == "internal" and first.json["run"]["status"] == "ok"
    again = token_client.post("/internal/cleanup", headers=headers)
    assert again.json == {"ran": False, "next_due_at": "2026-06-01T13:00:00+00:00"}
