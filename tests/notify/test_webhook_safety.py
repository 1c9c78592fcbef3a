"""Webhooks go only where they should and never hang (app/notify/channels/webhook.py): embedded IPv4, a deadline."""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from datetime import UTC, datetime

import pytest

from app.notify.channels import webhook

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


@pytest.fixture
def app_config(app_config):
    return {**app_config, "WEBHOOK_ALLOW_PRIVATE": 1}


@pytest.fixture
def trickler():
    """A receiver on loopback that answers one byte every 0.2 s, for as long as the sender listens."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve():
        connection, _ = server.accept()
        with connection:
            connection.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"x" * 1000:
                if stop.is_set():
                    return
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(0.2)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/hook"
    stop.set()
    thread.join(timeout=5)
    server.close()


def test_a_trickling_receiver_is_cut_off_at_the_deadline(app, trickler, monkeypatch):
    monkeypatch.setattr(webhook, "DEADLINE", 1.0)  # each read gets a byte within TIMEOUT: only a deadline ends it
    started = time.monotonic()
    with app.app_context(), webhook.Poster(trickler, SECRET) as poster:
        outcome = poster.send("msg_1", {"type": "test"}, datetime.now(UTC))
    took = time.monotonic() - started
    assert outcome.error == "webhook timed out"
    assert took < 3, took  # without the deadline: the whole trickle, over three minutes


@pytest.mark.parametrize(
    "address, public",
    [
        ("8.8.8.8", True),
        ("2606:4700::1", True),
        ("64:ff9b::808:808", True),
        ("2002:808:808::1", True),
        ("10.0.0.1", False),
        ("fd00::1", False),
        ("::ffff:127.0.0.1", False),
        ("::127.0.0.1", False),
        ("64:ff9b::a00:1", False),
        ("64:ff9b:1::a00:1", False),
        ("2002:7f00:1::1", False),
        ("2002:c0a8:101::1", False),
    ],
)
def test_an_ipv6_address_that_carries_a_private_ipv4_one_is_private(address, public):
    assert webhook.is_public(ipaddress.ip_address(address)) is public
