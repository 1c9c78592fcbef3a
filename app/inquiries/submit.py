"""One intake: a submission checked and stored, whichever way it came (the page form, the JSON API, a form
embedded on another site).

``submit`` is given what the adapter received and judged (``app.web.public``:
the form, the fields, the files, the spam verdict, the allowed origin of
another site it was posted from, and who sent it) and returns what became of
it, never a response:

* ``Invalid(errors, status)``: not an object, or the field rules (``app.forms.answers``) or the file limits
  (``app.attachments.uploads``) refused it: 422, or 413/415 for files; nothing stored. Refused files count
  against the client's own limits (a flood of uploads is a flood); refused fields do not.
* ``Discarded``: the honeypot (``app.inquiries.spam``); nothing stored, counted against the client's own
  limits only: it stores nothing, so it spends none of the site's.
* ``Limited(wait)``: over a rate limit; the hit is committed alone (refused attempts count).
* ``Invalid({"_": ...}, 413 or 507)``: its files would pass the client's day's budget of stored bytes
  (413), the site's (507), or leave less free disk than the floor (507); nothing stored, the text kept by
  the adapter.
* ``Accepted(inquiry_id, status)``: filed in the inbox or the spam folder, as the verdict said once the
  content checks were added (``spam.weigh``), and the challenge allowed (``app.inquiries.store``).

In that order. A saved inquiry takes one write transaction: the client's
hit, its files' budgets, the site-wide hit, then the inquiry with everything
it writes, so on SQLite a submission takes the write lock once. The site-wide
limit is counted only for what is stored: a client over its own limit is
refused before it, so one client flooding cannot spend the site's budget and
lock out everyone else.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask import current_app
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from sqlalchemy.orm import Session
from werkzeug.datastructures import FileStorage, MultiDict

from app import notify
from app.attachments import uploads
from app.core import db, metrics, ratelimit
from app.forms import answers as form_answers
from app.forms.store import Shown
from app.inquiries import spam, store
from app.models import InquiryStatus

NOT_AN_OBJECT = _l("Send a JSON object.")
DAY = 86400


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


def submit(
    form: Shown,
    data: Any,
    files: MultiDict[str, FileStorage],
    verdict: spam.Verdict,
    origin: str | None,
    sender: Sender,
) -> Result:
    """What becomes of a submission to ``form``: ``data`` its fields (a mapping; anything else is invalid),
    ``files`` its files by field (a MultiDict of FileStorage), ``verdict`` spam's, ``origin`` the allowed
    site it was posted from (None for this one)."""
    if not isinstance(data, Mapping):
        return _invalid({"_": str(NOT_AN_OBJECT)}, 422)
    if verdict.discard:
        wait = _hit_client(sender.client)
        if wait is not None:
            return _limited(wait)
        metrics.count_inquiry("honeypot")
        return Discarded()
    clean, errors = form_answers.check(form.fields, data)
    checked = _files_of(form, files, clean)
    if errors or checked.errors:
        if checked.errors:
            _hit_client(sender.client)
        return _invalid({**errors, **checked.errors}, checked.status or 422)
    extra = form_answers.extras(form.fields, data)
    answers = form_answers.stored(
        form.fields, form.form.email_field, clean, sender.locale, current_app.config["DEFAULT_LOCALE"], extra
    )
    with db.reading() as session:
        verdict = spam.weigh(session, verdict, _text_of(answers, extra), answers["email"])
    filed = _save(
        store.new(form.form, answers, sender.locale, sender.user_agent, origin), verdict, checked.uploads, sender.client
    )
    if not isinstance(filed, store.Filed):
        return filed
    spam.note_filed(verdict, filed.status)
    metrics.count_inquiry("accepted" if filed.status == InquiryStatus.INBOX else "spam")
    return Accepted(filed.inquiry_id, filed.status)


def refused(sender: Sender) -> int | None:
    """Count a post refused before ``submit`` (a body over the upload limit, a site the form does not
    list) against the client's own limits; the wait when it is over them."""
    return _hit_client(sender.client)


def _text_of(answers: dict[str, Any], extra: dict[str, str]) -> str:
    """The words the content checks read: every answer's text, each once (the message may hold others)."""
    message = answers["message"]
    others = [answers["name"], *extra.values()]
    others += [entry["value"] for entry in answers["answers"] if isinstance(entry.get("value"), str)]
    return "\n".join([message, *dict.fromkeys(part for part in others if part and part not in message)])


