"""Settings fail fast in production and fill safe defaults in development."""

from __future__ import annotations

import pytest
from flask import Flask

from app import config, create_app
from app.config import ConfigurationError
from app.settings import SETTINGS

BASE = {
    "ENV": "production",
    "SECRET_KEY": "k" * 32,
    "ORIGIN": "https://inbox.example.org",
    "RP_ID": "inbox.example.org",
    "DATABASE_URL": "sqlite://",
}


@pytest.mark.parametrize("missing", ["SECRET_KEY", "ORIGIN", "RP_ID"])
def test_production_refuses_to_start_without_required_setting(missing, monkeypatch):
    monkeypatch.delenv(f"SUNDOWN_{missing}", raising=False)
    config = {k: v for k, v in BASE.items() if k != missing}
    with pytest.raises(ConfigurationError, match=f"SUNDOWN_{missing}"):
        create_app(config)


def test_environment_settings_are_read_with_prefix(monkeypatch):
    monkeypatch.setenv("SUNDOWN_CLEANUP_INTERVAL", "120")
    monkeypatch.setenv("SUNDOWN_ORIGIN", "https://a.example.org, https://b.example.org")
    app = create_app({**{k: v for k, v in BASE.items() if k != "ORIGIN"}, "RP_ID": "example.org"})
    assert app.config["CLEANUP_INTERVAL"] == 120
    assert app.config["ORIGINS"] == ["https://a.example.org", "https://b.example.org"]
    assert app.config["ORIGIN"] == "https://a.example.org"


def test_overrides_win_over_environment(monkeypatch):
    monkeypatch.setenv("SUNDOWN_CLEANUP_INTERVAL", "120")
    assert create_app({**BASE, "CLEANUP_INTERVAL": 7}).config["CLEANUP_INTERVAL"] == 7


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


def load_from_env(monkeypatch, **environ: str):
    """``config.load`` on a bare app (no database) with ``SUNDOWN_<KEY>=value`` set."""
    for key, value in environ.items():
        monkeypatch.setenv(f"SUNDOWN_{key}", value)
    app = Flask(__name__)
    config.load(app, {k: v for k, v in BASE.items() if k not in environ})
    return app.config


