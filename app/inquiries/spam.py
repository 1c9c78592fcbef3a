"""Spam defence with no third party: several signals weighed, the proof-of-work one of them.

This module judges; it never stores. Its verdict on a submission is a
discard (the honeypot, ``website`` or its alias ``_gotcha``, was filled in:
nothing is stored) or a list of checks, each with a weight (``WEIGHTS``):
a submission whose weights add up to ``SPAM_SCORE`` or more goes to the
spam folder, and the checks that counted against it are stored with it
(``Inquiry.spam_checks``), so an admin sees why. Nothing a person typed is
refused for looking suspicious, and no single check short of the time
trap decides: a person without JavaScript (no solution, +1) writing from a
listed site or Sundown's own page (-1) reaches the inbox.

* **Request checks** (``judge_form``, ``judge_api``; no database): the
  proof-of-work (solved -2; missing +1; malformed, invalid or expired +2;
  replayed +3, found by the store), the time trap where a render time
  exists (too fast +5, a form over a day old +1), the site it came from
  (Sundown's own page with its session token, or a listed site: -1; the
  ``Origin`` header is easy to forge, so this is worth little alone).
* **Content checks** (``weigh``, reads only): links (+1, +2 from two, +3
  from ``MANY_LINKS``), markup (+2), a word or domain admins listed (+3,
  ``app.inquiries.signals``), a sender admins moved to spam (+3), and the
  score learned from admins' moves (``app.inquiries.learned``: +2 above
  0.9, +3 above 0.99, -1 below 0.1).

The figures behind the weights: ``bench/spamset.py`` (docs/spam.md).

* **Proof-of-work.** ``issue()`` makes an ALTCHA v2 challenge with the
  ``altcha`` package (``create_challenge``, its current default format):
  PBKDF2/SHA-256 at ``COST`` iterations per try, in its deterministic mode,
  so the browser must find a counter drawn from ``app.core.clock.random_bytes``
  in ``0..POW_MAX_NUMBER``, and with a key signature, so a solution is
  checked with an HMAC instead of re-deriving the key. The HMAC keys are
  derived from ``SECRET_KEY``. The browser solves it in a Web Worker with
  SubtleCrypto (``static/pow-worker.js``) and sends it in the field
  ``altcha``.
* **Verification.** ``check_solution()`` does what the package's
  ``verify_solution`` does with a key signature, without the package: one
  JSON decode, the canonical JSON of the parameters from a format string
  (``issue()`` signs one shape; anything that could not be that shape is
  refused before any HMAC, see ``_signed_form``), the challenge's signature
  and then the derived key's, both HMAC-SHA256 compared in constant time.
  The package parses into classes and serialises the canonical JSON in pure
  Python, which made it most of the proof-of-work's cost per submission.
  ``tests/inquiries/test_spam_verify.py`` holds it to the package: before the expiry
  (which the package does not see), a payload verifies here exactly when
  ``verify_solution`` accepts it.
* **Expiry.** The package checks ``parameters.expiresAt`` against the wall
  clock (``time.time()``), which the app's injected clock cannot reach, so
  the expiry (``POW_TTL`` seconds from ``app.core.clock.now()``) is signed into
  ``parameters.data.expires`` instead and checked here, after the signature.
* **Once only.** A verified solution counts once: the store inserts the
  challenge's expiry and signature into ``used_challenges`` with the inquiry
  (``app.inquiries.store``); of any number of racing requests exactly one
  inserts it, and the others are filed as spam (``Reason.REPLAYED``). The row
  is kept until the challenge expires (a cleanup target).
* **Time trap.** The form carries its render time, signed (``form_token()``).
* **Honeypot.** A field no person sees (``HONEYPOT``); filled in, the
  submission is discarded (it counts against the client's own rate limits
  only, ``app.inquiries.submit``).
"""

from __future__ import annotations

import binascii
import hashlib
import hmac
import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from functools import lru_cache
from typing import Any

import altcha
from flask import current_app
from itsdangerous import BadSignature, Signer
from sqlalchemy.orm import Session

