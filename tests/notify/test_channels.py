"""The channels: one registry that delivery, health, metrics and the Notifications page iterate; an outcome
that is permanent fails a delivery at once.

Every test runs on SQLite and PostgreSQL against the real receivers of conftest.py.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import timedelta

import pytest
from sqlalchemy import select

from app import notify
from app.core import db, metrics
from app.models import Delivery, DeliveryChannel
from app.notify import channels
from app.outbox import deliver
from app.outbox.store import Outcome
from tests.factories import add_inquiries, aged_inquiries
from tests.helpers import csrf_token, settle, submit_inquiry
from tests.notify.steps import DELIVERIES, request_after, statuses


class Pager(AbstractContextManager):
    """A toy receiver's connection: it counts how often it is opened."""

    opened = 0

    def __init__(self) -> None:
        Pager.opened += 1

    def __exit__(self, *_exc) -> None:
        return None


class Toy:
    """A channel of the test's own, configured when the site has recipients: it keeps what it is given."""

    name = "toy"
    label = "Toy pager"

    def __init__(self) -> None:
        self.sent: list[int | None] = []
        self.answer = Outcome()

    def configured(self, settings) -> bool:
        return bool(settings.emails)

    def send(self, notice, settings, now, batch) -> Outcome:
        batch.connection(self.name, Pager)
        self.sent.append(notice.inquiry.id if notice.inquiry is not None else None)
        return self.answer


@pytest.fixture
def toy(monkeypatch) -> Toy:
    """A third channel, added as a new one is: a line in the registry."""
    channel = Toy()
    monkeypatch.setattr(channels, "CHANNELS", (*channels.CHANNELS, channel))
    Pager.opened = 0
    return channel


@pytest.fixture
def app(app_config, make_app, toy):
    """The app, built once the registry holds the toy channel."""
    return make_app(app_config)


def test_a_channel_added_to_the_registry_is_enqueued_sent_counted_and_shown(admin_client, query, mail, receiver, toy):
    before = metrics.DELIVERIES.labels("toy", "ok")._value.get()
    assert submit_inquiry(admin_client) == 201
    [inquiry_id] = {row.inquiry_id for row in query(DELIVERIES)}
    assert statuses(query) == [("email", "done", 1), ("webhook", "done", 1), ("toy", "done", 1)]
    assert toy.sent == [inquiry_id] and len(mail.messages) == 1 and len(receiver.received) == 1
    assert metrics.DELIVERIES.labels("toy", "ok")._value.get() == before + 1
    page = admin_client.get("/admin/notifications").get_data(as_text=True)
    # a row of the health table and its Test button, the delivery log's tab and the channel of its delivery
    assert page.count("Toy pager") == 4
    assert '<th scope="row">Toy pager</th>' in page and '<td data-label="Channel">Toy pager</td>' in page
    assert '<th scope="row">Toy pager</th>' in admin_client.get("/admin/cleanup").get_data(as_text=True)


def test_the_test_notification_goes_on_every_registered_channel(admin_client, query, mail, receiver, toy):
    with admin_client.post(
        "/admin/notifications/test", data={"csrf_token": csrf_token(admin_client, "/admin/notifications")}
    ) as response:
        assert response.status_code == 303
    page = admin_client.get("/admin/notifications").get_data(as_text=True)
    assert "Toy pager test delivered." in page and "E-mail test delivered." in page
    assert toy.sent == [None]
    assert [(row.channel, row.kind) for row in query(DELIVERIES)] == [
        ("email", "test"),
        ("webhook", "test"),
        ("toy", "test"),
    ]


def test_a_batch_opens_each_channels_connection_once(app, db_session, clock, query, mail, receiver, toy):
    ids = add_inquiries(db_session, aged_inquiries(clock, [0.01] * 4))
    with app.app_context():
        with db.transaction(write=True) as session:
            assert notify.enqueue_inquiries(session, ids) == 12
        assert deliver.deliver_due().counts == {"done": 12, "pending": 0, "failed": 0}
    assert sorted(toy.sent) == ids
    assert (Pager.opened, mail.connections, receiver.connections) == (1, 1, 1)


def test_a_permanent_outcome_fails_the_delivery_at_once(client, clock, query, mail, receiver, toy):
    toy.answer = Outcome("toy refused for good", permanent=True)
    submit_inquiry(client)
    [row] = query(select(Delivery).where(Delivery.channel == "toy"))
    assert (row.status, row.attempts, row.last_error) == ("failed", 1, "toy refused for good")
    assert row.finished_at == clock()
    clock.advance(hours=2)
    request_after(client)
    assert toy.sent == [row.inquiry_id]  # never tried again


def test_a_webhook_answered_410_gone_is_failed_at_once_and_one_answered_404_is_retried(client, clock, query, receiver):
    receiver.status = 410
    submit_inquiry(client)
    receiver.status = 404
    submit_inquiry(client)
    hooks = query(select(Delivery).where(Delivery.channel == DeliveryChannel.WEBHOOK).order_by(Delivery.id))
    assert [(row.status, row.attempts, row.last_error) for row in hooks] == [
        ("failed", 1, "webhook HTTP 410"),
        ("pending", 1, "webhook HTTP 404"),
    ]
    receiver.status = 204
    clock.advance(hours=1)
    request_after(client)
    settle(client.application)
    assert [
        row.status for row in query(select(Delivery).where(Delivery.channel == "webhook").order_by(Delivery.id))
    ] == ["failed", "done"]
    assert len(receiver.received) == 3  # the gone one once, the other twice
    assert clock() - hooks[0].finished_at == timedelta(hours=1)
