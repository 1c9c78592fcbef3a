"""Chat URLs saved by owners (the site's and a form's), each chat channel's digest, the hourly cap on chat, and
the delivery log with "Send again" and a test per channel.

Slack and Discord reach a real HTTP receiver on loopback through ``SUNDOWN_NOTIFY_API_BASES``; ntfy names it
in its URL. No URL is set in the environment here: what is sent comes from what admins saved. Every database
test runs on SQLite and PostgreSQL.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from sqlalchemy import select

from app.cleanup.targets import DELIVERIES_KEEP
from app.core import chaturls
from app.models import AuditEntry, Delivery, Form, Preference
from app.notify import log as delivery_log
from tests.helpers import csrf_token, editor_post, settle, solution, submit_inquiry
from tests.notify.steps import CHAT_SERVICES, DELIVERIES, request_after

SLACK = "slack://T0001/B0002/SlackSecret1234"
DISCORD = "discord://112233/DiscordSecret1234"
JOBS_DISCORD = "discord://445566/JobsSecret98765"


@pytest.fixture
def app_config(app_config, api) -> dict:
    bases = ",".join(f"{service}={api.base}" for service in ("slack", "discord"))
    return {**app_config, "NOTIFY_API_BASES": bases}


def save_chat(admin_client, urls: str, **digests: str):
    data = {"csrf_token": csrf_token(admin_client, "/admin/notifications"), "chat_urls": urls}
    data.update({f"digest-{name}": minutes for name, minutes in digests.items()})
    return admin_client.post("/admin/notifications/chat", data=data)


def chat_rows(query) -> list[Delivery]:
    return [row for row in query(DELIVERIES) if row.channel in CHAT_SERVICES]


# --- The site's chat URLs ----------------------------------------------------------


def test_saved_urls_are_sent_to_and_shown_back_only_masked(admin_client, query, api):
    assert save_chat(admin_client, f"{SLACK}\n\n{DISCORD}\n").status_code == 303
    assert query(select(Preference.value).where(Preference.key == "notify_urls")) == [f'["{SLACK}", "{DISCORD}"]']
    page = admin_client.get("/admin/notifications").get_data(as_text=True)
    assert "slack://T0001/B000…/Slac…" in page and "discord://112233/Disc…" in page
    assert "Secret1234" not in page
    submit_inquiry(admin_client)
    assert sorted(call.path for call in api.calls) == [
        "/api/webhooks/112233/DiscordSecret1234",
        "/services/T0001/B0002/SlackSecret1234",
    ]
    [entry] = query(select(AuditEntry).where(AuditEntry.action == "notifications_changed"))
    assert entry.detail == "chat URLs 0 → 2" and "Secret" not in entry.detail


def test_a_line_left_masked_keeps_its_url_and_a_deleted_line_removes_it(admin_client, query):
    save_chat(admin_client, f"{SLACK}\n{DISCORD}")
    masked = chaturls.parse_notify_url(SLACK).shown
    assert save_chat(admin_client, masked).status_code == 303
    assert query(select(Preference.value).where(Preference.key == "notify_urls")) == [f'["{SLACK}"]']


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        ("mailto://someone@example.org", "mailto:// is not a service Sundown speaks."),
        ("pover://user@token", "Slack (slack://), Discord (discord://), Microsoft Teams"),
        ("slack://T0001/B000…/Slac…", "Line 1 is not a complete URL"),
        ("discord://notanumber/abc", "Line 1 is not a complete URL"),
        ("\n".join(f"slack://T/B/C{n}" for n in range(5)), "At most 4 URLs of one service (slack)"),
    ],
)
def test_a_url_sundown_cannot_use_is_refused_with_422_saying_why_and_nothing_saved(admin_client, query, typed, says):
    response = save_chat(admin_client, typed)
    page = response.get_data(as_text=True)
    assert response.status_code == 422 and says in page
    for service in ("Slack", "Discord", "Microsoft Teams", "Telegram", "Matrix", "ntfy"):
        assert service in page
    assert query(select(Preference).where(Preference.key == "notify_urls")) == []
    assert "token" not in page.split('id="chat_urls"')[1].split("</textarea>")[0]  # what was typed is not shown


def test_urls_of_the_environment_are_shown_read_only_and_counted_against_the_limit(app_config, make_app, login, query):
    app = make_app({**app_config, "NOTIFY_URLS": ",".join(f"slack://T/B/Env{n}" for n in range(3))})
    client = app.test_client()
    login("Ada", as_client=client)
    page = client.get("/admin/notifications").get_data(as_text=True)
    assert "Set in the environment (SUNDOWN_NOTIFY_URLS)" in page and "More chat URLs" in page
    assert save_chat(client, "slack://T/B/Mine1").status_code == 303
    assert save_chat(client, "slack://T/B/Mine1\nslack://T/B/Mine2").status_code == 422


# --- A form's own chat URLs ----------------------------------------------------------


def make_jobs_form(admin_client, **settings):
    data = editor_post(
        admin_client,
        "/admin/forms/new",
        [{"type": "text", "key": "name", "label-en": "Name", "required": "1"}],
        slug="jobs",
        **{"title-en": "Jobs", **settings},
    )
    return admin_client.post("/admin/forms/new", data=data)


def submit_to_jobs(client) -> None:
    with client.post("/api/forms/jobs/inquiries", json={"name": "Ines", "altcha": solution(client)}) as sent:
        assert sent.status_code == 201
    settle(client.application)


def test_a_forms_chat_urls_are_sent_to_besides_the_sites_and_shown_masked(admin_client, query, api):
    save_chat(admin_client, SLACK)
    assert make_jobs_form(admin_client, notify_urls=JOBS_DISCORD).status_code == 303
    [form] = query(select(Form).where(Form.slug == "jobs"))
    assert form.notify_urls == [JOBS_DISCORD]
    editor = admin_client.get(f"/admin/forms/{form.id}").get_data(as_text=True)
    assert "discord://445566/Jobs…" in editor and "JobsSecret98765" not in editor
    submit_to_jobs(admin_client)
    assert sorted(call.path.split("/")[1] for call in api.calls) == ["api", "services"]
    api.calls.clear()
    submit_inquiry(admin_client)  # the site's own form: the site's URLs alone
    assert [call.path.split("/")[1] for call in api.calls] == ["services"]


def test_saving_a_form_again_with_its_masked_line_keeps_its_url(admin_client, query):
    make_jobs_form(admin_client, notify_urls=JOBS_DISCORD)
    [form_id] = query(select(Form.id).where(Form.slug == "jobs"))
    data = editor_post(
        admin_client,
        f"/admin/forms/{form_id}",
        [{"type": "text", "key": "name", "label-en": "Name", "required": "1"}],
        slug="jobs",
        **{"title-en": "Jobs", "notify_urls": "discord://445566/Jobs…"},
    )
    assert admin_client.post(f"/admin/forms/{form_id}", data=data).status_code == 303
    assert query(select(Form.notify_urls).where(Form.id == form_id)) == [[JOBS_DISCORD]]
    data["notify_urls"] = "matrix://nope"
    refused = admin_client.post(f"/admin/forms/{form_id}", data=data)
    assert refused.status_code == 422 and "Line 1 is not a complete URL" in refused.get_data(as_text=True)
    data["notify_urls"] = "gotify://host/token"
    refused = admin_client.post(f"/admin/forms/{form_id}", data=data)
    assert refused.status_code == 422 and "gotify:// is not a service Sundown speaks" in refused.get_data(as_text=True)


# --- Digests and the hourly cap -------------------------------------------------------------


def test_a_chat_digest_sends_one_message_an_hour_listing_the_inquiries(admin_client, clock, query, api):
    assert save_chat(admin_client, f"{SLACK}\n{DISCORD}", slack="60").status_code == 303
    for _ in range(3):
        submit_inquiry(admin_client)
    assert [call.path.split("/")[1] for call in api.calls] == ["api"] * 3  # Discord at once, Slack waits
    waiting = [row for row in chat_rows(query) if row.status == "pending"]
    assert len(waiting) == 3 and {row.channel for row in waiting} == {"slack"}
    window_end = waiting[0].next_attempt_at
    assert window_end.timestamp() % 3600 == 0 and window_end - clock() <= timedelta(hours=1)
    clock.moment = window_end
    request_after(admin_client)
    [slack] = [call for call in api.calls if call.path.startswith("/services/")]
    text = slack.payload["text"]
    assert text.startswith("*3 new inquiries*") and text.endswith("<http://localhost/admin/>")
    assert all(f"New inquiry #{row.inquiry_id}" in text for row in waiting)
    assert {row.status for row in chat_rows(query)} == {"done"}


def test_an_unknown_digest_choice_is_refused(admin_client):
    response = save_chat(admin_client, SLACK, slack="5")
    assert response.status_code == 422 and "one message an hour" in response.get_data(as_text=True)


def test_past_the_hourly_cap_chat_waits_for_the_end_of_the_hour_and_goes_as_one(
    app_config, make_app, login, clock, query, api
):
    app = make_app({**app_config, "NOTIFY_HOURLY_CAP": 2})
    client = app.test_client()
    login("Ada", as_client=client)
    save_chat(client, SLACK)
    for _ in range(4):
        submit_inquiry(client)
    assert len(api.calls) == 2
    held = [row for row in chat_rows(query) if row.status == "pending"]
    assert {row.kind for row in held} == {"capped"} and len(held) == 2
    clock.moment = held[0].next_attempt_at
    request_after(client)
    assert len(api.calls) == 3 and api.calls[-1].payload["text"].startswith("*2 new inquiries*")


# --- The delivery log --------------------------------------------------------------------------


def test_the_log_lists_each_delivery_with_its_form_and_pages_and_filters_by_channel(admin_client, query, api):
    save_chat(admin_client, SLACK)
    submit_inquiry(admin_client)
    page = admin_client.get("/admin/notifications").get_data(as_text=True)
    [row] = chat_rows(query)
    assert "Delivery log" in page and f"#{row.inquiry_id}</a> (contact)" in page
    only = admin_client.get("/admin/notifications?channel=slack").get_data(as_text=True)
    assert "Delivery log: Slack" in only and "badge ok" in only
    assert admin_client.get("/admin/notifications?channel=pigeon").status_code == 404
    assert admin_client.get("/admin/notifications?page=abc").status_code == 200


def test_the_log_pages_by_fifty_and_shows_only_the_last_thirty_days(db_session, clock, admin_client):
    def row(age: timedelta) -> Delivery:
        moment = clock() - age
        return Delivery(
            channel="slack", kind="test", status="done", attempts=1, next_attempt_at=moment,
            idempotency_key="msg_x", created_at=moment, finished_at=moment,
        )  # fmt: skip

    db_session.add_all([row(timedelta(minutes=n)) for n in range(delivery_log.PER_PAGE + 1)])
    db_session.add(row(timedelta(days=31)))
    db_session.commit()
    first = delivery_log.page(db_session, 1)
    assert len(first.entries) == delivery_log.PER_PAGE and first.more
    second = delivery_log.page(db_session, 2)
    assert len(second.entries) == 1 and not second.more
    assert 'rel="next"' in admin_client.get("/admin/notifications").get_data(as_text=True)
    assert 'rel="prev"' in admin_client.get("/admin/notifications?page=2").get_data(as_text=True)
    assert delivery_log.KEEP == DELIVERIES_KEEP  # the cleanup deletes what the log no longer shows


def test_a_failed_delivery_is_sent_again_as_a_new_row_and_audited(admin_client, query, api):
    save_chat(admin_client, SLACK)
    api.status = 404
    submit_inquiry(admin_client)
    [failed] = chat_rows(query)
    assert failed.status == "failed" and failed.last_error == "slack HTTP 404"
    assert "Send again" in admin_client.get("/admin/notifications").get_data(as_text=True)
    api.status = 200
    token = csrf_token(admin_client, "/admin/notifications")
    with admin_client.post(f"/admin/notifications/deliveries/{failed.id}/again", data={"csrf_token": token}) as sent:
        assert sent.status_code == 303
    settle(admin_client.application)
    first, again = chat_rows(query)
    assert (first.status, again.status, again.inquiry_id, again.kind) == (
        "failed",
        "done",
        failed.inquiry_id,
        "inquiry",
    )
    [entry] = query(select(AuditEntry).where(AuditEntry.action == "delivery_sent_again"))
    assert entry.detail == f"#{failed.id} slack"
    refused = admin_client.post(f"/admin/notifications/deliveries/{again.id}/again", data={"csrf_token": token})
    assert refused.status_code == 404  # only a failed one


def test_a_test_is_sent_on_the_one_channel_asked(admin_client, api):
    save_chat(admin_client, f"{SLACK}\n{DISCORD}")
    page = admin_client.get("/admin/notifications").get_data(as_text=True)
    assert 'name="channel" value="discord"' in page and 'name="channel" value="telegram"' not in page
    token = csrf_token(admin_client, "/admin/notifications")
    with admin_client.post("/admin/notifications/test", data={"csrf_token": token, "channel": "discord"}) as sent:
        assert sent.status_code == 303
    settle(admin_client.application)
    assert [call.path for call in api.calls] == ["/api/webhooks/112233/DiscordSecret1234"]


def test_a_failed_test_says_whether_it_will_be_retried(admin_client, query, api):
    save_chat(admin_client, SLACK)
    token = csrf_token(admin_client, "/admin/notifications")

    def test_slack() -> str:
        with admin_client.post("/admin/notifications/test", data={"csrf_token": token, "channel": "slack"}) as sent:
            assert sent.status_code == 303
        return admin_client.get("/admin/notifications").get_data(as_text=True)

    api.status = 500
    page = test_slack()
    assert "Slack test failed: slack HTTP 500. It will be retried." in page
    api.status = 404  # the webhook is gone for good: Slack's answer to a removed or revoked one
    page = test_slack()
    permanent = "Slack test failed: slack HTTP 404. It will not be retried: check the channel&#39;s address or token."
    assert permanent in page
    assert "It will be retried" not in page
    assert [(row.status, row.last_error) for row in chat_rows(query)] == [
        ("pending", "slack HTTP 500"),
        ("failed", "slack HTTP 404"),
    ]


def test_no_secret_is_logged_whatever_the_outcome(admin_client, api, caplog):
    caplog.set_level(logging.DEBUG)
    save_chat(admin_client, f"{SLACK}\n{DISCORD}")
    api.status = 403
    submit_inquiry(admin_client)
    assert "delivery" in caplog.text and "slack HTTP 403" in caplog.text
    assert "Secret1234" not in caplog.text
