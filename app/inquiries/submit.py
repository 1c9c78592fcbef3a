"""One intake: a submission checked and stored, whichever way it came (the page form, the JSON API, a form
embedded on another site).

``submit`` is given what the adapter received and judged (``app.web.public``:
the form, the fields, the files, the spam verdict, the allowed origin of
another site it was posted from, and who sent it) and returns what became of
it, never a response:

* ``Invalid(errors, status)``: not an object, or the field rules (``app.forms.answers``) or the file limits
  (``app.attachments.uploads``) refused it: 422, or 413/415 for files; nothing stored, not counted.
* ``Discarded``: the honeypot (``app.inquiries.spam``); nothing stored, but counted against the rate limits.
* ``Limited(wait)``: over a rate limit; the hit is committed alone (refused attempts count).
* ``Accepted(inquiry_id, status)``: filed in the inbox or the spam folder, as the verdict said and the
  challenge allowed (``app.inquiries.store``).

In that order. A saved inquiry takes one write transaction: the rate limits'
hit, then the inquiry with everything it writes, so on SQLite a submission
takes the write lock once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flask import current_app
from flask_babel import lazy_gettext as _l
from sqlalchemy.orm import Session

from app.attachments import uploads
from app.core import db, metrics, ratelimit
from app.forms import answers as form_answers
from app.forms.store import Shown
from app.inquiries import spam, store
from app.models import InquiryStatus

NOT_AN_OBJECT = _l("Send a JSON object.")


@dataclass(frozen=True)
class Sender:
    """Who sent a submission: their language, their rate limits' key (``ratelimit.client_id``), their browser."""

    locale: str
    client: str
    user_agent: str | None = None


@dataclass(frozen=True)
class Accepted:
    """Saved, in the inbox or (answered the same) the spam folder."""

    inquiry_id: int
    status: InquiryStatus


@dataclass(frozen=True)
class Discarded:
    """Thrown away unstored (the honeypot), answered as if saved."""


@dataclass(frozen=True)
class Invalid:
    """Refused for what it holds: a message per field (``_`` for the whole), and the status (422, 413, 415)."""

    errors: dict[str, str]
    status: int


@dataclass(frozen=True)
class Limited:
    """Refused for coming too often: seconds to wait (429)."""

    wait: int


Result = Accepted | Discarded | Invalid | Limited


def submit(form: Shown, data: Any, files: Mapping, verdict: spam.Verdict, origin: str | None,
           sender: Sender) -> Result:
    """What becomes of a submission to ``form``: ``data`` its fields (a mapping; anything else is invalid),
    ``files`` its files by field (a MultiDict of FileStorage), ``verdict`` spam's, ``origin`` the allowed
    site it was posted from (None for this one)."""
    if not isinstance(data, Mapping):
        return _invalid({"_": str(NOT_AN_OBJECT)}, 422)
    if verdict.discard:
        wait = _hit(sender.client)
        if wait is not None:
            return _limited(wait)
        metrics.count_inquiry("honeypot")
        return Discarded()
    clean, errors = form_answers.check(form.fields, data)
    checked = _files_of(form, files, clean)
    if errors or checked.errors:
        return _invalid({**errors, **checked.errors}, checked.status or 422)
    answers = form_answers.stored(form.fields, form.form.email_field, clean, sender.locale,
                                  current_app.config["DEFAULT_LOCALE"])
    filed = _save(store.new(form.form, answers, sender.locale, sender.user_agent, origin), verdict,
                  checked.uploads, sender.client)
    if isinstance(filed, Limited):
        return filed
    spam.note_filed(verdict, filed.status)
    metrics.count_inquiry("accepted" if filed.status == InquiryStatus.INBOX else "spam")
    return Accepted(filed.inquiry_id, filed.status)


def _save(inquiry: store.NewInquiry, verdict: spam.Verdict, files: list[uploads.Upload],
          client: str) -> store.Filed | Limited:
    """The rate limits' hit and, unless over a limit, the inquiry: one write transaction. Over a limit the
    hit is committed alone."""
    with db.transaction(write=True) as session:
        wait = _hit(client, session)
        if wait is None:
            return store.save(session, inquiry, verdict, files)
    return _limited(wait)


def _files_of(form: Shown, files: Mapping, clean: dict) -> uploads.Checked:
    """The submission's files checked (``app.attachments.uploads``); each file field's answer, their names."""
    config = current_app.config
    checked = uploads.check(form.fields, files, config["ATTACHMENT_MAX_BYTES"], config["ATTACHMENT_TYPES"])
    for each in form.fields:
        if each.type == "file":
            clean[each.key] = [upload.name for upload in checked.uploads if upload.field_key == each.key]
    return checked


def _hit(client: str, session: Session | None = None) -> int | None:
    """Count a submission against the limits (in ``session``'s transaction, else its own); the wait when over."""
    config = current_app.config
    return ratelimit.hit_all([
        ("submit", client, ratelimit.parse_limits(config["SUBMIT_RATE_LIMITS"])),
        # From every client together: a flood from endless addresses cannot grow the database without bound.
        ("submit-all", "all", ratelimit.parse_limits(config["SUBMIT_GLOBAL_RATE_LIMITS"])),
    ], session)


def _invalid(errors: dict[str, str], status: int) -> Invalid:
    metrics.count_inquiry("invalid")
    return Invalid(errors, status)


def _limited(wait: int) -> Limited:
    metrics.count_inquiry("rate_limited")
    return Limited(wait)