BAD = [
    ("ENV", "staging"),
    ("SECRET_KEY", "12345"),
    ("SECRET_KEY", "k" * 31),  # shorter than 32 characters
    ("RP_NAME", ""),
    ("OPERATOR_NAME", " "),
    ("OPERATOR_CONTACT", "x" * 201),
    ("DATABASE_URL", "mysql://sundown@db/sundown"),
    ("DATABASE_URL", "not a url"),
    ("ORIGIN", "inbox.example.org"),
    ("RP_ID", "other.org"),
    ("RP_ID", "org"),
    ("RP_ID", "xinbox.example.org"),
    ("TIME_ZONE", "Mars/Olympus_Mons"),
    ("TIME_ZONE", "../../etc/passwd"),
    ("DEFAULT_LOCALE", "fr"),
    ("DEFAULT_LOCALE", "zh-Hant"),
    ("DEFAULT_LOCALE", ""),
    ("DEFAULT_LOCALE", "1"),
    ("PROXY_FIX", "-1"),
    ("PROXY_FIX", "11"),
    ("PROXY_FIX", "true"),
    ("MAX_CONTENT_LENGTH", "1023"),
    ("DEFAULT_RETENTION_DAYS", "0"),
    ("DEFAULT_RETENTION_DAYS", "3651"),
    ("SUBMIT_RATE_LIMITS", "five per minute"),
    ("SUBMIT_RATE_LIMITS", "5"),
    ("SUBMIT_RATE_LIMITS", "5/60,"),
    ("SUBMIT_RATE_LIMITS", "0/60"),
    ("AUTH_RATE_LIMIT_PER_CLIENT", "10/0"),
    ("AUTH_RATE_LIMIT_GLOBAL", "100/-600"),
    ("POW_TTL", "0"),
    ("POW_MAX_NUMBER", "0"),
    ("POW_MAX_NUMBER", "4294967296"),
    ("POW_MAX_NUMBER", "2.5"),
    ("MIN_FILL_SECONDS", "-1"),
    ("MIN_FILL_SECONDS", "soon"),
    ("CHALLENGE_TTL", "0"),
    ("INVITE_TTL", "-3600"),
    ("LOGIN_LIFETIME", "1.5"),
    ("LOGIN_IDLE_TIMEOUT", "soon"),
    ("CLEANUP_INTERVAL", "false"),
    ("CLEANUP_BATCH_SIZE", "0"),
    ("CLEANUP_TIME_BUDGET", "-1"),
    ("CLEANUP_TIME_BUDGET", "NaN"),
    ("CLEANUP_TIME_BUDGET", "Infinity"),
    ("CLEANUP_BACKLOG_RETRY", "[60]"),
    ("CLEANUP_YIELD", "-0.5"),
    ("CLEANUP_LEASE", "five minutes"),
    ("CLEANUP_TOKEN", "too-short"),
    ("CLEANUP_TOKEN", "12345678901234567890"),
    ("METRICS_TOKEN", "too-short"),
    ("METRICS_TOKEN", "12345678901234567890"),
    ("LOG_FORMAT", "xml"),
    ("DB_POOL_SIZE", "0"),
    ("DB_CONNECT_TIMEOUT", "1"),
    ("DB_STATEMENT_TIMEOUT", "0"),
    ("WTF_CSRF_TIME_LIMIT", "0"),
    ("WTF_CSRF_SSL_STRICT", "yes"),
    ("SMTP_URL", "http://mail.example.org"),
    ("SMTP_URL", "smtp://"),
    ("SMTP_URL", "smtps://user:pass@mail.example.org:465/path"),
    ("SMTP_CA_FILE", "/nonexistent/ca.pem"),
    ("MAIL_FROM", "not an address"),
    ("NOTIFY_EMAILS", "admin@example.org, nope"),
    ("NOTIFY_EMAILS", "[1, 2]"),
    ("WEBHOOK_URL", "ftp://hooks.example.org/in"),
    ("WEBHOOK_URL", "hooks.example.org/in"),
    ("WEBHOOK_SECRET", "not-a-whsec"),
    ("WEBHOOK_SECRET", "whsec_c2hvcnQ="),
    ("WEBHOOK_ALLOW_PRIVATE", "yes"),
    ("WEBHOOK_ALLOW_PRIVATE", "2"),
    ("DELIVERY_RETRY_BASE", "0"),
    ("DELIVERY_RETRY_BASE", "soon"),
    ("SUBMIT_GLOBAL_RATE_LIMITS", "300/minute"),
    ("AUDIT_RETENTION_DAYS", "364"),
    ("AUDIT_RETENTION_DAYS", "3651"),
    ("NOTIFY_HOURLY_CAP", "0"),
    ("REPLY_TO", "team at example.org"),
    ("ACK_HOURLY_CAP", "0"),
    ("ACK_PER_ADDRESS_SECONDS", "3599"),
    ("ATTACHMENT_MAX_BYTES", "1023"),
    ("ATTACHMENT_MAX_BYTES", "104857601"),
    ("ATTACHMENT_TYPES", "application/x-unknown-thing"),
    ("ACK_PER_CLIENT_LIMITS", "5 per fortnight"),
    ("INBOUND_ADDRESS", "replies at example.org"),
    ("INBOUND_TOKEN", "short"),
    ("INBOUND_MAX_BYTES", "0"),
    ("INBOUND_RATE_LIMITS", "lots"),
    ("IMAP_URL", "ftp://mail.example.org/INBOX"),
    ("IMAP_CA_FILE", "/nonexistent/ca.pem"),
    ("IMAP_INTERVAL", "soon"),
    ("NOTIFY_URLS", "mailto://team@example.org"),
    ("NOTIFY_API_BASES", "nonsense"),
    ("SUBMIT_CLIENT_FILE_BYTES", "-1"),
    ("SUBMIT_FILE_BYTES", "lots"),
    ("ATTACHMENT_MIN_FREE_BYTES", "-1"),
]


def test_every_checked_setting_has_a_bad_value_above():
    assert {variable.name for variable in SETTINGS} <= {key for key, _value in BAD}


