"""Apprise-style notification URLs for the six chat services Sundown speaks, parsed without the Apprise library.

An operator pastes the URL they already use elsewhere (Healthchecks, Uptime
Kuma, changedetection.io); Sundown turns it into the one HTTPS request the
service documents and sends it through its own guarded client
(``app.notify.channels.chat``), so the address checks apply as to webhooks.
The Apprise library itself is not used: its URLs can reach any host and
protocol, outside that guard (docs/notifications.md).

* ``slack://[botname@]TokenA/TokenB/TokenC[/#channel]``: an incoming webhook,
  ``https://hooks.slack.com/services/TokenA/TokenB/TokenC``.
* ``discord://WebhookID/WebhookToken``: ``https://discord.com/api/webhooks/ID/Token``.
* ``workflows://host[:port]/Workflow/Signature``: a Power Automate workflow's
  trigger (Microsoft Teams' webhooks since connectors retired);
  ``msteams://team@TokenA/TokenB/TokenC/TokenD``: a legacy connector,
  ``https://team.webhook.office.com/webhookb2/A/IncomingWebhook/B/C/V2D``.
* ``tgram://BotToken/ChatID``: the Bot API's ``sendMessage``.
* ``matrix://token@host[:port]/!room:server`` (HTTP) or ``matrixs://`` (HTTPS):
  a room by its ID, an access token of the sending account.
* ``ntfy://[user:password@]host[:port]/topic`` (HTTP), ``ntfys://`` (HTTPS),
  ``?token=tk_…`` for an access token; ``ntfy://topic`` alone is ntfy.sh.

Each parsed URL is a ``Target``: where the request goes, with its secrets,
and ``shown``: the URL with every secret cut to its first four characters,
the only form that may be logged or shown back.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import parse_qs, quote, unquote, urlsplit

from flask_babel import gettext as _

SERVICES = ("slack", "discord", "msteams", "telegram", "matrix", "ntfy")
SCHEMES = {
    "slack": "slack",
    "discord": "discord",
    "msteams": "msteams",
    "workflows": "msteams",
    "workflow": "msteams",
    "tgram": "telegram",
    "matrix": "matrix",
    "matrixs": "matrix",
    "ntfy": "ntfy",
    "ntfys": "ntfy",
}
KNOWN = (
    "slack://, discord://, msteams:// or workflows:// (Microsoft Teams), tgram:// (Telegram),"
    " matrix:// or matrixs://, ntfy:// or ntfys://"
)
MAX_URLS = 20
# URLs of one service, sent one after another in one delivery of 10 s each at most: four stay inside the
# outbox's SEND_MARGIN (45 s), so a slow service cannot outlive the lease and be sent twice.
PER_SERVICE = 4


class UnknownService(ValueError):
    """A URL for a service Sundown does not speak."""


@dataclass(frozen=True)
class Target:
    """One parsed URL: the service, the base the request goes to (``scheme://host[:port]``), the path and
    query after it, the service's own values (``extra``) and the URL as it may be shown."""

    service: str
    base: str
    path: str
    shown: str
    token: str | None = None  # a bearer token (Matrix, ntfy) or a basic user:password (ntfy)
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        """The full address of the request (secrets in it: never log it)."""
        return self.base + self.path


def mask(secret: str) -> str:
    """``secret`` as it may be shown: its first four characters, then an ellipsis."""
    return secret[:4] + "…" if len(secret) > 4 else "…"


def parse_notify_urls(value: str | list[str]) -> list[Target]:
    """Comma-separated (or a JSON list of) Apprise-style URLs, each for one of the six services."""
    urls = [each.strip() for each in (value if isinstance(value, list) else str(value).split(","))]
    urls = [each for each in urls if each]
    if not urls or len(urls) > MAX_URLS:
        raise ValueError("none or too many")
    targets = [parse_notify_url(each) for each in urls]
    if any(sum(1 for each in targets if each.service == service) > PER_SERVICE for service in SERVICES):
        raise ValueError("too many URLs for one service")
    return targets


def parse_notify_url(url: str) -> Target:
    """One Apprise-style URL; ``UnknownService`` naming the six for another scheme, ``ValueError`` for a
    malformed one (neither message carries a secret)."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    service = SCHEMES.get(scheme)
    if service is None:
        raise UnknownService(f"{scheme or 'a URL'}:// is not a service Sundown speaks: use {KNOWN}")
    parts = urlsplit(url)
    try:
        target = _PARSERS[scheme](parts, [unquote(each) for each in parts.path.split("/") if each])
    except (IndexError, KeyError) as error:
        raise ValueError(f"{scheme}:// URL incomplete") from error
    return target


def _slack(parts, path: list[str]) -> Target:
    tokens = [_first(parts), *path]
    channel = parts.fragment or next((each for each in tokens[3:] if each.startswith("#")), "")
    if len(tokens) < 3 or not all(tokens[:3]):
        raise ValueError("slack:// needs three tokens")
    extra = {"username": unquote(parts.username)} if parts.username else {}
    if channel:
        extra["channel"] = "#" + channel.lstrip("#")
    return Target(
        "slack",
        "https://hooks.slack.com",
        "/services/" + "/".join(quote(t) for t in tokens[:3]),
        f"slack://{tokens[0]}/{mask(tokens[1])}/{mask(tokens[2])}",
        extra=extra,
    )


def _discord(parts, path: list[str]) -> Target:
    webhook_id, token = parts.hostname or "", path[0]
    if not webhook_id.isdigit():
        raise ValueError("discord:// needs the webhook's numeric ID")
    extra = {"username": unquote(parts.username)} if parts.username else {}
    return Target(
        "discord",
        "https://discord.com",
        f"/api/webhooks/{webhook_id}/{quote(token)}",
        f"discord://{webhook_id}/{mask(token)}",
        extra=extra,
    )


def _workflows(parts, path: list[str]) -> Target:
    workflow, signature = path[0], path[1]
    port = f":{parts.port}" if parts.port else ""
    query = "?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=" + quote(signature, safe="")
    return Target(
        "msteams",
        f"https://{parts.hostname}{port}",
        f"/workflows/{quote(workflow)}/triggers/manual/paths/invoke{query}",
        f"workflows://{parts.hostname}{port}/{workflow}/{mask(signature)}",
    )


def _msteams(parts, path: list[str]) -> Target:
    team, tokens = unquote(parts.username or ""), [_first(parts), *path]
    if not team or len(tokens) < 4:
        raise ValueError("msteams:// needs team@ and four tokens")
    a, b, c, d = (quote(each) for each in tokens[:4])
    return Target(
        "msteams",
        f"https://{quote(team)}.webhook.office.com",
        f"/webhookb2/{a}/IncomingWebhook/{b}/{c}/V2{d}",
        f"msteams://{team}@{mask(tokens[0])}/…",
    )


def _telegram(parts, path: list[str]) -> Target:
    # A bot token is "123456:ABC…": urlsplit reads the digits as a host and the rest as a port.
    bot = _first(parts)
    chat = path[0]
    if ":" not in bot or len(path) != 1:
        raise ValueError("tgram:// needs a bot token and one chat ID")
    return Target(
        "telegram",
        "https://api.telegram.org",
        f"/bot{quote(bot, safe=':')}/sendMessage",
        f"tgram://{mask(bot)}/{chat}",
        extra={"chat_id": chat},
    )


def _matrix(parts, path: list[str]) -> Target:
    token = unquote(parts.password or parts.username or "")
    room = "#" + parts.fragment if parts.fragment else path[0]
    if not token or not room.startswith("!"):
        raise ValueError("matrix:// needs an access token and a room ID (!…:server)")
    scheme = "https" if parts.scheme == "matrixs" else "http"
    port = f":{parts.port}" if parts.port else ""
    return Target(
        "matrix",
        f"{scheme}://{parts.hostname}{port}",
        f"/_matrix/client/v3/rooms/{quote(room)}/send/m.room.message/",
        f"{parts.scheme}://{mask(token)}@{parts.hostname}{port}/{room}",
        token=f"Bearer {token}",
    )


def _ntfy(parts, path: list[str]) -> Target:
    query = parse_qs(parts.query)
    if not path:  # ntfy://topic: the public ntfy.sh
        base, topic = "https://ntfy.sh", parts.hostname
    else:
        port = f":{parts.port}" if parts.port else ""
        base, topic = f"{'https' if parts.scheme == 'ntfys' else 'http'}://{parts.hostname}{port}", path[0]
    if not topic:
        raise ValueError("ntfy:// needs a topic")
    token, shown_auth = None, ""
    if "token" in query:
        token, shown_auth = f"Bearer {query['token'][0]}", f"?token={mask(query['token'][0])}"
    elif parts.username:
        token = "Basic " + _basic(unquote(parts.username), unquote(parts.password or ""))
        shown_auth = f" (user {unquote(parts.username)})"
    return Target(
        "ntfy",
        base,
        "/",
        f"{parts.scheme}://{base.split('://', 1)[1]}/{topic}{shown_auth}",
        token=token,
        extra={"topic": topic},
    )


def _first(parts) -> str:
    """What stands where a host would, as written: tokens are case-sensitive, ``hostname`` lowercases."""
    return unquote(parts.netloc.rsplit("@", 1)[-1])


def _basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


_PARSERS = {
    "slack": _slack,
    "discord": _discord,
    "workflows": _workflows,
    "workflow": _workflows,
    "msteams": _msteams,
    "tgram": _telegram,
    "matrix": _matrix,
    "matrixs": _matrix,
    "ntfy": _ntfy,
    "ntfys": _ntfy,
}


class LineError(ValueError):
    """A line of an edited list of URLs that cannot be kept: its number (from 1), and whether its scheme is
    of a service Sundown does not speak (``unknown``) or the URL is incomplete or masked."""

    def __init__(self, line: int, unknown: bool = False, scheme: str = "") -> None:
        super().__init__(f"line {line}")
        self.line, self.unknown, self.scheme = line, unknown, scheme


class TooMany(ValueError):
    """More URLs than a list may hold, or more than ``PER_SERVICE`` for one service (``service``)."""

    def __init__(self, service: str = "") -> None:
        super().__init__(service or "too many")
        self.service = service


@lru_cache(maxsize=256)
def parse_stored(urls: tuple[str, ...]) -> tuple[Target, ...]:
    """URLs admins saved (each checked when saved), parsed once per process; one that no longer parses (a
    version that reads them differently) is left out rather than failing every delivery."""
    found = []
    for url in urls:
        try:
            found.append(parse_notify_url(url))
        except ValueError:
            continue
    return tuple(found)


def shown_lines(urls: Sequence[str]) -> str:
    """A saved list as an editor shows it: one URL a line, each masked (``Target.shown``)."""
    return "\n".join(target.shown for target in parse_stored(tuple(urls)))


def edited(text: str, stored: Sequence[str], besides: Sequence[Target] = ()) -> list[str]:
    """The URLs an edited list stands for. A line that is a saved URL as shown (masked) keeps that URL; any
    other line is a new URL, parsed (``LineError`` for one Sundown cannot use, a masked one included). With
    ``besides`` (the URLs that are sent to as well), at most ``PER_SERVICE`` of one service in all
    (``TooMany``)."""
    kept: dict[str, list[str]] = {}
    for url in stored:
        for target in parse_stored((url,)):
            kept.setdefault(target.shown, []).append(url)
    lines = [(number, line.strip()) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
    urls = [kept[line].pop(0) if kept.get(line) else _new_line(number, line) for number, line in lines]
    if len(urls) > MAX_URLS:
        raise TooMany()
    targets = [*besides, *(parse_notify_url(url) for url in urls)]
    for service in SERVICES:
        if sum(1 for each in targets if each.service == service) > PER_SERVICE:
            raise TooMany(service)
    return urls


def message_of(error: ValueError) -> str:
    """What an admin is told of a list ``edited`` refused (no secret in it: a line's number, a scheme)."""
    if isinstance(error, LineError) and error.unknown:
        return _(
            "Line %(line)s: %(scheme)s:// is not a service Sundown speaks. Use Slack (slack://), Discord"
            " (discord://), Microsoft Teams (workflows:// or msteams://), Telegram (tgram://), Matrix (matrix://"
            " or matrixs://) or ntfy (ntfy:// or ntfys://).",
            line=error.line,
            scheme=error.scheme[:20] or "?",
        )
    if isinstance(error, LineError):
        return _(
            "Line %(line)s is not a complete URL of one of the six services. A URL shown with its secret cut"
            " (…) is kept only as it was shown; to change it, paste it whole.",
            line=error.line,
        )
    if isinstance(error, TooMany) and error.service:
        return _(
            "At most %(n)s URLs of one service (%(service)s), counting those sent to besides.",
            n=PER_SERVICE,
            service=error.service,
        )
    return _("At most %(n)s URLs.", n=MAX_URLS)


def _new_line(number: int, line: str) -> str:
    """A line typed as a new URL, checked: ``LineError`` when it is masked or not of a service spoken."""
    if "…" in line:
        raise LineError(number)
    try:
        parse_notify_url(line)
    except UnknownService as error:
        raise LineError(number, unknown=True, scheme=line.split("://", 1)[0] if "://" in line else "") from error
    except ValueError as error:
        raise LineError(number) from error
    return line


def parse_api_bases(value: str) -> dict[str, str]:
    """``service=URL`` pairs, comma-separated: a base (``scheme://host[:port]``) per service replacing the
    one its URLs name (a proxy or gateway in front of the service)."""
    bases = {}
    for pair in (each.strip() for each in str(value).split(",") if each.strip()):
        service, _, base = pair.partition("=")
        parts = urlsplit(base.strip())
        if service.strip() not in SERVICES or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(service)
        bases[service.strip()] = base.strip().rstrip("/")
    return bases
