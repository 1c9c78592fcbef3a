"""What an inquiry's own text says about it: links, markup, and the words and domains admins listed.

Pure functions over the text, plus the list admins edit on the Spam page
(one word, phrase or domain a line, in the ``preferences`` row ``spam_words``: never in
``settings``, whose cleanup claim a request that finds no cleanup due must not touch).
``app.inquiries.spam`` weighs what they find; nothing here decides.

* **Links**: ``http(s)://`` and ``www.`` addresses; a person may send one or
  two, link spam sends many.
* **Markup**: HTML anchors and tags, BBCode ``[url]`` and Markdown links:
  people typing into a form do not write them, spam scripts written for
  forums and comment boxes do.
* **Listed words and domains**: a line with a dot and no space is a domain,
  matching a link's host or the sender's address's domain (and their
  subdomains); any other line is a word or phrase, matched case-insensitively
  on word boundaries (in scripts without spaces between words, anywhere).
"""

from __future__ import annotations

import re
import unicodedata
from datetime import timedelta
from urllib.parse import urlsplit

from flask import current_app
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.core import clock, dialect
from app.models import Preference

WORDS_KEY = "spam_words"  # the preferences row holding the list
MAX_ENTRIES, MAX_ENTRY = 500, 100  # lines kept, characters a line

LINK = re.compile(r"(?i)\b(?:https?://|www\.)[^\s<>\"'\]\[)]+")
MARKUP = re.compile(
    r"(?i)<\s*(?:a\s|/a>|b>|strong>|script|img\s|iframe|div|span|p>)|\[/?(?:url|link|img)[\]=]"
    r"|\]\(https?://"
)
WORD = re.compile(r"\w+", re.UNICODE)


def links(text: str) -> list[str]:
    """The web addresses in ``text``, in order."""
    return LINK.findall(text)


def has_markup(text: str) -> bool:
    """Whether ``text`` holds HTML tags, BBCode or Markdown links."""
    return MARKUP.search(text) is not None


def domain_of(address: str) -> str:
    """The host of a link (``www.`` links included) or the domain of an e-mail address, lowercased."""
    if "@" in address and "://" not in address:
        return address.rpartition("@")[2].strip().lower().rstrip(".")
    host = urlsplit(address if "://" in address else f"http://{address}").hostname or ""
    return host.lower().rstrip(".")


def parse_words(raw: str) -> list[str]:
    """The admin's list as entered: one entry a line, trimmed, lowercased (NFKC), blanks and repeats dropped."""
    entries: list[str] = []
    for line in raw.splitlines():
        entry = unicodedata.normalize("NFKC", line).strip().lower()[:MAX_ENTRY]
        if entry and entry not in entries:
            entries.append(entry)
    return entries[:MAX_ENTRIES]


def listed_match(text: str, sender: str, entries: list[str]) -> str | None:
    """The first entry of the list that ``text`` or the ``sender``'s address matches (see the module)."""
    if not entries:
        return None
    folded = unicodedata.normalize("NFKC", text).lower()
    domains = {domain_of(link) for link in links(folded)} | ({domain_of(sender)} if sender else set())
    words = set(WORD.findall(folded))
    for entry in entries:
        if _is_domain(entry):
            if any(domain == entry or domain.endswith("." + entry) for domain in domains):
                return entry
        elif _word_found(entry, folded, words):
            return entry
    return None


def _is_domain(entry: str) -> bool:
    return "." in entry and " " not in entry and not entry.endswith(".")


def _word_found(entry: str, folded: str, words: set[str]) -> bool:
    if entry in words:
        return True
    if not entry.isascii():  # Japanese or Chinese: no spaces to find word boundaries by
        return entry in folded
    return " " in entry and re.search(rf"\b{re.escape(entry)}\b", folded) is not None


def stored_words(session: Session) -> list[str]:
    """The list admins edited (empty when they never did)."""
    raw = session.scalar(select(Preference.value).where(Preference.key == WORDS_KEY))
    return parse_words(raw or "")


# Every submission asks for the list: like the notification settings, a process reads it at most once
# this often (a change saved by another process applies here this much later; by this one, at once).
FRESH_FOR = timedelta(seconds=1)


def words_for_intake(session: Session) -> list[str]:
    """``stored_words``, read again once ``FRESH_FOR`` has passed in this process."""
    memory = current_app.extensions.setdefault("spam_words", {})
    now = clock.now()
    cached = memory.get("words")
    if cached is None or not now - FRESH_FOR <= cached[0] <= now:
        cached = memory["words"] = (now, stored_words(session))
    return cached[1]


def save_words(session: Session, entries: list[str]) -> None:
    """Store the list (``parse_words``'s output), in the caller's transaction."""
    value = "\n".join(entries)
    current_app.extensions.get("spam_words", {}).pop("words", None)
    statement = dialect.upsert(session, Preference.__table__).values(key=WORDS_KEY, value=value)
    session.execute(statement.on_conflict_do_update(index_elements=["key"], set_={"value": value}))
