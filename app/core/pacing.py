"""How long a background writer pauses between its write transactions, so that live writers go first.

SQLite has one write lock. The cleanup's batches and the purge of the search
index after a run take it for tens of milliseconds at a time, and live
writers (submissions, polling for it every millisecond) get in between.
Any fixed pause is right at one rate only: at 40 submissions a second the
writers that queued behind a transaction are served within a few
milliseconds, but at 100 their own transactions already hold the lock
about two thirds of the time, so behind every background transaction a
queue builds that the pause does not drain, and it grows for the whole run
(a p99 of 0.9 s and waits of 1.7 s at 150,000 expired rows with a pause as
long as each step; docs/benchmarks.md).

So the pause follows the queue. A background transaction takes the lock
as live writers do, polling every millisecond (``db.transaction``), so the
time it waited is about the time live writers still had queued when the
last pause ended (SQLite's stock busy handler, which sleeps 1, 2, 5, 10 ...
100 ms between tries, would measure its own sleeps: at 100 submissions a
second it always found the lock taken at its next try, and the pauses it
learned were several times the queue's). That wait is added to the pauses
that follow, and each transaction lets that part shrink by ``DECAY``: the
pause settles where live writers have about drained their queue when it
ends, the background writer takes the time they leave over, and at a low
rate it pauses as little as its fixed share (``ratio``) says. On PostgreSQL a background transaction locks
only rows live writers never touch: nothing waits, and the fixed share is
all there is.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import Connection
from sqlalchemy.exc import OperationalError

DECAY = 0.5  # each transaction keeps this share of the pause learned from earlier waits
MOST = 1.0  # seconds: the longest pause, so a run still moves on (slowly) under a flood


@dataclass
class Pacer:
    """The pauses of one background writer: ``ratio`` of each transaction's duration, at least ``least``
    seconds, plus what waits for the lock taught (``learned``), at most ``MOST`` seconds in all."""

    ratio: float = 0.0
    least: float = 0.0
    learned: float = 0.0
    _held_since: float = 0.0

    @contextmanager
    def transaction(self, connection: Connection) -> Iterator[None]:
        """``connection.begin()`` (a writer's: on SQLite the write lock, polled for), timed: its wait for
        the lock lengthens the next pauses. Refused the lock for a whole busy timeout, the pauses learn the
        longest."""
        asked = time.monotonic()
        try:
            transaction = connection.begin()
        except OperationalError:
            self.learned = MOST
            raise
        self._held_since = time.monotonic()
        self.learned = min(MOST, self.learned * DECAY + (self._held_since - asked))
        with transaction:
            yield

    def held(self) -> float:
        """Seconds since the last transaction got the lock (its duration, once it has ended)."""
        return time.monotonic() - self._held_since

    def pause(self) -> None:
        """Sleep after the last transaction (and whatever followed it until now)."""
        time.sleep(min(MOST, max(self.least, self.held() * self.ratio + self.learned)))
