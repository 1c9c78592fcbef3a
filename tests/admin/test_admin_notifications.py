"""The Notifications page: settings saved and audited, the environment's shown read-only,
the signing secret shown once, a test notification through the outbox, 422 on bad input."""

from __future__ import annotations

import json
import re

import pytest
from sqlalchemy import select

from app.models import AuditEntry, Delivery, NotificationSetting
from devtools.receivers import Certificate, MailServer, WebhookReceiver
from tests.helpers import csrf_token

PAGE = "/admin/notifications"
SECRET_SHOWN = re.compile(r'<code class="secret" id="new-secret">(whsec_[A-Za-z0-9+/=]+)</code>')


def post(client, path: str, data: dict):
    return client.post(path, data={**data, "csrf_token": csrf_token(client, PAGE)})


def stored(query) -> dict[str, str]:
    return dict(query.rows(select(NotificationSetting.key, NotificationSetting.value)))


def audit_entries(query) -> list[tuple]:
    return query.rows(select(AuditEntry.action, AuditEntry.count, AuditEntry.detail).order_by(AuditEntry.id))


def test_settings_are_saved_and_audited_without_addresses(admin_client, query):
    response = post(
        admin_client,
        PAGE,
        {
            "emails": "a@example.org\nb@example.org, a@example.org",
            "webhook_url": "https://hooks.example.org/in",
            "include_content": "1",
            "digest_minutes": "0",
        },
    )
    assert response.status_code == 303
    assert stored(query) == {
        "notify_emails": json.dumps(["a@example.org", "b@example.org"]),
        "notify_webhook_url": "https://hooks.example.org/in",
        "notify_include_content": "1",
    }
    [(action, count, detail)] = audit_entries(query)
    assert action == "notifications_changed"
    assert detail == "recipients 0 → 2, webhook URL set, content included"
    assert "example.org" not in detail
    page = admin_client.get(PAGE).get_data(as_text=True)
    assert "a@example.org\nb@example.org" in page and "https://hooks.example.org/in" in page
    assert (
        post(
            admin_client,
            PAGE,
            {
                "emails": "a@example.org, b@example.org",
                "webhook_url": "https://hooks.example.org/in",
                "include_content": "1",
                "digest_minutes": "0",
            },
        ).status_code
        == 303
    )
    assert len(audit_entries(query)) == 1  # unchanged: nothing audited


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("emails", "not an address"),
        ("webhook_url", "ftp://x.example.org"),
        ("digest_minutes", "-5"),
        ("digest_minutes", "ten"),
        ("digest_minutes", "²"),
        ("digest_minutes", "١٠"),
        ("digest_minutes", "9" * 5000),
    ],
)
def test_bad_input_is_refused_with_422_and_nothing_saved(admin_client, query, field, value):
    data = {"emails": "a@example.org", "webhook_url": "", "digest_minutes": "0", field: value}
    response = post(admin_client, PAGE, data)
    assert response.status_code == 422
    page = response.get_data(as_text=True)
    assert "Nothing was saved." in page and 'aria-invalid="true"' in page
    assert stored(query) == {} and audit_entries(query) == []


def test_environment_settings_win_and_are_shown_read_only(app_config, make_app, login, query):
    app = make_app(
        {
            **app_config,
            "NOTIFY_EMAILS": ["ops@example.org"],
            "WEBHOOK_URL": "https://hooks.example.org/x",
            "WEBHOOK_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        }
    )
    client = app.test_client()
    from devtools import admins

    made = admins.log_in(app, "Ada")
    client.set_cookie(made.cookie, made.token)
    page = client.get(PAGE).get_data(as_text=True)
    assert 'id="emails" rows="3" readonly' in page and "ops@example.org" in page
    assert "SUNDOWN_WEBHOOK_SECRET" in page and "Rotate the secret" not in page
    response = client.post(
        PAGE,
        data={
            "emails": "other@example.org",
            "webhook_url": "https://evil.example.org",
            "digest_minutes": "0",
            "csrf_token": csrf_token(client, PAGE),
        },
    )
    assert response.status_code == 303
    assert "notify_emails" not in stored(query) and "notify_webhook_url" not in stored(query)


def test_the_secret_is_shown_once_and_rotating_it_asks_first(admin_client, query):
    first = post(admin_client, "/admin/notifications/secret", {})
    assert first.status_code == 200
    secret = SECRET_SHOWN.search(first.get_data(as_text=True)).group(1)
    assert stored(query)["notify_webhook_secret"] == secret
    assert secret not in admin_client.get(PAGE).get_data(as_text=True)
    confirm = post(admin_client, "/admin/notifications/secret", {})
    assert "Rotate the signing secret?" in confirm.get_data(as_text=True)
    assert stored(query)["notify_webhook_secret"] == secret
    rotated = post(admin_client, "/admin/notifications/secret", {"confirm": "1"})
    new = SECRET_SHOWN.search(rotated.get_data(as_text=True)).group(1)
    assert new != secret and stored(query)["notify_webhook_secret"] == new
    assert [entry[0] for entry in audit_entries(query)] == ["webhook_secret_created", "webhook_secret_rotated"]


def test_nothing_to_test_without_channels(admin_client, query):
    response = post(admin_client, "/admin/notifications/test", {})
    assert response.status_code == 303
    assert "Nothing to test" in admin_client.get(PAGE).get_data(as_text=True)
    assert query.count(Delivery) == 0


@pytest.fixture
def mail(tmp_path):
    server = MailServer(Certificate.make(tmp_path)).start()
    yield server
    server.stop()


def test_a_test_notification_configured_on_the_page_goes_through_the_outbox(
    app_config, make_app, login, query, mail, tmp_path
):
    app = make_app(
        {
            **app_config,
            "SMTP_URL": mail.url,
            "SMTP_CA_FILE": str(tmp_path / "mail-cert.pem"),
            "WEBHOOK_ALLOW_PRIVATE": 1,
        }
    )
    client = app.test_client()
    login("Ada", as_client=client)
    made = post(client, "/admin/notifications/secret", {})
    secret = SECRET_SHOWN.search(made.get_data(as_text=True)).group(1)
    receiver = WebhookReceiver(secret).start()
    try:
        post(client, PAGE, {"emails": "admin@example.org", "webhook_url": receiver.url, "digest_minutes": "0"})
        response = post(client, "/admin/notifications/test", {})
        assert response.status_code == 303
        page = client.get(PAGE).get_data(as_text=True)
        assert "E-mail test delivered." in page and "Webhook test delivered." in page
        [message] = mail.messages
        assert message["Subject"] == "Test notification from Sundown"
        [hook] = receiver.received
        assert hook.signature_ok and hook.payload["type"] == "test"
        assert [(row.kind, row.status) for row in query(select(Delivery))] == [("test", "done")] * 2

        receiver.status = 500
        post(client, "/admin/notifications/test", {})
        page = client.get(PAGE).get_data(as_text=True)
        assert "Webhook test failed: webhook HTTP 500. It will be retried." in page
        assert audit_entries(query)[-1][:2] == ("notification_test", 2)
    finally:
        receiver.stop()