from app.core import clock
from app.inquiries import learned, signals
from app.models import InquiryStatus

log = logging.getLogger(__name__)

ALGORITHM = "PBKDF2/SHA-256"
COST = 100  # PBKDF2 iterations per try: still mostly fixed overhead in the browser (docs/spam.md)
FIELD = "altcha"  # the form field and JSON key holding the solution
RENDERED_FIELD = "rendered"  # the form field holding the signed render time
HONEYPOT = "website"  # the field people do not see and leave empty (the form pages and embed.js hide it)
HONEYPOTS = (HONEYPOT, "_gotcha")  # and Formspree's and Basin's name for it, so their forms keep theirs
SPAM_SCORE = 3
FORM_MAX_AGE = timedelta(days=1)
_PAYLOAD_ERRORS = (ValueError, KeyError, TypeError, AttributeError, RecursionError)
# The canonical JSON of the parameters ``issue()`` signs, keys in the package's (sorted) order.
_CANONICAL = (
    '{{"algorithm":"{}","cost":{},"data":{{"expires":{}}},"keyLength":{},"keyPrefix":"{}",'
    '"keySignature":"{}","nonce":"{}","salt":"{}"}}'
)
_UNSIGNED = frozenset({"expiresAt", "memoryCost", "parallelism"})  # parameters ``issue()`` never signs
_CANONICAL_QUOTES = _CANONICAL.count('"')
_ESCAPED = re.compile(r"[\x00-\x1f\\\ud800-\udfff]")  # what JSON.stringify escapes in a string, but quotes
_MAX_SAFE = 2**53  # larger integers are floats in JSON.stringify


class Reason(StrEnum):
    """Why a submission went to the spam folder (logged; no personal data), or was discarded (the honeypot)."""

    NO_SOLUTION = "no_solution"
    MALFORMED = "malformed_solution"
    INVALID = "invalid_solution"
    EXPIRED = "expired_challenge"
    REPLAYED = "replayed_solution"
    NO_RENDER_TIME = "no_render_time"
    TOO_FAST = "too_fast"
    FORM_TOO_OLD = "form_too_old"
    HONEYPOT = "honeypot"
    SOLVED = "solved"
    OWN_PAGE = "own_page"
    LISTED_SITE = "listed_site"
    LINKS = "links"
    MARKUP = "markup"
    LISTED_WORD = "listed_word"
    MARKED_SENDER = "marked_sender"
    LEARNED = "learned"
    MARKED_BY_ADMIN = "marked_by_admin"


# What each check adds to the score (negative: it speaks for the sender). ``links`` counts per link, up to 3.
WEIGHTS = {
    Reason.NO_SOLUTION: 1,
    Reason.MALFORMED: 2,
    Reason.INVALID: 2,
    Reason.EXPIRED: 2,
    Reason.REPLAYED: 3,
    Reason.NO_RENDER_TIME: 0,
    Reason.TOO_FAST: 6,
    Reason.FORM_TOO_OLD: 1,
    Reason.SOLVED: -2,
    Reason.OWN_PAGE: -1,
    Reason.LISTED_SITE: -1,
    Reason.LINKS: 1,
    Reason.MARKUP: 2,
    Reason.LISTED_WORD: 3,
    Reason.MARKED_SENDER: 3,
    Reason.LEARNED: 2,
    Reason.MARKED_BY_ADMIN: SPAM_SCORE,
}
MANY_LINKS = 3


