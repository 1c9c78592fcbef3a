"""Per-form notifications: a form's own recipients and webhook.

Every test runs on SQLite and PostgreSQL against the real receivers of conftest.py.
"""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.models import Delivery
from devtools.receivers import WebhookReceiver
from tests.helpers import csrf_token, editor_post, settle, solution, submit_inquiry
from tests.notify.conftest import ADMIN_ADDRESS, SECRET

# --- Per form: its own recipients and webhook --------------------------------------


JOB_FIELDS = [
    {"type": "text", "key": "name", "label-en": "Name", "required": "1"},
    {"type": "email", "key": "email", "label-en": "E-mail", "required": "1"},
    {"type": "radio", "key": "role", "label-en": "Role", "choices-en": "dev | Developer\nops | Operator"},
    {"type": "textarea", "key": "letter", "label-en": "Cover letter"},
]


@pytest.fixture
def jobs_receiver():
    hook = WebhookReceiver(SECRET).start()
    yield hook
    hook.stop()


def make_jobs_form(admin_client, jobs_receiver, **settings) -> None:
    data = editor_post(
        admin_client,
        "/admin/forms/new",
        JOB_FIELDS,
        slug="jobs",
        **{"title-en": "Jobs", "notify_emails": "jobs@example.org", "webhook_url": jobs_receiver.url, **settings},
    )
    assert admin_client.post("/admin/forms/new", data=data).status_code == 303


def include_content(admin_client, digest_minutes: str = "0") -> None:
    admin_client.post(
        "/admin/notifications",
        data={
            "csrf_token": csrf_token(admin_client, "/admin/notifications"),
            "include_content": "1",
            "digest_minutes": digest_minutes,
        },
    )


def test_a_form_with_its_own_recipients_and_webhook_notifies_them_and_names_itself(
    admin_client, mail, receiver, jobs_receiver
):
    include_content(admin_client)
    make_jobs_form(admin_client, jobs_receiver)
    answers = {"name": "Ines", "email": "ines@example.com", "role": "ops", "letter": "Hello"}
    with admin_client.post("/api/forms/jobs/inquiries", json={**answers, "altcha": solution(admin_client)}) as sent:
        assert sent.status_code == 201
    settle(admin_client.application)
    [message] = mail.messages
    assert message["To"] == "jobs@example.org" and "Form: jobs" in message.get_payload()
    assert "Role: Operator" in message.get_payload() and "Cover letter: Hello" in message.get_payload()
    assert receiver.received == []
    [hook] = jobs_receiver.received
    assert hook.verified and hook.payload["version"] == 3
    assert hook.payload["data"]["form"] == "jobs" and hook.payload["data"]["answers"] == answers
    submit_inquiry(admin_client)  # the site's own form: the site's recipients and webhook
    assert mail.messages[-1]["To"] == ADMIN_ADDRESS and receiver.received[-1].payload["data"]["form"] == "contact"


def test_a_forms_own_recipients_get_each_inquiry_at_once_while_the_sites_wait_for_the_digest(
    admin_client, mail, jobs_receiver, query
):
    include_content(admin_client, digest_minutes="10")
    make_jobs_form(admin_client, jobs_receiver)
    submit_inquiry(admin_client)
    answers = {"name": "Ines", "email": "ines@example.com", "role": "dev", "letter": "Hi"}
    with admin_client.post("/api/forms/jobs/inquiries", json={**answers, "altcha": solution(admin_client)}):
        pass
    settle(admin_client.application)
    assert [message["To"] for message in mail.messages] == ["jobs@example.org"]
    pending = query(select(Delivery).where(Delivery.channel == "email", Delivery.status == "pending"))
    assert len(pending) == 1  # the Contact inquiry's e-mail waits for its digest window