def _save(
    inquiry: store.NewInquiry, verdict: spam.Verdict, files: list[uploads.Upload], client: str
) -> store.Filed | Limited | Invalid:
    """The inquiry and, within the limits' hits and budgets, its commit: one write transaction.

    The hits come after the inquiry, in one statement with the notifications' hourly cap: their rows are
    shared (every submission counts on the site-wide row and the cap's, every one from an address on its
    row), and PostgreSQL holds a row lock until the transaction ends, so counted first they made each
    submission wait for the whole transaction of every other. Counted last, in one statement (a round trip
    more under a hot row was a wait more for every other submission), a row is locked only until the commit
    that follows. A client already over its limit is refused first, by a read
    made before the write lock is taken (on SQLite every moment a submission holds it is one no other writer
    has), so a flood's refusals write no inquiry. Over a limit or a budget the inquiry goes back to its savepoint
    and the hits are counted again alone (``_refused``), as if nothing had been saved.
    """
    limits = ratelimit.parse_limits(current_app.config["SUBMIT_RATE_LIMITS"])
    with db.reading() as session:  # rolled back: no commit, and on SQLite no write lock
        already_over = ratelimit.over("submit", client, limits, session) is not None
    with db.transaction(write=True) as session:
        if already_over:
            return _refused(session, client, None)
        attempt = session.begin_nested()
        filed = store.save(session, inquiry, verdict, files)
        refusal = _file_budgets(session, client, sum(upload.size for upload in files))
        if refusal is None and _hit_limits(session, client, notify.cap_counted_last(session)) is None:
            attempt.commit()
            return filed
        attempt.rollback()
        return _refused(session, client, refusal)


def _refused(session: Session, client: str, refusal: Invalid | None) -> Limited | Invalid:
    """The limits' hits counted alone (after the savepoint's rollback, again): the client's, then the site's
    unless the client is over its own (it counts toward the site's no more); ``refusal`` when a budget refused,
    else the wait."""
    wait = _hit_client(client, session)
    if wait is None and refusal is None:
        wait = _hit_site(session)
    if refusal is not None:
        return refusal
    return _limited(wait if wait is not None else 1)


def _hit_limits(session: Session, client: str, also: list[ratelimit.Added]) -> int | None:
    """Count a submission against the client's limits and the site's, and add ``also`` (the notifications'
    hourly cap), in one statement of ``session``'s transaction: the last before its commit, so the rows
    every submission shares are locked only for that commit. The wait when over a limit."""
    return ratelimit.hit_all([_client_counter(client), _site_counter()], session, also)


def _hit_site(session: Session) -> int | None:
    """Count a submission against the site's limits, in ``session``'s transaction; the wait when over."""
    return ratelimit.hit_all([_site_counter()], session)


def _site_counter() -> tuple[str, str, list[ratelimit.Limit]]:
    return "submit-all", "all", ratelimit.parse_limits(current_app.config["SUBMIT_GLOBAL_RATE_LIMITS"])


def _client_counter(client: str) -> tuple[str, str, list[ratelimit.Limit]]:
    return "submit", client, ratelimit.parse_limits(current_app.config["SUBMIT_RATE_LIMITS"])


def _file_budgets(session: Session, client: str, size: int) -> Invalid | None:
    """Take ``size`` bytes of files from the client's and the site's budgets for the day (counted in KiB),
    or the refusal: 413 for the client's, 507 for the site's or the free-disk floor."""
    if not size:
        return None
    config = current_app.config
    kib = math.ceil(size / 1024)
    if (
        ratelimit.take(
            "file-kib", client, kib, ratelimit.Limit(config["SUBMIT_CLIENT_FILE_BYTES"] // 1024, DAY), session
        )
        is not None
    ):
        return _invalid(
            {
                "_": _(
                    "You have sent as many files today as this site takes from one sender, so "
                    "nothing was saved. Send your text without the files, or try again tomorrow."
                )
            },
            413,
        )
    if (
        _free_disk() - size < config["ATTACHMENT_MIN_FREE_BYTES"]
        or ratelimit.take("file-kib", "all", kib, ratelimit.Limit(config["SUBMIT_FILE_BYTES"] // 1024, DAY), session)
        is not None
    ):
        return _invalid(
            {
                "_": _(
                    "This site cannot store more files right now, so nothing was saved. Send your "
                    "text without the files, or try again later."
                )
            },
            507,
        )
    return None


def _free_disk() -> int:
    """Free bytes where the files go: beside SQLite's database file, else in the instance folder."""
    url = db.get_engine().url
    where = (
        Path(url.database).parent
        if url.get_backend_name() == "sqlite" and url.database
        else Path(current_app.instance_path)
    )
    return shutil.disk_usage(where if where.exists() else Path.cwd()).free


def _files_of(form: Shown, files: MultiDict[str, FileStorage], clean: dict) -> uploads.Checked:
    """The submission's files checked (``app.attachments.uploads``); each file field's answer, their names."""
    config = current_app.config
    checked = uploads.check(form.fields, files, config["ATTACHMENT_MAX_BYTES"], config["ATTACHMENT_TYPES"])
    for each in form.fields:
        if each.type == "file":
            clean[each.key] = [upload.name for upload in checked.uploads if upload.field_key == each.key]
    return checked


def _hit_client(client: str, session: Session | None = None) -> int | None:
    """Count a submission against the client's own limits (in ``session``'s transaction, else its own);
    the wait when over."""
    return ratelimit.hit_all([_client_counter(client)], session)


def _invalid(errors: dict[str, str], status: int) -> Invalid:
    metrics.count_inquiry("invalid")
    return Invalid(errors, status)


def _limited(wait: int) -> Limited:
    metrics.count_inquiry("rate_limited")
    return Limited(wait)