@dataclass(frozen=True)
class Verdict:
    """What the checks found: ``reason`` the proof-of-work's (None: solved, with the verified challenge to
    consume), or the honeypot's (``discard``); ``checks`` every other check that counted, each a
    ``Reason`` value, some with a detail after a colon (``listed_word:casino``, ``learned:0.97``)."""

    reason: Reason | None
    signature: str | None = None
    expires_at: datetime | None = None
    checks: tuple[str, ...] = ()

    @property
    def discard(self) -> bool:
        """Whether the submission is to be thrown away unstored (it filled in the honeypot)."""
        return self.reason == Reason.HONEYPOT

    @property
    def counted(self) -> tuple[str, ...]:
        """Every check that counted, the proof-of-work's first."""
        first = self.reason.value if self.reason else (Reason.SOLVED.value if self.signature else None)
        return ((first,) if first else ()) + self.checks

    @property
    def score(self) -> int:
        """The checks' weights added up."""
        return sum(weight_of(code) for code in self.counted)

    @property
    def spam(self) -> bool:
        """Whether it goes to the spam folder."""
        return self.score >= SPAM_SCORE

    def against(self) -> list[str]:
        """The checks that counted against it: what an inquiry in spam shows."""
        return [code for code in self.counted if weight_of(code) > 0]

    def adding(self, *codes: str) -> Verdict:
        """This verdict with more checks."""
        return replace(self, checks=self.checks + tuple(codes))


def weight_of(code: str) -> int:
    """What one check (``Verdict.checks``' form) adds to the score."""
    name, _, detail = code.partition(":")
    if name == Reason.LINKS:
        return min(int(detail or 1), MANY_LINKS)
    if name == Reason.LEARNED:
        probability = float(detail or 0)
        return -1 if probability < 0.5 else 3 if probability > 0.99 else 2
    return WEIGHTS.get(Reason(name), 0) if name in Reason._value2member_map_ else 0


@lru_cache(maxsize=4)
def _keys(secret_key: str) -> tuple[str, str]:
    """The challenge-signing and key-signing HMAC secrets, derived from ``SECRET_KEY``."""

    def derive(purpose: str) -> str:
        return hmac.new(secret_key.encode(), f"sundown.pow.{purpose}".encode(), hashlib.sha256).hexdigest()

    return derive("challenge"), derive("key")


@lru_cache(maxsize=4)
def _macs(secret_key: str) -> tuple[Any, Any]:
    """HMAC-SHA256 states keyed with ``_keys``, to copy for each solution (keying one costs as much as using it)."""
    challenge_key, key_key = _keys(secret_key)
    return (
        hmac.new(challenge_key.encode(), digestmod=hashlib.sha256),
        hmac.new(key_key.encode(), digestmod=hashlib.sha256),
    )


def issue() -> dict[str, Any]:
    """A fresh challenge as JSON-ready data (``{"parameters": ..., "signature": ...}``)."""
    config = current_app.config
    counter = int.from_bytes(clock.random_bytes(8), "big") % (config["POW_MAX_NUMBER"] + 1)
    expires = clock.now() + timedelta(seconds=config["POW_TTL"])
    challenge_key, key_key = _keys(config["SECRET_KEY"])
    challenge = altcha.create_challenge(
        ALGORITHM,
        COST,
        counter=counter,
        data={"expires": int(expires.timestamp())},
        hmac_secret=challenge_key,
        hmac_key_secret=key_key,
    )
    return challenge.to_dict()


def check_solution(raw: Any) -> Verdict:
    """Verify a solution (base64 JSON of challenge and solution) without touching the database.

    The ALTCHA v2 check of ``altcha.verify_solution`` with a key signature,
    done here with one JSON decode and two HMACs (see ``_signed_form``): the
    challenge's signature over the canonical JSON of its parameters, then the
    derived key's signature. A payload the package cannot parse, or with a
    member of the wrong type, is malformed; one it would refuse is invalid.
    """
    if not raw:
        return Verdict(Reason.NO_SOLUTION)
    if not isinstance(raw, str):
        return Verdict(Reason.MALFORMED)
    try:
        challenge, parameters, derived_key = _decode(raw)
        signed = _signed_form(parameters)
    except _PAYLOAD_ERRORS:
        return Verdict(Reason.MALFORMED)
    challenge_mac, key_mac = _macs(current_app.config["SECRET_KEY"])
    signature = challenge.get("signature")
    if signed is None or not _signature_matches(signature, challenge_mac, signed):
        return Verdict(Reason.INVALID)
    if not _key_matches(derived_key, parameters["keySignature"], key_mac):
        return Verdict(Reason.INVALID)
    try:  # signed by us, so ``data`` is what ``issue()`` made
        expires_at = datetime.fromtimestamp(int(parameters["data"]["expires"]), UTC)
    except (*_PAYLOAD_ERRORS, OverflowError, OSError):
        return Verdict(Reason.INVALID)
    if clock.now() >= expires_at:
        return Verdict(Reason.EXPIRED)
    return Verdict(None, signature, expires_at)


