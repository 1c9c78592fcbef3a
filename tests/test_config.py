"""Settings fail fast in production and fill safe defaults in development."""

from __future__ import annotations

import pytest

from app import create_app
from app.config import ConfigurationError

BASE = {"ENV": "production", "SECRET_KEY": "k", "ORIGIN": "https://inbox.example.org",
        "RP_ID": "inbox.example.org", "DATABASE_URL": "sqlite://"}


@pytest.mark.parametrize("missing", ["SECRET_KEY", "ORIGIN", "RP_ID"])
def test_production_refuses_to_start_without_required_setting(missing, monkeypatch):
    monkeypatch.delenv(f"SUNDOWN_{missing}", raising=False)
    config = {k: v for k, v in BASE.items() if k != missing}
    with pytest.raises(ConfigurationError, match=f"SUNDOWN_{missing}"):
        create_app(config)


def test_environment_settings_are_read_with_prefix(monkeypatch):
    monkeypatch.setenv("SUNDOWN_PRUNE_INTERVAL", "120")
    monkeypatch.setenv("SUNDOWN_ORIGIN", "https://a.example.org, https://b.example.org")
    app = create_app({k: v for k, v in BASE.items() if k != "ORIGIN"})
    assert app.config["PRUNE_INTERVAL"] == 120
    assert app.config["ORIGINS"] == ["https://a.example.org", "https://b.example.org"]
    assert app.config["ORIGIN"] == "https://a.example.org"


def test_overrides_win_over_environment(monkeypatch):
    monkeypatch.setenv("SUNDOWN_PRUNE_INTERVAL", "120")
    assert create_app({**BASE, "PRUNE_INTERVAL": 7}).config["PRUNE_INTERVAL"] == 7


def test_malformed_origin_is_refused():
    with pytest.raises(ConfigurationError, match="not an origin"):
        create_app({**BASE, "ORIGIN": "inbox.example.org/path"})


def test_https_origin_makes_cookies_secure():
    app = create_app(BASE)
    assert app.config["SESSION_COOKIE_SECURE"] is True
    assert app.config["SESSION_COOKIE_NAME"].startswith("__Host-")
    assert app.config["SESSION_COOKIE_HTTPONLY"] is True


def test_development_generates_and_keeps_a_secret_key(tmp_path, monkeypatch):
    monkeypatch.delenv("SUNDOWN_SECRET_KEY", raising=False)
    config = {"ENV": "development", "DATABASE_URL": "sqlite://"}
    first = create_app(config)
    first.instance_path = str(tmp_path)
    from app.config import _instance_secret_key

    key = _instance_secret_key(first)
    assert len(key) == 64
    assert _instance_secret_key(first) == key
    assert (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600
    assert first.config["ORIGIN"] == "http://localhost:5000"
    assert first.config["RP_ID"] == "localhost"


def test_https_origin_adds_strict_transport_security():
    app = create_app(BASE)
    response = app.test_client().get("/nope")
    assert response.headers["Strict-Transport-Security"].startswith("max-age=")
