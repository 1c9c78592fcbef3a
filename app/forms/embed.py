"""Forms on the owner's own site: the origins each form accepts, and CORS for the script.

A form lists the origins allowed to embed it (``Form.allowed_origins``): an
exact ``scheme://host[:port]``, or ``scheme://*.example.org`` for every
subdomain of ``example.org`` (not the domain itself). A submission's origin
is its ``Origin`` header or, where a browser sends none, its ``Referer``'s.

* Sundown's own origins (``SUNDOWN_ORIGIN``) keep the session's CSRF token.
* An allowed origin needs no token and no cookie: the browser's ``Origin``
  is the proof, as for any CORS request, and a form post from another site
  carries no session anyway. The inquiry records the origin.
* Any other origin is refused (403), nothing stored.

CORS headers go only to allowed origins, only on the form's JSON endpoints
(its submissions, its ``embed`` description and its challenges), never with
credentials. ``static/embed.js`` is the script (``described`` gives it each
field); docs/embed.md says how a host page uses it.
"""

from __future__ import annotations

import logging
import unicodedata
from urllib.parse import urlsplit

from flask import Flask, current_app, render_template, request, url_for
from flask_babel import force_locale
from flask_babel import lazy_gettext as _l
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from werkzeug.exceptions import NotFound
from werkzeug.urls import iri_to_uri

from app.attachments import uploads
from app.forms import store as form_store
from app.forms.fields import Field
from app.models import Form

CORS_ENDPOINTS = frozenset({"public.submit_named_json", "public.form_embed", "public.form_challenge"})
PREFLIGHT_MAX_AGE = 600  # seconds a browser may reuse an answered preflight
MAX_ORIGINS = 20
NOT_ALLOWED = _l("This form does not accept inquiries from this site, so nothing was saved.")
# The words ``static/embed.js`` and the snippet show on another site, in the visitor's (or the form's) language.
EMBED_TEXTS = {
    "send": _l("Send inquiry"),
    "sending": _l("Sending…"),
    "optional": _l("(optional)"),
    "choose": _l("Choose…"),
    "thanks": _l("Thank you. Your inquiry has been received."),
    "errors": _l("Please correct the errors below."),
    "failed": _l("Your inquiry could not be sent. Please try again in a minute."),
    "trap": _l("Leave this field empty"),
}
AUTOCOMPLETE = {"name": "name", "email": "email", "tel": "tel", "url": "url"}
DEFAULT_PORTS = {"http": 80, "https": 443}
log = logging.getLogger(__name__)


def init_app(app: Flask) -> None:
    """Answer the form endpoints' CORS for allowed origins."""
    app.after_request(_cors)


def parse_rule(raw: str) -> str:
    """An allowed-origin rule, normalised (``https://www.example.org``, ``https://*.example.org:8443``);
    ValueError for anything else (a path, a query, a wildcard elsewhere than the first label)."""
    text = raw.strip().lower().rstrip("/")
    parts = urlsplit(text)
    host = parts.hostname or ""
    wildcard = host.startswith("*.")
    name = host[2:] if wildcard else host
    if parts.scheme not in DEFAULT_PORTS or not name or "*" in name or parts.path or parts.query or parts.fragment:
        raise ValueError(raw)
    if parts.username or parts.password or not all(label and len(label) < 64 for label in name.split(".")):
        raise ValueError(raw)
    try:
        port = parts.port
    except ValueError as error:
        raise ValueError(raw) from error
    shown_port = f":{port}" if port and port != DEFAULT_PORTS[parts.scheme] else ""
    return f"{parts.scheme}://{'*.' if wildcard else ''}{name}{shown_port}"


def _split(origin: str) -> tuple[str, str, int] | None:
    parts = urlsplit(origin.strip().lower())
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    try:
        return parts.scheme, parts.hostname, parts.port or DEFAULT_PORTS[parts.scheme]
    except ValueError:
        return None


def matches(rule: str, origin: str) -> bool:
    """Whether ``origin`` (``scheme://host[:port]``) is allowed by ``rule`` (``parse_rule``'s form)."""
    wanted, found = _split(rule.replace("*.", "", 1)), _split(origin)
    if wanted is None or found is None or wanted[0] != found[0] or wanted[2] != found[2]:
        return False
    if "://*." in rule:
        return found[1].endswith("." + wanted[1])
    return found[1] == wanted[1]


def allowed(form: Form, origin: str | None) -> bool:
    """Whether ``form`` accepts submissions from ``origin``."""
    return origin is not None and any(matches(rule, origin) for rule in form.allowed_origins or ())


def request_origin() -> str | None:
    """The request's origin: its ``Origin`` header, else its ``Referer``'s; None when it has neither
    (or the opaque ``null`` of a sandboxed page)."""
    origin = request.headers.get("Origin")
    if origin and origin != "null":
        return origin.rstrip("/")
    referrer = request.headers.get("Referer")
    if not referrer:
        return None
    parts = urlsplit(referrer)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else None


