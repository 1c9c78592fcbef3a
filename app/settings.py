"""Every setting, one record each: its defaults, its check and its words for operators.

``app.config`` loads and checks the records at start; ``devtools/envexample.py``
writes ``.env.example`` and the settings table of README.md from them
(``make env-example``; ``tests/project/test_envexample.py`` fails while either
differs). A new setting is one record here, then ``make env-example``.

Values arrive JSON-decoded from the environment ("3600" as 3600, "1.5" as 1.5,
"abc" as "abc") or as Python values from overrides, so a number may be an int,
a float or a numeric string: a check converts, then tests the range, and
returns the value in its proper type or raises.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy.engine import make_url

from app.attachments.rules import DEFAULT_TYPES, parse_types

# None of these imports app.config or this module (no cycle): ratelimit and retention need only
# app.core.clock, app.core.db, app.core.dialect and app.models.
from app.core import db, i18n
from app.core.chaturls import KNOWN, parse_api_bases, parse_notify_urls
from app.core.parsing import (
    parse_address,
    parse_emails,
    parse_imap_url,
    parse_secret,
    parse_smtp_url,
    parse_webhook_url,
)
from app.core.ratelimit import parse_limits
from app.inquiries.retention import MAX_DAYS, MIN_DAYS

SAME = object()  # a development default that is production's


@dataclass(frozen=True)
class Variable:
    """One ``SUNDOWN_*`` environment variable; ``name`` is what follows the prefix.

    ``default`` is production's (None: unset); ``development`` replaces it under
    ``SUNDOWN_ENV=development``. ``check`` returns the value normalised or
    raises (None: ``app.config.load`` checks it itself); ``expected`` completes
    "SUNDOWN_<name> must be ..." and is README's Value column, ``meaning`` its
    Meaning column and ``shown`` its Default column where the value alone
    would mislead. ``example`` is what ``.env.example`` offers when there is
    no default; ``required`` ones stop production unset, and they and
    ``deployment_sets`` ones are uncommented there. A ``secret`` is never echoed.
    """

    name: str
    default: Any
    check: Callable[[Any], Any] | None
    expected: str
    meaning: str
    development: Any = SAME
    shown: str = ""
    example: str = ""
    required: bool = False
    deployment_sets: bool = False
    secret: bool = False


def _float(value: Any) -> float:
    # bool is an int subclass ("true" must not pass as 1); json.loads accepts NaN and Infinity.
    if isinstance(value, bool) or not isinstance(value, (int, float, str)) or not math.isfinite(float(value)):
        raise ValueError(value)
    return float(value)


def _integer(value: Any) -> int:
    number = value if isinstance(value, int) and not isinstance(value, bool) else _float(value)
    if number != int(number):
        raise ValueError(value)
    return int(number)


def text(value: Any) -> str:
    """``value`` if it is a string, else ``TypeError`` (a number from JSON is not a name)."""
    if not isinstance(value, str):
        raise TypeError(value)
    return value


def _as_is(value: Any) -> Any:
    return value


def rule(convert: Callable[[Any], Any], ok: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A check: ``convert`` the value, then require ``ok`` of the result to be true."""

    def check(value: Any) -> Any:
        if not ok(converted := convert(value)):
            raise ValueError(value)
        return converted

    return check


