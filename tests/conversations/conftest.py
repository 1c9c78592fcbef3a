"""Fixtures for conversations: inbound e-mail through ``POST /internal/mail`` and a real IMAP server.

The shared ones (databases, app, client, login) are in tests/conftest.py.
"""

from __future__ import annotations

from email.message import EmailMessage
from email.policy import SMTP

import pytest
from sqlalchemy import select

from app.core.db import get_session
from app.models import Admin, InquiryView
from tests.factories import add_inquiries

TOKEN = "inbound-token-0123456789"
INBOUND = "replies@mail.example.org"


@pytest.fixture
def app_config(app_config) -> dict:
    return {**app_config, "INBOUND_TOKEN": TOKEN, "INBOUND_ADDRESS": INBOUND, "MAIL_FROM": "sundown@mail.example.org"}


@pytest.fixture
def added(app):
    """``added(rows)``: insert inquiries in an app context of their own."""

    def add(rows):
        with app.app_context():
            return add_inquiries(get_session(), rows)

    return add


@pytest.fixture
def read_by_an_admin(app, clock):
    """``read_by_an_admin(inquiry_id)``: an admin has read it; ``read_by_an_admin.count()``: read marks left."""

    class Reads:
        def __call__(self, inquiry_id: int) -> None:
            with app.app_context():
                session = get_session()
                if session.get(Admin, 1) is None:
                    session.add(Admin(id=1, name="Reader", user_handle=b"r" * 64, created_at=clock()))
                    session.flush()
                session.add(InquiryView(inquiry_id=inquiry_id, admin_id=1, read_at=clock()))
                session.commit()

        def count(self) -> int:
            with app.app_context():
                return len(list(get_session().scalars(select(InquiryView).where(InquiryView.read_at.is_not(None)))))

    return Reads()


def mail(
    sender: str = "Ada <ada@example.com>",
    to: str = INBOUND,
    body: str = "Thanks, Monday suits me.",
    subject: str = "Re: Contact",
    **headers,
) -> bytes:
    """A plain e-mail as a person's client would send it."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = subject
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    message.set_content(body)
    return message.as_bytes(policy=SMTP)


def post(client, raw: bytes, content_type: str = "application/x-www-form-urlencoded", token: str = TOKEN):
    """``POST /internal/mail`` as a mail server's pipe through ``curl --data-binary @-`` sends it."""
    return client.post(
        "/internal/mail", data=raw, content_type=content_type, headers={"Authorization": f"Bearer {token}"}
    )
