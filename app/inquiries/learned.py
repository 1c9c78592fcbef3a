"""A small spam score that learns only from this site's admins: their "Spam" and "Not spam" moves.

No library and no third party: a naive Bayes over tokens, in the form Paul
Graham's "A Plan for Spam" made common, with Gary Robinson's correction for
rare tokens. About forty lines, so it is written here rather than installed.

* **Tokens** of an inquiry: its words (lowercased, NFKC; three characters or
  more, digits alone skipped), pairs of neighbouring characters in Japanese
  and Chinese (which have no spaces), the domains of its links, and whether
  it has many links. At most ``MAX_TOKENS`` distinct ones count.
* **What is stored** (``spam_tokens``): per token, a keyed hash of it
  (HMAC-SHA-256 with ``SECRET_KEY``, 24 hex digits) and two counts: how many
  inquiries holding it admins moved to spam, and how many out of spam. No
  word is stored in clear. The row ``*`` counts the moves themselves.
  Rotating the secret key starts the learning afresh.
* **The score** of an inquiry: for each known token the share of spam moves
  holding it, ``p = s/S ÷ (s/S + h/H)``, pulled towards 0.5 when seen
  rarely (Robinson: ``f = (0.5 + n·p) / (1 + n)``, ``n = s + h``); the
  ``INTERESTING`` tokens furthest from 0.5 combined as independent evidence
  (log-odds added). It says nothing (None) until admins made at least
  ``MIN_MOVES`` moves each way.
* **Senders**: the sender's address is a token of its own (``from:``),
  kept out of the score: a sender admins moved to spam more often than out
  of it is "marked" (``app.inquiries.spam`` weighs it apart). An erasure
  removes it (``forget_sender``).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from flask import current_app
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.core import dialect
from app.inquiries import signals
from app.models import Inquiry, SpamToken

TOTAL = "*"  # the row counting the moves
MAX_TOKENS = 300
INTERESTING = 15
MIN_MOVES = 5
MANY_LINKS = 3
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]+")


def tokens(text: str) -> set[str]:
    """The tokens of ``text`` (see the module), at most ``MAX_TOKENS``."""
    folded = unicodedata.normalize("NFKC", text).lower()
    found = {
        word
        for word in signals.WORD.findall(folded)
        if len(word) >= 3 and not word.isdigit() and not CJK.fullmatch(word)
    }
    for run in CJK.findall(folded):
        found.update(run[i : i + 2] for i in range(max(len(run) - 1, 1)))
    addresses = signals.links(folded)
    found.update("link:" + signals.domain_of(address) for address in addresses)
    if len(addresses) >= MANY_LINKS:
        found.add("links:many")
    return set(sorted(found)[:MAX_TOKENS])


def _key(token: str) -> str:
    secret = current_app.config["SECRET_KEY"].encode()
    return hmac.new(secret, token.encode(), hashlib.sha256).hexdigest()[:24]


def _sender(address: str) -> str:
    return _key("from:" + address.strip().casefold())


@dataclass(frozen=True)
class Judgement:
    """What admins' moves say of one inquiry: whether its sender was marked, and the probability its text is spam
    (None until they made enough moves)."""

    marked_sender: bool
    probability: float | None


def judge(session: Session, text: str, sender: str) -> Judgement:
    """``marked_sender`` and ``score`` in as few reads as they need: the sender's row and the count of moves in
    one statement, the text's tokens (tokenised, keyed and read) only once admins have taught enough."""
    sender_key = _sender(sender) if sender else None
    wanted = [TOTAL, sender_key] if sender_key else [TOTAL]
    rows = {row.token: row for row in session.scalars(select(SpamToken).where(SpamToken.token.in_(wanted)))}
    marked = sender_key in rows and rows[sender_key].spam > rows[sender_key].ham
    total = rows.get(TOTAL)
    if total is None or min(total.spam, total.ham) < MIN_MOVES:
        return Judgement(marked, None)
    return Judgement(marked, score(session, text))


def score(session: Session, text: str) -> float | None:
    """The probability that ``text`` is spam as admins taught it; None until they made enough moves."""
    keys = {_key(token) for token in tokens(text)}
    counts = {
        row.token: (row.spam, row.ham)
        for row in session.scalars(select(SpamToken).where(SpamToken.token.in_([*keys, TOTAL])))
    }
    spam_moves, person_moves = counts.pop(TOTAL, (0, 0))
    if min(spam_moves, person_moves) < MIN_MOVES:
        return None
    evidence = sorted(
        (_robinson(s, h, spam_moves, person_moves) for s, h in counts.values()),
        key=lambda f: abs(f - 0.5),
        reverse=True,
    )[:INTERESTING]
    log_odds = sum(math.log(f / (1 - f)) for f in evidence)
    return 1 / (1 + math.exp(-max(min(log_odds, 50), -50)))


def _robinson(spam: int, ham: int, spam_moves: int, person_moves: int) -> float:
    in_spam, in_person = spam / spam_moves, ham / person_moves
    p = in_spam / (in_spam + in_person) if in_spam + in_person else 0.5
    n = spam + ham
    return min(max((0.5 + n * p) / (1 + n), 0.01), 0.99)


def marked_sender(session: Session, address: str) -> bool:
    """Whether admins moved this sender's inquiries to spam more often than out of it."""
    if not address:
        return False
    row = session.get(SpamToken, _sender(address))
    return row is not None and row.spam > row.ham


def train(session: Session, inquiries: Iterable[tuple[str, str]], as_spam: bool) -> None:
    """Count an admin's move of ``inquiries`` (``(text, sender address)`` each) to spam or out of it, in
    the caller's transaction."""
    counts: Counter[str] = Counter()
    moves = 0
    for text, address in inquiries:
        moves += 1
        counts.update({_key(token) for token in tokens(text)})
        if address:
            counts[_sender(address)] += 1
    if not moves:
        return
    counts[TOTAL] = moves
    column = "spam" if as_spam else "ham"
    statement = dialect.upsert(session, SpamToken.__table__)
    statement = statement.values(
        [{"token": key, "spam": 0, "ham": 0, column: count} for key, count in sorted(counts.items())]
    )
    session.execute(
        statement.on_conflict_do_update(
            index_elements=["token"],
            set_={column: getattr(SpamToken.__table__.c, column) + getattr(statement.excluded, column)},
        )
    )


def train_inquiries(session: Session, inquiry_ids: list[int], as_spam: bool) -> None:
    """Count an admin's move of the inquiries ``inquiry_ids`` (``train``), in the caller's transaction."""
    rows = session.execute(
        select(Inquiry.name, Inquiry.message, Inquiry.email, Inquiry.answers).where(Inquiry.id.in_(inquiry_ids))
    ).all()
    train(session, [(_text(row.name, row.message, row.answers), row.email) for row in rows], as_spam)


def _text(name: str, message: str, answers: list | None) -> str:
    """An inquiry's words as the intake's checks read them (``app.inquiries.submit``)."""
    others = [entry["value"] for entry in answers or () if isinstance(entry.get("value"), str)]
    return "\n".join([message, *dict.fromkeys(part for part in [name, *others] if part and part not in message)])


def forget_sender(session: Session, address: str) -> None:
    """Remove what admins' moves recorded of this sender (an erasure), in the caller's transaction."""
    session.execute(delete(SpamToken).where(SpamToken.token == _sender(address)))