def _optional(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else check(value)


def _limits_ok(spec: str) -> bool:
    # The parser the views use at request time, so what starts also works.
    return all(limit.count > 0 and limit.seconds > 0 for limit in parse_limits(spec))


MIN_SECRET_LENGTH = 32  # it signs logins, render times and challenges: one character would be guessed
SQL_BACKENDS = ("sqlite", "postgresql", "postgres")  # app.core.db maps postgres:// too
POSITIVE = rule(_integer, lambda n: n > 0)
LIMITS = rule(text, _limits_ok)
TOKEN = _optional(rule(text, lambda s: len(s) >= 16))
SECONDS = "a positive whole number of seconds"
LIMITS_TEXT = "comma-separated count/seconds pairs of positive whole numbers, e.g. 5/60,50/86400"
TOKEN_TEXT = "unset or a string of at least 16 characters"
SECRET_TEXT = "a random string of at least 32 characters (python -c 'import secrets; print(secrets.token_hex(32))')"

# Every setting, in the order README.md lists them. "CLEANUP_LEASE longer than
# CLEANUP_TIME_BUDGET" is checked in app.cleanup; a check may also raise on bad
# input by itself (ZoneInfo, make_url and parse_limits do).
SETTINGS: tuple[Variable, ...] = (
    Variable(
        "ENV",
        "production",
        rule(text, lambda s: s in ("production", "development")),
        "production or development",
        "`development` fills in local defaults (origin, RP ID, a secret key kept in `instance/secret_key`)."
        " `make run` sets it.",
    ),
    Variable(
        "SECRET_KEY",
        None,
        rule(text, lambda key: len(key) >= MIN_SECRET_LENGTH),
        SECRET_TEXT,
        "Signs cookies and keys the hashed client addresses (quote it as JSON, `'\"…\"'`, if it is all digits).",
        development=None,
        shown="none (required in production; in development one kept in `instance/secret_key`)",
        required=True,
        secret=True,
    ),
    Variable(
        "DATABASE_URL",
        None,
        rule(_as_is, lambda url: make_url(url).get_backend_name() in SQL_BACKENDS),
        "a sqlite:///path or postgresql://user:pass@host/db URL",
        "The database (psycopg 3 for PostgreSQL; `postgres://` also works). Other databases are refused.",
        shown="SQLite file `instance/sundown.db`",
        example="sqlite:////data/sundown.db",
        deployment_sets=True,
        secret=True,
    ),
    Variable(
        "ORIGIN",
        None,
        None,
        "the public URL admins use, e.g. https://inbox.example.org",
        "The public origin admins use, `http(s)://host[:port]` with no path; one, or several separated by commas."
        " The JSON API refuses other `Origin`s; WebAuthn checks it. Cookies are `Secure` when it is https.",
        development="http://localhost:5000",
        shown="none (required in production; `http://localhost:5000` in development,"
        " `http://localhost:PORT` under `make run PORT=…`)",
        example="https://inquiries.example.org",
        required=True,
    ),
    Variable(
        "RP_ID",
        None,
        None,
        "the WebAuthn relying party ID, the origin's host, e.g. inbox.example.org",
        "The WebAuthn relying party ID: the host of the (first) origin, or a registrable domain it ends with"
        " (`inbox.example.org` or `example.org` for `https://inbox.example.org`, never `org` or another domain).",
        development="localhost",
        shown="none (required in production; `localhost` in development)",
        example="inquiries.example.org",
        required=True,
    ),
    Variable(
        "RP_NAME",
        "Sundown",
        rule(text, bool),
        "a non-empty string (quote one that reads as JSON, e.g. '\"2024\"')",
        "The name shown by the browser's passkey dialog.",
    ),
    Variable(
        "TIME_ZONE",
        "UTC",
        rule(text, ZoneInfo),
        "an IANA time zone name such as UTC or Europe/Paris",
        "Time zone for times shown to admins. Dates and times follow each language's pattern"
        " (`2026-12-02 14:05 JST`, `2026年12月2日 14:05 JST`).",
    ),
    Variable(
        "DEFAULT_LOCALE",
        "en",
        rule(i18n.normalize, bool),
        "one of en, ja, zh-Hans",
        "The language when nothing chooses one: a request without `Accept-Language` (e.g. a JSON API client)"
        " or one naming no language Sundown has, and work done with no request (`zh_Hans` is also accepted)."
        " See [Languages](#languages).",
    ),
    Variable(
        "OPERATOR_NAME",
        None,
        _optional(rule(text, lambda s: 0 < len(s.strip()) <= 200)),
        "unset or a name of at most 200 characters, e.g. Example Ltd, 1 Main Street, Lyon",
        "Who runs this site and decides what happens to its inquiries (the data controller), named on the"
        " privacy page. Unset: the privacy page says that the owner has yet to set it.",
        example="Example Ltd, 1 Main Street, 69001 Lyon, France",
    ),
    Variable(
        "OPERATOR_CONTACT",
        None,
        _optional(rule(text, lambda s: 0 < len(s.strip()) <= 200)),
        "unset or an e-mail address, a web address or a postal address (at most 200 characters)",
        "Where people write to see or erase what is held about them, given on the privacy page beside"
        " `SUNDOWN_OPERATOR_NAME` (an e-mail address is a link). Unset: the privacy page sends them to the form.",
        example="privacy@example.org",
    ),
    Variable(
        "PROXY_FIX",
        0,
        rule(_integer, lambda n: 0 <= n <= 10),
        "a whole number of trusted proxies from 0 to 10",
        "Number of trusted reverse proxies in front; when set, `X-Forwarded-*` headers are honoured"
        " (Werkzeug `ProxyFix`).",
    ),
    Variable(
        "SUBMIT_RATE_LIMITS",
        "5/60,50/86400",
        LIMITS,
        LIMITS_TEXT,
        "Submissions allowed per client (an IPv4 address, or an IPv6 /64: one site is usually given a whole /64)."
        " Accepted, spam, honeypot and refused (429) submissions count, and so do files refused (413, 415, 422)"
        " and posts from a site the form does not list; ones with invalid fields (422) do not.",
    ),
    Variable(
        "SUBMIT_GLOBAL_RATE_LIMITS",
        "300/60,10000/86400",
        LIMITS,
        LIMITS_TEXT,
        "Submissions from all clients together that are stored: over it every submission gets 429, so no flood"
        " from any number of addresses grows the database without bound (at most the daily count times the"
        " longest retention). A client over its own limit, and the honeypot, count toward it no more.",
    ),
    Variable(
        "SUBMIT_CLIENT_FILE_BYTES",
        50 * 1024 * 1024,
        rule(_integer, lambda n: n >= 0),
        "a whole number of bytes, 0 or more",
        "Bytes of files one client may have stored a day (50 MB by default); past it an inquiry with files gets"
        " 413, the text kept. ([docs/attachments.md](docs/attachments.md))",
    ),
    Variable(
        "SUBMIT_FILE_BYTES",
        2 * 1024 * 1024 * 1024,
        rule(_integer, lambda n: n >= 0),
        "a whole number of bytes, 0 or more",
        "Bytes of files all clients together may have stored a day (2 GB by default); past it an inquiry with"
        " files gets 507, the text kept.",
    ),
    Variable(
        "ATTACHMENT_MIN_FREE_BYTES",
        512 * 1024 * 1024,
        rule(_integer, lambda n: n >= 0),
        "a whole number of bytes, 0 or more",
        "Free disk space to keep: an inquiry with files that would leave less free beside the database (SQLite)"
        " or the instance folder (PostgreSQL) gets 507, the text kept; 0 turns the check off.",
    ),
    Variable(
        "AUDIT_RETENTION_DAYS",
        365,
        rule(_integer, lambda n: 365 <= n <= 3650),
        "a whole number of days from 365 to 3650",
        "How long the audit log keeps an entry; the cleanup deletes older ones. An entry about a deleted inquiry"
        " loses its free text at once.",
    ),
    Variable(
        "NOTIFY_HOURLY_CAP",
        100,
        rule(_integer, lambda n: n >= 1),
        "a whole number of at least 1",
        "Inquiries notified one by one in an hour by e-mail or chat; past it, the inquiries are still stored and"
        " their e-mails and chat messages wait for the end of the hour and go as one digest per channel, so a flood"
        " cannot flood the mailboxes or the rooms (`sundown_notifications_capped_total` counts them).",
    ),
    Variable(
        "AUTH_RATE_LIMIT_PER_CLIENT",
        "10/600",
        LIMITS,
        LIMITS_TEXT,
        "Passkey login, enrollment and invite attempts (options and verifications; pages never count) per client:"
        " an IPv4 address or an IPv6 /64.",
    ),
    Variable(
        "AUTH_RATE_LIMIT_GLOBAL",
        "100/600",
        LIMITS,
        LIMITS_TEXT,
        "Failed verifications (a wrong passkey, a used or guessed link) from all clients together. Over it, only"
        " clients that have failed themselves are refused: no stranger can lock an admin out.",
    ),
    Variable(
        "POW_TTL",
        600,
        POSITIVE,
        SECONDS,
        "Seconds a proof-of-work challenge (`GET /api/challenge`) stays valid; the form fetches a new one a minute"
        " before.",
    ),
    Variable(
        # The counter a browser must find is a uint32 (the altcha package's counter mode).
        "POW_MAX_NUMBER",
        2500,
        rule(_integer, lambda n: 1 <= n <= 0xFFFFFFFF),
        "a whole number from 1 to 4294967295",
        "The difficulty: the browser must find a counter drawn from `0` to this number, one PBKDF2 (100 rounds)"
        " per try; the default takes well under a second on a desktop core, longer on a phone"
        " ([docs/spam.md](docs/spam.md) has the figures). The server's cost does not depend on it.",
    ),
    Variable(
        "MIN_FILL_SECONDS",
        3,
        rule(_float, lambda n: n >= 0),
        "a number of seconds, 0 or more",
        "The time trap: a form sent sooner than this after it was shown (or more than a day after) is filed as spam.",
    ),
    Variable("CHALLENGE_TTL", 300, POSITIVE, SECONDS, "Seconds a WebAuthn challenge stays valid (single use)."),
    Variable("INVITE_TTL", 3600, POSITIVE, SECONDS, "Seconds an enrollment link stays valid (single use)."),
    Variable(
        "LOGIN_LIFETIME",
        12 * 3600,
        POSITIVE,
        SECONDS,
        "Absolute lifetime of an admin's login (12 h): then the browser must log in again with a passkey.",
    ),
    Variable(
        "LOGIN_IDLE_TIMEOUT", 2 * 3600, POSITIVE, SECONDS, "An admin's login unused this many seconds is refused (2 h)."
    ),
    Variable("CLEANUP_INTERVAL", 3600, POSITIVE, SECONDS, "Seconds between cleanups when there is no backlog."),
    Variable(
        "CLEANUP_BATCH_SIZE",
        None,
        _optional(POSITIVE),
        "a positive whole number of rows, or null for the database's default",
        "Rows deleted per batch, each batch its own short transaction; a number makes every batch that size."
        " Automatic: on SQLite 100 rows first, then sized to hold the one write lock about 30 ms; 50,000 on"
        " PostgreSQL (row locks, so inserts never wait for a batch).",
        shown="automatic",
    ),
    Variable(
        # 0 is allowed: at least one batch always runs, so it means one batch a run.
        "CLEANUP_TIME_BUDGET",
        10.0,
        rule(_float, lambda n: n >= 0),
        "a number of seconds, 0 or more",
        "Seconds one cleanup may spend (at least one batch always runs, so `0` means one batch a run); what is"
        " left is finished by the next one.",
    ),
    Variable(
        "CLEANUP_BACKLOG_RETRY", 60, POSITIVE, SECONDS, "Seconds after a partial cleanup before the next one is due."
    ),
    Variable(
        "CLEANUP_YIELD",
        None,
        _optional(rule(_float, lambda n: n >= 0)),
        "a number of at least 0, or null for the database's default",
        "Pause after each batch as a fraction of its duration, besides what waits for SQLite's lock add (live"
        " writers queued: docs/cleanup.md, *Pacing*). Automatic: 0 on both; raise it to favour live writers further.",
        shown="automatic",
    ),
    Variable(
        "CLEANUP_LEASE",
        300,
        POSITIVE,
        SECONDS,
        "Seconds a running cleanup blocks others; greater than `SUNDOWN_CLEANUP_TIME_BUDGET`. Only matters if a"
        " process dies mid-run.",
    ),
    Variable(
        "CLEANUP_TOKEN",
        None,
        TOKEN,
        TOKEN_TEXT,
        "Enables `POST /internal/cleanup` and `POST /internal/deliver` with `Authorization: Bearer <token>`;"
        " 404 when unset.",
        secret=True,
    ),
    Variable(
        "METRICS_TOKEN",
        None,
        TOKEN,
        TOKEN_TEXT,
        "Enables `GET /metrics` (Prometheus text format) with `Authorization: Bearer <token>`; 404 when unset.",
        secret=True,
    ),
    Variable(
        "SMTP_URL",
        None,
        _optional(rule(text, parse_smtp_url)),
        "unset or smtp://host:25, smtp+starttls://user:pass@host:587 or smtps://user:pass@host:465",
        "Where notification e-mails go: `smtp://` is plain (a local relay), `smtp+starttls://` requires STARTTLS;"
        " the certificate is verified. Percent-encode `@` or `:` in the password. Never logged."
        " ([docs/notifications.md](docs/notifications.md))",
        shown="unset (no e-mail)",
        example="smtp+starttls://user:pass@smtp.example.org:587",
        secret=True,
    ),
    Variable(
        "SMTP_CA_FILE",
        None,
        _optional(rule(text, os.path.isfile)),
        "unset or the path of a PEM file of CA certificates",
        "CA certificates to verify the SMTP server with instead, for a relay with a private CA.",
        shown="unset (the system's CAs)",
    ),
    Variable(
        "MAIL_FROM",
        None,
        _optional(rule(text, parse_address)),
        "unset or an e-mail address, e.g. sundown@example.org",
        "The sender of notification e-mails.",
        shown="`sundown@` the origin's host",
        example="sundown@inquiries.example.org",
    ),
    Variable(
        "REPLY_TO",
        None,
        _optional(rule(text, parse_address)),
        "unset or an e-mail address, e.g. team@example.org",
        "The team's address for `Reply-To` on replies sent from the inbox, when the answering admin has set no"
        " address of their own (account page), and on acknowledgements, while answers do not come back"
        " (`SUNDOWN_INBOUND_ADDRESS` unset). Unset: answers go to the sender, `SUNDOWN_MAIL_FROM`."
        " ([docs/conversations.md](docs/conversations.md))",
        example="team@example.org",
    ),
    Variable(
        "ACK_HOURLY_CAP",
        50,
        rule(_integer, lambda n: n >= 1),
        "a whole number of at least 1",
        "Acknowledgement e-mails to people who wrote, from all addresses together, per clock hour; past it"
        ' inquiries are saved without one (`sundown_acknowledgements_total{outcome="hourly_capped"}`).',
    ),
    Variable(
        "ACK_PER_ADDRESS_SECONDS",
        3600,
        rule(_integer, lambda n: n >= 3600),
        "a whole number of seconds, at least 3600",
        'At most one acknowledgement to a mailbox in this many seconds (`outcome="address_capped"` past it),'
        " so a form cannot be used to mail-bomb a stranger; the address counts case, `+tag` and Gmail's dots"
        " aside.",
    ),
    Variable(
        "ACK_PER_CLIENT_LIMITS",
        "3/3600,10/86400",
        LIMITS,
        LIMITS_TEXT,
        "Acknowledgements one client (its network, as the submission limits count it) may cause, as"
        ' count/seconds pairs (`outcome="client_capped"` past them).',
    ),
    Variable(
        "INBOUND_ADDRESS",
        None,
        _optional(rule(lambda s: parse_address(text(s)), lambda s: "+" not in s)),
        "unset or the e-mail address people's answers go to, without a +tag, e.g. replies@example.org",
        "The address people's answers come back to, without a `+tag`, e.g. `replies@example.org`: replies and"
        " acknowledgements then carry `Reply-To: replies+i<N>-<signature>@example.org`, and answers join the"
        " inquiry's conversation. ([docs/conversations.md](docs/conversations.md))",
        shown="unset (answers go to people's mailboxes)",
        example="replies@example.org",
    ),
    Variable(
        "INBOUND_TOKEN",
        None,
        TOKEN,
        TOKEN_TEXT,
        "Enables `POST /internal/mail` (one raw e-mail as the body, whatever its `Content-Type`) with"
        " `Authorization: Bearer <token>`; 404 when unset. Never logged.",
        secret=True,
    ),
    Variable(
        "INBOUND_MAX_BYTES",
        25 * 1024 * 1024,
        rule(_integer, lambda n: 64 * 1024 <= n <= 200 * 1024 * 1024),
        "a whole number of bytes from 65536 to 209715200 (200 MB)",
        "The largest e-mail taken, in bytes (25 MB): `POST /internal/mail` answers 413 past it, the IMAP fetch"
        " holds a note of it apart.",
    ),
    Variable(
        "INBOUND_RATE_LIMITS",
        "120/60,2000/86400",
        LIMITS,
        LIMITS_TEXT,
        "E-mails `POST /internal/mail` takes, as count/seconds pairs (429 past them).",
    ),
    Variable(
        "IMAP_URL",
        None,
        _optional(rule(text, parse_imap_url)),
        "unset or imaps://user:pass@host:993/INBOX or imap+starttls://user:pass@host:143/INBOX",
        "The mailbox answers arrive in, fetched after ordinary requests, each stored message deleted from it."
        " The certificate is verified. Never logged.",
        shown="unset (no fetch)",
        secret=True,
    ),
    Variable(
        "IMAP_CA_FILE",
        None,
        _optional(rule(text, os.path.isfile)),
        "unset or the path of a PEM file of CA certificates",
        "CA certificates to verify the IMAP server with instead, for a mailbox with a private CA.",
        shown="unset (the system's CAs)",
    ),
    Variable(
        "IMAP_INTERVAL",
        60,
        rule(_integer, lambda n: n >= 10),
        "a whole number of seconds, at least 10",
        "Seconds between two fetches of the mailbox.",
    ),
    Variable(
        "NOTIFY_EMAILS",
        None,
        _optional(parse_emails),
        "unset or e-mail addresses, comma-separated or a JSON list (at most 20)",
        "Who gets notification e-mails. When set, the Notifications page shows them read-only.",
        shown="unset (the Notifications page's)",
        example="team@example.org",
    ),
    Variable(
        "WEBHOOK_URL",
        None,
        _optional(rule(text, parse_webhook_url)),
        "unset or an http:// or https:// URL",
        "Receives a signed `POST` per new inquiry. When set, the Notifications page shows it read-only.",
        shown="unset (the Notifications page's)",
        example="https://hooks.example.org/sundown",
    ),
    Variable(
        "WEBHOOK_SECRET",
        None,
        _optional(rule(text, parse_secret)),
        "unset or a Standard Webhooks secret: whsec_ and base64 of at least 24 bytes",
        "The Standard Webhooks signing secret. Never logged.",
        shown="unset (made on the Notifications page)",
        secret=True,
    ),
    Variable(
        "WEBHOOK_ALLOW_PRIVATE",
        0,
        rule(_as_is, lambda v: v in (0, 1) and not isinstance(v, float)),
        "0 or 1",
        "`1` lets webhooks go to loopback, link-local and private addresses (a receiver on the same host or"
        " network); `0` refuses them, checked on the address resolved at send time.",
    ),
    Variable(
        "NOTIFY_URLS",
        None,
        _optional(parse_notify_urls),
        f"unset or Apprise-style URLs, comma-separated, each for {KNOWN}",
        "Chat notifications: Slack, Discord, Microsoft Teams, Telegram, Matrix and ntfy, one channel each, in the"
        " URLs operators use with Apprise; sent through the webhooks' address guard. Never logged whole."
        " ([docs/notifications.md](docs/notifications.md))",
        example="ntfys://ntfy.example.org/sundown",
        secret=True,
    ),
    Variable(
        "NOTIFY_API_BASES",
        "",
        lambda value: parse_api_bases(text(value)),
        "empty or service=URL pairs, comma-separated, e.g. telegram=https://tg.example.org",
        "Sends a chat service's requests to this base instead of the one its URL names (a proxy or gateway in"
        " front of it; services: slack, discord, msteams, telegram, matrix, ntfy).",
        shown="empty",
    ),
    Variable(
        "DELIVERY_RETRY_BASE",
        60,
        rule(_float, lambda n: n > 0),
        "a positive number of seconds",
        "Seconds before the first retry of a failed notification; each next wait doubles (up to 6 h, plus up to"
        " 25% jitter), for about 24 hours and at least 10 attempts.",
    ),
    Variable(
        "LOG_FORMAT",
        "text",
        rule(text, lambda s: s in ("text", "json")),
        "text or json",
        "How log lines look; `json` gives one JSON object per line: time, level, logger, message, request id,"
        " structured fields.",
    ),
    Variable(
        "DEFAULT_RETENTION_DAYS",
        180,
        rule(_integer, lambda n: MIN_DAYS <= n <= MAX_DAYS),
        f"a whole number of days from {MIN_DAYS} to {MAX_DAYS}",
        "Retention in days when none (or an invalid one) is stored; admins change it on the Retention page.",
    ),
    Variable(
        "DB_POOL_SIZE",
        5,
        POSITIVE,
        "a positive whole number of connections",
        "PostgreSQL connections kept per process (plus as many overflow).",
    ),
    Variable(
        "DB_CONNECT_TIMEOUT",
        db.CONNECT_TIMEOUT,
        rule(_integer, lambda n: n >= 2),
        "a whole number of seconds, at least 2 (PostgreSQL's minimum)",
        "PostgreSQL: seconds to open a connection or wait for a free pooled one; past it the request gets 503.",
    ),
    Variable(
        "DB_STATEMENT_TIMEOUT",
        db.STATEMENT_TIMEOUT,
        rule(_float, lambda n: n > 0),
        "a positive number of seconds",
        "Seconds a request's statement may run on PostgreSQL, and a write may wait for the lock on SQLite; past it"
        " the request gets 503.",
    ),
    Variable(
        "MAX_CONTENT_LENGTH",
        64 * 1024,
        rule(_integer, lambda n: n >= 1024),
        "a whole number of bytes, at least 1024",
        "Largest request body in bytes; larger ones get 413. A form with a file field also takes its files (next row).",
    ),
    Variable(
        "ATTACHMENT_MAX_BYTES",
        10 * 1024 * 1024,
        rule(_integer, lambda n: 1024 <= n <= 100 * 1024 * 1024),
        "a whole number of bytes from 1024 to 104857600 (100 MB)",
        "Largest total size of the files sent with one inquiry (10 MB by default); over it the form comes back"
        " with the text kept (413). Bodies of up to `SUNDOWN_MAX_CONTENT_LENGTH` + twice this are read to say"
        " so; larger ones are refused unread. ([docs/attachments.md](docs/attachments.md))",
    ),
    Variable(
        "ATTACHMENT_TYPES",
        ",".join(DEFAULT_TYPES),
        parse_types,
        "MIME types, comma-separated, each one that is detected by content, e.g. image/png,application/pdf,text/plain",
        "The file types forms take, each detected from the file's bytes (never its name); others get 415. Any"
        " type the `filetype` library detects, and `text/plain` (UTF-8 with no control characters).",
    ),
    Variable(
        "WTF_CSRF_TIME_LIMIT",
        None,
        _optional(POSITIVE),
        f"{SECONDS}, or null for the session's lifetime",
        "Seconds a form's CSRF token stays valid.",
        shown="`null`",
    ),
    Variable(
        "WTF_CSRF_SSL_STRICT",
        True,
        rule(_as_is, lambda v: isinstance(v, bool)),
        "true or false",
        "On https, also require a same-origin `Referer` on form posts.",
    ),
)

BY_NAME = {variable.name: variable for variable in SETTINGS}

# Old names that would otherwise be ignored without a word: a name, or a prefix ending in "_".
RENAMED = {"PRUNE_": "CLEANUP_", "SESSION_LIFETIME": "LOGIN_LIFETIME", "SESSION_IDLE_TIMEOUT": "LOGIN_IDLE_TIMEOUT"}