def is_own(origin: str | None) -> bool:
    """Whether ``origin`` is Sundown's own (or the request names none: a same-origin request may not)."""
    return origin is None or origin in current_app.config["ORIGINS"]


def thanks_url_ok(form: Form, url: str | None) -> bool:
    """Whether ``url`` is an ``http(s)`` address on one of the form's allowed origins that a redirect can carry."""
    if not url or not redirectable(url):
        return False
    parts = urlsplit(url)
    return parts.scheme in DEFAULT_PORTS and bool(parts.netloc) and allowed(form, f"{parts.scheme}://{parts.netloc}")


def described(field: Field) -> dict:
    """Field ``field`` as ``static/embed.js`` renders it, in the visitor's language (``/api/forms/<slug>/embed``)."""
    choices = [
        {"value": choice.value, "label": form_store.words(choice.label) or choice.value} for choice in field.choices
    ]
    description = {
        "key": field.key,
        "type": field.type,
        "label": form_store.words(field.label),
        "help": form_store.words(field.help),
        "required": field.required,
        "choices": choices,
    }
    if field.type in ("text", "email", "textarea", "tel", "url", "hidden"):
        description["maxlength"] = field.max_length()
        description["autocomplete"] = AUTOCOMPLETE.get(field.key if field.type == "text" else field.type)
    if field.type == "number":
        description.update(min=field.minimum, max=field.maximum)
    if field.type == "hidden":
        description["value"] = field.default
    if field.type == "file":
        config = current_app.config
        most, max_bytes = uploads.files_allowed(field), config["ATTACHMENT_MAX_BYTES"]
        types = config["ATTACHMENT_TYPES"]
        description.update(
            accept=",".join(types), files=most, max_bytes=max_bytes, limits=uploads.limits_text(most, max_bytes, types)
        )
    return description


def texts() -> dict[str, str]:
    """``EMBED_TEXTS`` in the request's language."""
    return {key: str(text) for key, text in EMBED_TEXTS.items()}


def snippet(form: form_store.Shown, origin: str, locale: str) -> str:
    """The block an owner pastes on their site for ``form`` (``templates/forms/snippet.html``): the
    stylesheet, the plain form and the script, in ``locale`` (the form's default language)."""
    with force_locale(locale):
        fields = [described(each) for each in form.fields]
        return render_template(
            "forms/snippet.html",
            fields=fields,
            slug=form.slug,
            origin=origin,
            action=f"{origin}{url_for('public.submit_named_form', slug=form.slug)}",
            texts=texts(),
        )


def redirectable(url: str) -> bool:
    """Whether ``url`` can be a redirect's ``Location``: ``http(s)`` with a host, no control, space, line
    separator or invisible format character (``urlsplit`` drops a line break it is given, the header
    refuses it), a valid port, and host labels that IDNA encodes (each 1 to 63 characters)."""
    if any(unicodedata.category(char)[0] in "CZ" for char in url):
        return False
    try:
        parts = urlsplit(url)
        iri_to_uri(url)
        return parts.scheme in DEFAULT_PORTS and bool(parts.hostname) and parts.port != 0
    except ValueError:  # a bad port, an IPv6 address unclosed, a label IDNA refuses (UnicodeError)
        return False


def thanks_url(form: Form, embedded: str | None) -> str | None:
    """Where a visitor goes after sending ``form`` from ``embedded`` (an allowed origin of another site; None
    from Sundown's own pages): the form's thank-you address when it has one on an allowed origin, else None
    (Sundown's page). A stored address no redirect can carry (saved before the editor refused such) is
    ignored with a warning, so every submission still gets its answer."""
    stored = form.thanks_url
    if embedded is None or not stored:
        return None
    if not redirectable(stored):
        log.warning(
            "form %s: its thank-you address cannot be redirected to, so Sundown's page is shown; "
            "save the form's address again in its editor",
            form.slug,
        )
        return None
    return stored if thanks_url_ok(form, stored) else None


def _cors(response):
    if request.endpoint not in CORS_ENDPOINTS:
        return response
    response.vary.add("Origin")
    origin = request.headers.get("Origin")
    try:
        form = form_store.page_form((request.view_args or {}).get("slug")).form
    except (NotFound, DBAPIError, PoolTimeout):
        return response
    if not origin or not allowed(form, origin):
        return response
    response.headers["Access-Control-Allow-Origin"] = origin
    if request.method == "OPTIONS":
        response.headers["Access-Control-Allow-Methods"] = "GET, POST"
        response.headers["Access-Control-Allow-Headers"] = "Content-Type"
        response.headers["Access-Control-Max-Age"] = str(PREFLIGHT_MAX_AGE)
    return response
