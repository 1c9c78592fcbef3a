"""The acknowledgement: a short e-mail to a person whose inquiry was filed in the inbox (off by default).

Only for an inquiry that passed the proof-of-work and went to the inbox (never spam, the honeypot or a
refused one), in the language the person used, from the form's text for that language (an admin's, or
the shipped one) with ``{name}``, ``{form}`` and ``{date}`` filled in, and their message below only when
the admin chose it, and then only to an address that has written to us before (a message of its in a
thread) unless the admin also chose to quote to new addresses: a stranger's address typed into the form
never receives the visitor's text. Queued in the submission's own write transaction (``sending.queue``).

A form that mails any address it is given could mail-bomb strangers, so three caps hold:

* one acknowledgement per mailbox per ``SUNDOWN_ACK_PER_ADDRESS_SECONDS`` (an hour): one atomic upsert
  on the keyed hash of the address's mailbox key (``app.inquiries.addresses``: case, ``+tag`` and a
  provider's dots aside) in ``rate_limits``, taken only when the last one has expired, so two
  submissions racing on either database send one, however the address is spelt;
* ``SUNDOWN_ACK_PER_CLIENT_LIMITS`` per client (its network, as the submission limits count it), so
  one sender cannot walk a list of addresses;
* ``SUNDOWN_ACK_HOURLY_CAP`` from all addresses together in each clock hour (a fixed-window counter).

Past either the inquiry is saved as always, without an acknowledgement; ``sundown_acknowledgements_total``
counts each outcome.
"""

from __future__ import annotations

from datetime import timedelta

from flask import current_app
from flask_babel import force_locale
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from sqlalchemy.orm import Session

from app.conversations import references, store
from app.core import clock, dialect, i18n, metrics, ratelimit
from app.forms import store as form_store
from app.inquiries.addresses import mailbox_key
from app.models import Form, RateLimit, ReplyKind
from app.people import lookup
from app.replies import sending

PLACEHOLDERS = ("{name}", "{form}", "{date}")
TEXT_MAX = 2000
DEFAULT_TEXT = _l(
    "Hello {name},\n\nthank you for writing to us through the form “{form}” on {date}. "
    "We have received your message and will answer as soon as we can."
)


def text_for(form: Form, locale: str) -> str:
    """The form's acknowledgement text in ``locale``: the admin's, else the shipped one in that language."""
    own = (form.ack_texts or {}).get(locale)
    if own:
        return own
    with force_locale(locale):
        return str(DEFAULT_TEXT)


def fill(text: str, name: str, form_title: str, date: str) -> str:
    """``text`` with its placeholders replaced; any other brace is left as written."""
    for placeholder, value in zip(PLACEHOLDERS, (name, form_title, date), strict=True):
        text = text.replace(placeholder, value)
    return text


def queue_for(session: Session, inquiry_id: int, form: Form, values: dict, locale: str) -> str | None:
    """Queue the acknowledgement of a new inbox inquiry in the submission's transaction, if the form has
    it on, the person gave an address and the caps allow; the outcome counted (None: off or no address)."""
    if not form.ack_enabled or not values.get("email"):
        return None
    outcome = _capped(session, values["email"])
    if outcome is None:
        quote = form.ack_include_message and (form.ack_quote_new or store.has_written(session, values["email"]))
        subject, body = _compose(form, values, locale, quote)
        reply_to = references.reply_address(inquiry_id) or current_app.config["REPLY_TO"]
        sending.queue(session, inquiry_id, ReplyKind.ACK, subject, body, locale, reply_to)
        outcome = "queued"
    metrics.count_acknowledgement(outcome)
    return outcome


def _compose(form: Form, values: dict, locale: str, quote: bool) -> tuple[str, str]:
    with force_locale(locale):
        title = form_store.words(form.title)
        body = fill(text_for(form, locale), values.get("name") or "", title, i18n.local_date(clock.now()))
        if quote:
            body += (
                "\n\n"
                + _("Your message:")
                + "\n\n"
                + "\n".join(f"> {line}" for line in (values.get("message") or "").splitlines())
            )
        return _("We received your message: %(form)s", form=title), body + "\n"


def _capped(session: Session, address: str) -> str | None:
    """``address_capped``, ``client_capped`` or ``hourly_capped`` when a cap holds it back; None when it may go
    (counted). The address is keyed by its mailbox (``mailbox_key``: case, ``+tag``, a provider's dots), so
    ``Ada+1@…``, ``ADA+2@…`` are one address to the cap."""
    if not _claim_address(session, lookup.email_hash(mailbox_key(address) or address)):
        return "address_capped"
    per_client = ratelimit.parse_limits(current_app.config["ACK_PER_CLIENT_LIMITS"])
    if ratelimit.hit("ack-client", ratelimit.client_id(), per_client, session) is not None:
        return "client_capped"
    cap = [ratelimit.Limit(current_app.config["ACK_HOURLY_CAP"], 3600)]
    if ratelimit.hit("ack-all", "all", cap, session) is not None:
        return "hourly_capped"
    return None


def _claim_address(session: Session, key: str) -> bool:
    """Take this address's acknowledgement for the next interval, unless the last one's has not expired."""
    now = clock.now()
    until = now + timedelta(seconds=current_app.config["ACK_PER_ADDRESS_SECONDS"])
    statement = dialect.upsert(session, RateLimit).values(key=f"ack-address:{key}", count=1, expires_at=until)
    statement = statement.on_conflict_do_update(
        index_elements=[RateLimit.key],
        set_={"count": 1, "expires_at": until},
        where=RateLimit.expires_at <= now,
    ).returning(RateLimit.key)
    return session.execute(statement).first() is not None
