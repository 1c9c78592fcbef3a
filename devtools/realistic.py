"""Realistic inquiry rows for benchmarks and load tests, made fast and reproducibly.

Messages of 200–5000 characters, real-looking names, e-mail addresses and
user agents; about 5% of expired rows on legal hold, scattered among them;
about 10% of rows out of ``created_at`` order (late imports, clock skew).
Benchmarks on ~150-byte rows hide what deleting real messages costs
(SQLite's ``SECURE_DELETE`` zeroes every freed byte).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta

FIRST = [
    "Ada",
    "Grace",
    "Alan",
    "Hedy",
    "Linus",
    "Margaret",
    "Yuki",
    "Wei",
    "Amara",
    "Diego",
    "Priya",
    "Sven",
    "Fatima",
    "Kenji",
    "Chloé",
    "Mateo",
    "Olga",
    "Tariq",
    "Zanele",
    "Ines",
]
LAST = [
    "Lovelace",
    "Hopper",
    "Turing",
    "Lamarr",
    "Torvalds",
    "Hamilton",
    "Tanaka",
    "Zhang",
    "Okafor",
    "García",
    "Sharma",
    "Lindqvist",
    "Haddad",
    "Sato",
    "Dubois",
    "Rossi",
    "Ivanova",
    "Khan",
    "Dlamini",
]
DOMAINS = ["example.com", "example.org", "mail.example.net", "example.co.uk", "example.jp"]
AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605",
    "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
    "Mozilla/5.0 (Linux; Android 15; Pixel 9) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Mobile Safari/537",
]
WORDS = [
    "hello",
    "we",
    "would",
    "like",
    "to",
    "ask",
    "about",
    "your",
    "opening",
    "hours",
    "delivery",
    "invoice",
    "order",
    "number",
    "refund",
    "please",
    "could",
    "you",
    "send",
    "more",
    "information",
    "regarding",
    "the",
    "offer",
    "thank",
    "you",
    "kind",
    "regards",
    "best",
    "appointment",
    "next",
    "week",
    "tuesday",
    "morning",
    "contract",
    "renewal",
    "price",
    "quote",
    "for",
    "twelve",
    "units",
]

MIN_MESSAGE, MAX_MESSAGE = 200, 5000
HOLD_SHARE = 0.05
OUT_OF_ORDER_SHARE = 0.10


class Rows:
    """A reproducible source of realistic inquiry rows (``seed`` fixes every choice)."""

    def __init__(self, seed: int = 1):
        self.random = random.Random(seed)
        self.corpus = " ".join(self.random.choice(WORDS) for _ in range(400_000))

    def message(self) -> str:
        """200–5000 characters of plausible text, with line breaks, starting at a word.

        Only the first letter is raised (``str.capitalize`` would lower the
        whole text and cost more than the rest of the row together).
        """
        length = self.random.randint(MIN_MESSAGE, MAX_MESSAGE)
        start = self.corpus.find(" ", self.random.randrange(len(self.corpus) - length - 20)) + 1
        text = self.corpus[start : start + length].replace(" please ", "\nPlease ")
        return text[0].upper() + text[1:]

    def agent(self) -> str:
        """A browser's user-agent string."""
        return self.random.choice(AGENTS)

    def submission(self) -> dict[str, str]:
        """What a visitor sends: a name, an e-mail address and a message (the API's JSON fields)."""
        name, email = self.person()
        return {"name": name, "email": email, "message": self.message()}

    def person(self) -> tuple[str, str]:
        """A name and a matching e-mail address."""
        first, last = self.random.choice(FIRST), self.random.choice(LAST)
        number = self.random.randrange(1000)
        return f"{first} {last}", f"{first.lower()}.{number}@{self.random.choice(DOMAINS)}".encode(
            "ascii", "ignore"
        ).decode()

    def inquiries(self, count: int, oldest: datetime, newest: datetime, holds: bool = True) -> Iterator[dict]:
        """``count`` rows spread from ``oldest`` to ``newest``; mostly in order, 10% anywhere in the span."""
        span = (newest - oldest) / max(count, 1)
        for index in range(count):
            if self.random.random() < OUT_OF_ORDER_SHARE:
                created = oldest + (newest - oldest) * self.random.random()
            else:
                created = oldest + span * index
            name, email = self.person()
            yield {
                "name": name,
                "email": email,
                "message": self.message(),
                "user_agent": self.agent(),
                "created_at": created,
                "legal_hold": holds and self.random.random() < HOLD_SHARE,
                "hold_reason": None,
                "hold_by": None,
                "held_at": None,
            }


def batches(rows: Iterator[dict], size: int = 5000) -> Iterator[list[dict]]:
    """``rows`` in lists of ``size``, for executemany."""
    batch: list[dict] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def expired_span(now: datetime) -> tuple[datetime, datetime]:
    """A span of ``created_at`` past the default retention (400 to 200 days old)."""
    return now - timedelta(days=400), now - timedelta(days=200)