@pytest.mark.parametrize(("key", "value"), BAD)
def test_bad_setting_stops_the_app_naming_the_variable(key, value, monkeypatch):
    with pytest.raises(ConfigurationError, match=f"^SUNDOWN_{key} ") as error:
        load_from_env(monkeypatch, **{key: value})
    assert "\n" not in str(error.value)


GOOD = [
    ("ENV", "development", "development"),
    ("SECRET_KEY", "a-long-random-string-of-32-chars", "a-long-random-string-of-32-chars"),
    ("RP_NAME", "Acme inbox", "Acme inbox"),
    ("DATABASE_URL", "postgresql://sundown:secret@db/sundown", "postgresql://sundown:secret@db/sundown"),
    ("DATABASE_URL", "sqlite:///instance/sundown.db", "sqlite:///instance/sundown.db"),
    ("ORIGIN", "https://inbox.example.org:8443", "https://inbox.example.org:8443"),
    ("RP_ID", "inbox.example.org", "inbox.example.org"),
    ("RP_ID", "example.org", "example.org"),
    ("TIME_ZONE", "Europe/Paris", "Europe/Paris"),
    ("DEFAULT_LOCALE", "ja", "ja"),
    ("DEFAULT_LOCALE", "zh-Hans", "zh_Hans"),
    ("DEFAULT_LOCALE", "zh_Hans", "zh_Hans"),
    ("DEFAULT_LOCALE", "en", "en"),
    ("PROXY_FIX", "2", 2),
    ("PROXY_FIX", "0", 0),
    ("MAX_CONTENT_LENGTH", "1024", 1024),
    ("DEFAULT_RETENTION_DAYS", "1", 1),
    ("DEFAULT_RETENTION_DAYS", "3650", 3650),
    ("SUBMIT_RATE_LIMITS", "3/60, 20/3600", "3/60, 20/3600"),
    ("AUTH_RATE_LIMIT_PER_CLIENT", "20/600", "20/600"),
    ("AUTH_RATE_LIMIT_GLOBAL", "1000/60", "1000/60"),
    ("POW_TTL", "300", 300),
    ("POW_MAX_NUMBER", "1", 1),
    ("POW_MAX_NUMBER", "4294967295", 4294967295),
    ("MIN_FILL_SECONDS", "0", 0.0),
    ("MIN_FILL_SECONDS", "2.5", 2.5),
    ("CHALLENGE_TTL", "60", 60),
    ("INVITE_TTL", "86400", 86400),
    ("LOGIN_LIFETIME", "3600.0", 3600),
    ("LOGIN_IDLE_TIMEOUT", "900", 900),
    ("CLEANUP_INTERVAL", "120", 120),
    ("CLEANUP_BATCH_SIZE", "500", 500),
    ("CLEANUP_BATCH_SIZE", "null", None),
    ("CLEANUP_TIME_BUDGET", "2", 2.0),
    ("CLEANUP_TIME_BUDGET", "0.5", 0.5),
    ("CLEANUP_TIME_BUDGET", "0", 0.0),
    ("CLEANUP_BACKLOG_RETRY", "30", 30),
    ("CLEANUP_YIELD", "0", 0.0),
    ("CLEANUP_YIELD", "null", None),
    ("CLEANUP_LEASE", "600", 600),
    ("CLEANUP_TOKEN", "s3cret-token-of-24-chars", "s3cret-token-of-24-chars"),
    ("METRICS_TOKEN", "scrape-token-of-24-chars", "scrape-token-of-24-chars"),
    ("LOG_FORMAT", "json", "json"),
    ("LOG_FORMAT", "text", "text"),
    ("DB_POOL_SIZE", "20", 20),
    ("DB_CONNECT_TIMEOUT", "10", 10),
    ("DB_STATEMENT_TIMEOUT", "0.25", 0.25),
    ("WTF_CSRF_TIME_LIMIT", "3600", 3600),
    ("WTF_CSRF_TIME_LIMIT", "null", None),
    ("WTF_CSRF_SSL_STRICT", "false", False),
    (
        "SMTP_URL",
        "smtp+starttls://user:p%40ss@mail.example.org:587",
        "smtp+starttls://user:p%40ss@mail.example.org:587",
    ),
    ("SMTP_URL", "smtps://mail.example.org", "smtps://mail.example.org"),
    ("MAIL_FROM", "sundown@example.org", "sundown@example.org"),
    ("NOTIFY_EMAILS", "a@example.org, b@example.org", ["a@example.org", "b@example.org"]),
    ("NOTIFY_EMAILS", '["a@example.org"]', ["a@example.org"]),
    ("WEBHOOK_URL", "https://hooks.example.org/in?x=1", "https://hooks.example.org/in?x=1"),
    ("WEBHOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
    ("WEBHOOK_ALLOW_PRIVATE", "1", 1),
    ("WEBHOOK_ALLOW_PRIVATE", "0", 0),
    ("DELIVERY_RETRY_BASE", "60", 60.0),
    ("DELIVERY_RETRY_BASE", "0.5", 0.5),
]


@pytest.mark.parametrize(("key", "value", "loaded"), GOOD)
def test_good_setting_is_accepted_in_its_python_type(key, value, loaded, monkeypatch):
    result = load_from_env(monkeypatch, **{key: value})[key]
    assert result == loaded
    assert type(result) is type(loaded)


@pytest.mark.parametrize("value", ["120", 120.0])
def test_overrides_are_normalised_too(value):
    app = Flask(__name__)
    config.load(app, {**BASE, "CLEANUP_INTERVAL": value})
    assert app.config["CLEANUP_INTERVAL"] == 120 and type(app.config["CLEANUP_INTERVAL"]) is int


def test_bool_is_not_a_number():
    with pytest.raises(ConfigurationError, match="SUNDOWN_PROXY_FIX must be a whole number"):
        config.load(Flask(__name__), {**BASE, "PROXY_FIX": True})


def test_ip_address_origin_allows_only_itself_as_rp_id():
    origin = {"ORIGIN": "https://192.168.0.10"}
    config.load(Flask(__name__), {**BASE, **origin, "RP_ID": "192.168.0.10"})
    with pytest.raises(ConfigurationError, match="SUNDOWN_RP_ID"):
        config.load(Flask(__name__), {**BASE, **origin, "RP_ID": "168.0.10"})


def test_secrets_are_not_echoed_in_the_error(monkeypatch):
    with pytest.raises(ConfigurationError) as error:
        load_from_env(monkeypatch, CLEANUP_TOKEN="hunter2-short")
    assert "hunter2" not in str(error.value)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("SUNDOWN_PRUNE_INTERVAL", "SUNDOWN_CLEANUP_INTERVAL"),
        ("SUNDOWN_SESSION_LIFETIME", "SUNDOWN_LOGIN_LIFETIME"),
        ("SUNDOWN_SESSION_IDLE_TIMEOUT", "SUNDOWN_LOGIN_IDLE_TIMEOUT"),
    ],
)
def test_a_variable_under_its_old_name_stops_the_app_naming_the_new_one(old, new, monkeypatch):
    monkeypatch.setenv(old, "60")
    with pytest.raises(ConfigurationError, match=f"^{old} was renamed {new}: rename it in the environment.$"):
        create_app(BASE)


def test_a_name_that_only_begins_like_an_old_one_is_not_refused(monkeypatch):
    monkeypatch.setenv("SUNDOWN_SESSION_LIFETIME_NOTE", "60")
    assert create_app(BASE).config["LOGIN_LIFETIME"] == 12 * 3600


def test_bad_rate_limit_stops_create_app_before_any_request(monkeypatch):
    monkeypatch.setenv("SUNDOWN_SUBMIT_RATE_LIMITS", "five per minute")
    with pytest.raises(ConfigurationError, match="SUNDOWN_SUBMIT_RATE_LIMITS must be"):
        create_app(BASE)


def test_invalid_env_is_reported_before_missing_secrets(monkeypatch):
    monkeypatch.delenv("SUNDOWN_SECRET_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="SUNDOWN_ENV must be production or development"):
        create_app({"ENV": "dev", "DATABASE_URL": "sqlite://"})


def test_the_smtp_password_is_never_echoed(monkeypatch):
    with pytest.raises(ConfigurationError) as error:
        load_from_env(monkeypatch, SMTP_URL="ftp://user:hunter2@mail.example.org")
    assert "hunter2" not in str(error.value)
