"""Health and database failure: 503 with a clear message, never a 500."""

from __future__ import annotations

from tests.helpers import VALID


def test_unreachable_database_answers_503(app_config, make_app):
    config = dict(app_config, DATABASE_URL="postgresql://postgres@127.0.0.1:1/nowhere")
    client = make_app(config).test_client()
    health = client.get("/healthz")
    assert health.status_code == 503
    assert health.json["database"] is False
    response = client.post("/api/inquiries", json=VALID)
    assert response.status_code == 503
    assert "database is unavailable" in response.json["error"]


def test_unmigrated_database_is_unhealthy(app_config, make_app, tmp_path):
    config = dict(app_config, DATABASE_URL=f"sqlite:///{tmp_path / 'empty.db'}")
    response = make_app(config).test_client().get("/healthz")
    assert response.status_code == 503
    assert response.json == {"ok": False, "database": True, "migrations": False, "cleanup": "unknown"}
