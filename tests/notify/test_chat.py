"""The chat channels: Apprise-style URLs parsed, and each service sent the request its API documents, through
the webhooks' guard, to a real HTTP receiver on loopback standing in for the service.

Slack, Discord, Teams and Telegram reach the receiver through ``SUNDOWN_NOTIFY_API_BASES`` (their URLs name
the public hosts); Matrix and ntfy name it in their URLs. Every database test runs on SQLite and PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from app import create_app
from app.core.chaturls import UnknownService, parse_api_bases, parse_notify_url, parse_notify_urls
from app.core.parsing import ConfigurationError
from app.models import Delivery
from app.notify.channels.chat import wait_of
from tests.helpers import VALID, csrf_token, settle, submit_inquiry
from tests.notify.steps import CHAT_SERVICES
from tests.notify.test_files import include_content_setting

SLACK = "slack://sundown@T0001/B0002/SlackSecret1234/#inquiries"
DISCORD = "discord://112233/DiscordSecret1234"
TEAMS = "workflows://prod.example.logic.azure.com/wf42/TeamsSignature1234"
TELEGRAM = "tgram://123456:TelegramSecret1234/-100777"


@pytest.fixture
def app_config(app_config, api) -> dict:
    port = api.server.server_address[1]
    urls = [
        SLACK,
        DISCORD,
        TEAMS,
        TELEGRAM,
        f"matrix://syt_MatrixSecret1234@127.0.0.1:{port}/!room:example.org",
        f"ntfy://127.0.0.1:{port}/sundown-alerts?token=tk_NtfySecret1234",
    ]
    bases = ",".join(f"{service}={api.base}" for service in ("slack", "discord", "msteams", "telegram"))
    return {**app_config, "NOTIFY_URLS": ",".join(urls), "NOTIFY_API_BASES": bases}


def calls_by_path(api) -> dict[str, object]:
    return {
        call.path.split("?")[0].split("/")[1] if not call.path.startswith("/_matrix") else "matrix": call
        for call in api.calls
    }


def test_each_service_gets_the_request_its_api_documents(client, query, api):
    assert submit_inquiry(client) == 201
    chat = [row for row in query(select(Delivery).order_by(Delivery.id)) if row.channel in CHAT_SERVICES]
    assert [(row.channel, row.status, row.attempts) for row in chat] == [(name, "done", 1) for name in CHAT_SERVICES]
    assert len(api.calls) == 6
    inquiry_url = f"http://localhost/admin/inquiries/{chat[0].inquiry_id}"
    by = {call.method + " " + call.path: call for call in api.calls}
    slack = by["POST /services/T0001/B0002/SlackSecret1234"]
    assert slack.payload == {
        "text": f"*New inquiry #{chat[0].inquiry_id}*\nForm: contact\n<{inquiry_url}>",
        "username": "sundown",
        "channel": "#inquiries",
    }
    discord = by["POST /api/webhooks/112233/DiscordSecret1234"]
    assert discord.payload["allowed_mentions"] == {"parse": []}
    assert discord.payload["content"].endswith(f"<{inquiry_url}>")
    teams = next(call for path, call in by.items() if path.startswith("POST /workflows/wf42/triggers/manual/"))
    assert "sig=TeamsSignature1234" in teams.path and "api-version=2016-06-01" in teams.path
    [attachment] = teams.payload["attachments"]
    assert teams.payload["type"] == "message" and attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    assert attachment["content"]["type"] == "AdaptiveCard"
    assert attachment["content"]["actions"][0] == {"type": "Action.OpenUrl", "title": "Sundown", "url": inquiry_url}
    telegram = by["POST /bot123456:TelegramSecret1234/sendMessage"]
    assert telegram.payload["chat_id"] == "-100777" and telegram.payload["text"].endswith(inquiry_url)
    matrix = next(call for call in api.calls if call.method == "PUT")
    assert matrix.path == (
        "/_matrix/client/v3/rooms/%21room%3Aexample.org/send/m.room.message/" + chat[4].idempotency_key
    )
    assert matrix.headers["authorization"] == "Bearer syt_MatrixSecret1234"
    assert matrix.payload["msgtype"] == "m.text" and matrix.payload["format"] == "org.matrix.custom.html"
    ntfy = by["POST /"]
    assert ntfy.headers["authorization"] == "Bearer tk_NtfySecret1234"
    assert {key: ntfy.payload[key] for key in ("topic", "title", "click")} == {
        "topic": "sundown-alerts",
        "title": f"New inquiry #{chat[0].inquiry_id}",
        "click": inquiry_url,
    }
    for call in api.calls:
        assert call.headers["content-type"] == "application/json" and call.headers["user-agent"] == "Sundown"
        assert VALID["name"] not in call.body.decode() and "question" not in call.body.decode()


def test_with_content_on_the_name_and_the_first_line_go_along_never_the_whole_message(client, db_session, api):
    include_content_setting(db_session)
    submit_inquiry(client)
    for call in api.calls:
        body = call.body.decode()
        assert VALID["name"] in body and "Hello," in body and "question" not in body


def test_a_revoked_token_fails_at_once_and_429_waits_as_long_as_asked(client, clock, query, api):
    api.status = 401
    submit_inquiry(client)
    api.status, api.retry_after = 429, "7200"
    submit_inquiry(client)
    rows = [row for row in query(select(Delivery).order_by(Delivery.id)) if row.channel in CHAT_SERVICES]
    revoked, limited = rows[:6], rows[6:]
    assert {(row.status, row.attempts) for row in revoked} == {("failed", 1)}
    assert revoked[0].last_error == "slack HTTP 401"
    assert {(row.status, row.last_error.split()[-1]) for row in limited} == {("pending", "429")}
    assert {row.next_attempt_at - clock() for row in limited} == {timedelta(hours=2)}
    for row in rows:
        assert "Secret" not in row.last_error


def test_a_private_address_is_refused_unless_allowed(app_config, make_app, api):
    app = make_app({**app_config, "WEBHOOK_ALLOW_PRIVATE": 0})
    client = app.test_client()
    submit_inquiry(client)
    settle(app)
    assert api.calls == []


def test_a_url_for_another_service_stops_the_start_naming_the_six(app_config):
    with pytest.raises(ConfigurationError) as error:
        create_app({**app_config, "NOTIFY_URLS": "pushover://UserSecret1234@TokenSecret1234"})
    message = str(error.value)
    assert "SUNDOWN_NOTIFY_URLS" in message and "Secret" not in message
    for scheme in ("slack://", "discord://", "workflows://", "tgram://", "matrixs://", "ntfys://"):
        assert scheme in message


def test_urls_parse_to_the_services_addresses_and_show_no_secret_whole():
    slack, discord, teams, telegram = parse_notify_urls([SLACK, DISCORD, TEAMS, TELEGRAM])
    assert slack.url == "https://hooks.slack.com/services/T0001/B0002/SlackSecret1234"
    assert discord.url == "https://discord.com/api/webhooks/112233/DiscordSecret1234"
    assert teams.url.startswith("https://prod.example.logic.azure.com/workflows/wf42/triggers/manual/paths/invoke?")
    assert telegram.url == "https://api.telegram.org/bot123456:TelegramSecret1234/sendMessage"
    legacy = parse_notify_url("msteams://acme@AAAA1111/BBBB2222/CCCC3333/DDDD4444")
    assert (
        legacy.url == "https://acme.webhook.office.com/webhookb2/AAAA1111/IncomingWebhook/BBBB2222/CCCC3333/V2DDDD4444"
    )
    assert parse_notify_url("ntfy://alerts").url == "https://ntfy.sh/"
    assert parse_notify_url("matrixs://tok_abcdef@m.example.org/!r:example.org").base == "https://m.example.org"
    for target in (slack, discord, teams, telegram, legacy):
        assert "Secret" not in target.shown and "2222" not in target.shown
    with pytest.raises(UnknownService, match="ntfys://"):
        parse_notify_url("mailto://someone@example.org")
    for broken in ("slack://T0001/B0002", "discord://name/token", "tgram://123456:Secret", "matrix://tok@host/#alias"):
        with pytest.raises(ValueError):
            parse_notify_url(broken)
    with pytest.raises(ValueError):
        parse_notify_urls([DISCORD] * 5)
    assert parse_api_bases("telegram=http://127.0.0.1:9") == {"telegram": "http://127.0.0.1:9"}
    with pytest.raises(ValueError):
        parse_api_bases("pushover=http://127.0.0.1:9")


def test_retry_after_is_read_as_seconds_or_a_date():
    now = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
    assert wait_of("30", now) == 30.0
    assert wait_of("Sun, 06 Dec 2026 12:05:00 GMT", now) == 300.0
    assert wait_of("soon", now) is None and wait_of(None, now) is None
    assert wait_of("99999999", now) == 6 * 3600


def test_the_notifications_page_shows_the_urls_read_only_with_their_secrets_cut(admin_client):
    page = admin_client.get("/admin/notifications").get_data(as_text=True)
    assert "Set in the environment (SUNDOWN_NOTIFY_URLS)" in page
    assert "<code>tgram://1234…/-100777</code>" in page and "<code>discord://112233/Disc…</code>" in page
    assert "Secret1234" not in page
    assert '<th scope="row">Telegram</th>' in page  # a row of the health table per service


def test_the_test_notification_goes_to_every_service(admin_client, api):
    with admin_client.post(
        "/admin/notifications/test", data={"csrf_token": csrf_token(admin_client, "/admin/notifications")}
    ) as response:
        assert response.status_code == 303
    settle(admin_client.application)
    assert len(api.calls) == 6
    telegram = next(call for call in api.calls if call.path.endswith("/sendMessage"))
    assert telegram.payload["text"] == "Test notification from Sundown\nhttp://localhost/admin/notifications"
    page = admin_client.get("/admin/notifications").get_data(as_text=True)
    assert "Telegram test delivered." in page and "ntfy test delivered." in page


def test_messages_are_in_the_notification_language(app_config, make_app, api):
    app = make_app({**app_config, "DEFAULT_LOCALE": "ja"})
    submit_inquiry(app.test_client())
    ntfy = next(call for call in api.calls if call.path == "/")
    assert ntfy.payload["title"].startswith("新しい問い合わせ #") and ntfy.payload["message"] == "フォーム：contact"
