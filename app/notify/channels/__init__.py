"""The channels notifications go out on: one module each, one protocol, one registry.

``CHANNELS`` is the one list: which channels a new inquiry is enqueued on
(``in_force``), how a delivery is sent (``app.notify.sending``), the health
figures (``app.notify.health``), the metrics' labels and the Notifications
page all iterate it. A new channel is a module with a ``CHANNEL`` (its
stored code beside the others in ``app.models.DeliveryChannel``) and a line
here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from flask_babel import LazyString

from app.models import DeliveryChannel
from app.notify.channels import discord, email, matrix, ntfy, slack, teams, telegram, webhook
from app.notify.message import Notice
from app.notify.settings import Notifications
from app.outbox.handlers import Batch
from app.outbox.store import Outcome


class Channel(Protocol):
    """A way to notify admins of an inquiry."""

    name: DeliveryChannel  # ``Delivery.channel``
    label: LazyString | str  # what the admin pages call it (translated when shown)

    def configured(self, settings: Notifications) -> bool:
        """Whether ``settings`` (an inquiry's form's, or the site's) let this channel send."""

    def send(self, notice: Notice, settings: Notifications, now: datetime, batch: Batch) -> Outcome:
        """One attempt at ``notice`` under ``settings``, over the ``batch``'s connection (``Batch.connection``),
        opened at its first send; an outcome that is ``permanent`` stops the retries."""


CHANNELS: tuple[Channel, ...] = (
    email.CHANNEL,
    webhook.CHANNEL,
    slack.CHANNEL,
    discord.CHANNEL,
    teams.CHANNEL,
    telegram.CHANNEL,
    matrix.CHANNEL,
    ntfy.CHANNEL,
)


def in_force(settings: Notifications) -> list[str]:
    """The names of the channels a new inquiry under ``settings`` is sent on."""
    return [channel.name for channel in CHANNELS if channel.configured(settings)]


def named(name: str) -> Channel | None:
    """The channel stored as ``name``, or None (one no longer registered)."""
    return next((channel for channel in CHANNELS if channel.name == name), None)


def label_of(name: str) -> LazyString | str:
    """What the admin pages call the channel stored as ``name`` (the code itself for one no longer registered)."""
    channel = named(name)
    return channel.label if channel is not None else name