def _decode(raw: str) -> tuple[dict, dict, str]:
    """The challenge, its parameters and the derived key from a payload; raises on a malformed one.

    As the package reads it (``base64.b64decode``, UTF-8, JSON); the members
    it requires must be there (``counter`` too, which a key signature makes
    irrelevant, as in the package) and be objects and strings where it reads
    them so.
    """
    payload = json.loads(binascii.a2b_base64(raw).decode())
    challenge, solution = _object(payload["challenge"]), _object(payload["solution"])
    parameters = _object(challenge["parameters"])
    if "counter" not in solution:
        raise KeyError("counter")
    derived_key = solution["derivedKey"]
    if type(derived_key) is not str:
        raise TypeError("derivedKey")
    return challenge, parameters, derived_key


def _object(value: Any) -> dict:
    if type(value) is not dict:
        raise TypeError("not an object")
    return value


def _signed_form(parameters: dict) -> bytes | None:
    """The canonical JSON the package signs for ``parameters``, or None if we never sign such parameters.

    ``issue()`` signs one shape: the package's canonical JSON (keys sorted,
    no spaces, JSON.stringify's numbers and strings) of exactly these eight
    members, so it is a format string here. Members the package ignores are
    ignored; ``keyLength`` and ``keyPrefix`` take its defaults. Parameters
    with a member ``issue()`` never signs (``expiresAt``, ``memoryCost``,
    ``parallelism``, more in ``data``), or a value whose canonical text
    cannot be one we signed (a string JSON.stringify would escape, a number
    that is not a safe integer), cannot carry our signature: None, before any
    HMAC. Wrong types raise ``TypeError``.
    """
    data = _object(parameters["data"])
    if not _UNSIGNED.isdisjoint(parameters) or data.keys() != {"expires"}:
        return None
    strings = (
        parameters["algorithm"],
        parameters.get("keyPrefix", "00"),
        parameters["keySignature"],
        parameters["nonce"],
        parameters["salt"],
    )
    if set(map(type, strings)) != {str}:
        raise TypeError("not a string")
    numbers = (_integer(parameters["cost"]), _integer(data["expires"]), _integer(parameters.get("keyLength", 32)))
    if None in numbers:
        return None
    algorithm, key_prefix, key_signature, nonce, salt = strings
    cost, expires, key_length = numbers
    canonical = _CANONICAL.format(algorithm, cost, expires, key_length, key_prefix, key_signature, nonce, salt)
    # The strings go in unescaped: one with a character JSON.stringify escapes would read differently
    # there, and one with a quote would add quotes (and could move text from one member to another).
    if canonical.count('"') != _CANONICAL_QUOTES or _ESCAPED.search(canonical):
        return None
    return canonical.encode()


def _integer(value: Any) -> str | None:
    """A JSON number's canonical text when it is a safe integer (as ``issue()`` signs), else None."""
    if type(value) is int:
        return str(value) if -_MAX_SAFE <= value <= _MAX_SAFE else None
    if type(value) is float:  # 100.0 is "100" in JSON.stringify
        return str(int(value)) if value.is_integer() and -_MAX_SAFE <= value <= _MAX_SAFE else None
    raise TypeError("not a number")


def _signature_matches(signature: Any, challenge_mac: Any, signed: bytes) -> bool:
    if type(signature) is not str:
        return False
    mac = challenge_mac.copy()
    mac.update(signed)
    return hmac.compare_digest(signature.encode("utf-8", "surrogatepass"), mac.hexdigest().encode())


