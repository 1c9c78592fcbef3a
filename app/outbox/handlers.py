"""Who sends each kind of delivery: the outbox's clients register a handler per kind, at init.

``app.notify`` registers the notifications (``inquiry``, ``capped``, ``test``)
and ``app.replies`` the e-mails to the people who wrote (``reply``, ``ack``);
the outbox imports neither. The send loop (``app.outbox.deliver``) reads a
batch's rows, asks each handler to ``prepare`` its own rows in the batch's
one read transaction, then hands it each row in turn with the ``Batch``:
its lease and its connections, opened at the first send that needs one and
shared by every handler (one SMTP connection for a batch's notifications
and replies alike).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, ExitStack
from datetime import datetime
from typing import Any, Protocol, TypeVar

from flask import Flask
from sqlalchemy.orm import Session

from app.models import Delivery
from app.outbox import state
from app.outbox.store import Attempt, Outcome

Opened = TypeVar("Opened", bound=AbstractContextManager)


class Batch:
    """A batch being sent: the lease it is held under, and its connections, each closed at the end."""

    def __init__(self, lease_until: datetime) -> None:
        self.lease_until = lease_until
        self._stack = ExitStack()
        self._open: dict[Any, Any] = {}

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, *_exc) -> None:
        self._stack.close()

    def connection(self, key: Any, opener: Callable[[], Opened]) -> Opened:
        """The batch's connection named ``key``, opened with ``opener()`` the first time it is asked for."""
        if key not in self._open:
            self._open[key] = self._stack.enter_context(opener())
        return self._open[key]


class Handler(Protocol):
    """What a client registers for its kinds of delivery."""

    def prepare(self, session: Session, rows: list[Delivery]) -> dict[int, Any]:
        """What sending each of ``rows`` needs, by delivery id, read in the batch's one read transaction
        (a few queries for the whole batch); a row left out (what it carries is gone) is not sent."""

    def send(self, item: Any, batch: Batch) -> Outcome | list[Attempt]:
        """One attempt at the delivery ``item`` was prepared for: its outcome, recorded with the batch's
        others at the end; or the attempts already made for it and rows sent along with it (a digest),
        each under its own lease, which the loop records at once."""

    def finished(self, session: Session, finished: list[tuple[Delivery, str, datetime]]) -> None:
        """In the transaction that records them: keep what the client keeps of its rows' attempts
        ``(row, its new status, when)``."""


def register(app: Flask, kinds: Iterable[str], handler: Handler) -> None:
    """Send the deliveries of ``kinds`` with ``handler`` in ``app``."""
    for kind in kinds:
        state.of(app).handlers[kind] = handler


def of(kind: str) -> Handler | None:
    """The current app's handler of ``kind``, or None when no client registered it."""
    return state.current().handlers.get(kind)