def _key_matches(derived_key: str, key_signature: str, key_mac: Any) -> bool:
    """Whether the derived key (hex, either case, as in the package) is the one ``issue()`` signed."""
    try:
        key = bytes.fromhex(derived_key)
    except ValueError:
        return False
    if len(derived_key) != 2 * len(key):  # fromhex skips whitespace; the package does not
        return False
    mac = key_mac.copy()
    mac.update(key)
    return hmac.compare_digest(key_signature.encode(), mac.hexdigest().encode())


def form_token(moment: datetime | None = None) -> str:
    """The signed render time (epoch ms) the form carries; ``moment`` defaults to now."""
    rendered = clock.epoch_ms(moment or clock.now())
    return _signer().sign(str(rendered)).decode()


def carried_over(token: str | None) -> str:
    """The submitted render time if it is ours, so a re-shown form keeps counting from the first render."""
    return token if token and _rendered_at(token) is not None else form_token()


def check_form_time(token: str | None) -> Reason | None:
    """The time trap: None when the form was shown at least ``MIN_FILL_SECONDS`` and at most a day ago."""
    rendered = _rendered_at(token) if token else None
    if rendered is None:
        return Reason.NO_RENDER_TIME
    age = clock.now() - rendered
    if age < timedelta(seconds=current_app.config["MIN_FILL_SECONDS"]):
        return Reason.TOO_FAST
    if age > FORM_MAX_AGE:
        return Reason.FORM_TOO_OLD
    return None


def judge_form(data: Mapping, site: Reason | None = None) -> Verdict:
    """The page form's verdict on its fields ``data``: the honeypot, the proof-of-work, the time trap
    where the form carries a render time; ``site`` the credit of where it came from (``OWN_PAGE``,
    ``LISTED_SITE``)."""
    if any(data.get(name) for name in HONEYPOTS):
        return Verdict(Reason.HONEYPOT)
    verdict = check_solution(data.get(FIELD))
    token = data.get(RENDERED_FIELD)
    timing = check_form_time(token) if token else None  # a snippet pasted on another site has none
    return verdict.adding(*(code for code in (timing, site) if code))


def judge_api(data: Any, site: Reason | None = None) -> Verdict:
    """The API's verdict on its body ``data`` (a JSON value, or a multipart post's fields): the honeypot,
    then the proof-of-work, with ``site`` as for ``judge_form``. A body that is not an object is refused
    before any verdict counts."""
    fields = data if isinstance(data, Mapping) else {}
    if any(fields.get(name) for name in HONEYPOTS):
        return Verdict(Reason.HONEYPOT)
    verdict = check_solution(fields.get(FIELD))
    return verdict.adding(site) if site else verdict


def weigh(session: Session, verdict: Verdict, text: str, sender: str) -> Verdict:
    """``verdict`` with the content checks on an inquiry's ``text`` and ``sender`` address (reads only)."""
    found = []
    count = len(signals.links(text))
    if count:
        found.append(f"{Reason.LINKS}:{count}")
    if signals.has_markup(text):
        found.append(Reason.MARKUP.value)
    listed = signals.listed_match(text, sender, signals.words_for_intake(session))
    if listed:
        found.append(f"{Reason.LISTED_WORD}:{listed}")
    judgement = learned.judge(session, text, sender)
    if judgement.marked_sender:
        found.append(Reason.MARKED_SENDER.value)
    probability = judgement.probability
    if probability is not None and (probability > 0.9 or probability < 0.1):
        found.append(f"{Reason.LEARNED}:{probability:.3f}")
    return verdict.adding(*found)


def note_filed(verdict: Verdict, status: InquiryStatus) -> None:
    """Log why an inquiry went to the spam folder: the checks that counted against it."""
    if status == InquiryStatus.SPAM:
        log.info("inquiry filed as spam: %s", ", ".join(code.partition(":")[0] for code in verdict.against()))


def _signer() -> Signer:
    return Signer(current_app.config["SECRET_KEY"], salt="sundown.form-rendered")


def _rendered_at(token: str) -> datetime | None:
    try:
        milliseconds = int(_signer().unsign(token))
        return datetime.fromtimestamp(milliseconds / 1000, UTC)
    except (BadSignature, ValueError, OverflowError, OSError):
        return None
