"""The public side: the inquiry form, the JSON API, the challenge, privacy and health pages.

Both submission views receive the body whole first (``app.web.intake``), so nothing
is stored from a body that did not fully arrive. The form answers every
refusal with the form again and a message in words, keeping the visitor's
text whenever it was received.

A submission passes, in order: the honeypot (discarded, but counted), the
field rules (422; not counted), the rate limit (429), then ``app.inquiries.spam``'s
verdict, which files it in the inbox or the spam folder and never refuses it.
"""

from __future__ import annotations

from typing import NoReturn

from flask import Blueprint, current_app, g, jsonify, redirect, render_template, request, url_for
from flask_babel import get_locale
from flask_babel import lazy_gettext as _l
from flask_wtf.csrf import CSRFError
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session
from werkzeug.exceptions import Forbidden, HTTPException, NotFound, TooManyRequests, UnsupportedMediaType

from app import cleanup, notify
from app.attachments import store as attachment_store
from app.attachments import uploads
from app.core import clock, db, i18n, metrics, ratelimit
from app.forms import answers as form_answers
from app.forms import embed
from app.forms import store as form_store
from app.inquiries import retention, spam
from app.models import InquiryStatus
from app.people import lookup
from app.replies import ack
from app.web import errors, intake
from app.web.security import csrf

bp = Blueprint("public", __name__)

HONEYPOT = "website"
PAGE_FIELDS = frozenset({HONEYPOT, "csrf_token", spam.FIELD, spam.RENDERED_FIELD})  # the page's, not the visitor's

# What the form says when it refuses a submission: whole sentences, translated when shown.
TOO_LARGE = _l("Your inquiry is too large to send (the limit is {kib} KB), so nothing was saved, "
               "and your text could not be kept: please shorten it and send it again.")
NOT_RECEIVED = _l("Your inquiry did not arrive complete (the connection may have broken off), so nothing "
                  "was saved, and your text could not be kept: please type it again and send it.")
EXPIRED = _l("The form had expired or was not sent from this site, so nothing was saved. "
             "Your text is kept below: send it again.")
RATE_LIMITED = _l("{refusal} Your text is kept below.")
UNAVAILABLE = _l("The inbox cannot save inquiries right now, so nothing was saved. "
                 "Your text is kept below: please send it again in a minute.")
NOT_JSON_TYPE = _l("Send the inquiry as JSON (Content-Type: application/json).")
CROSS_ORIGIN = _l("Cross-origin requests are not accepted.")
NOT_AN_OBJECT = _l("Send a JSON object.")
# The words ``static/embed.js`` shows on another site, in the visitor's language.
EMBED_TEXTS = {
    "send": _l("Send inquiry"), "sending": _l("Sending…"), "optional": _l("(optional)"), "choose": _l("Choose…"),
    "thanks": _l("Thank you. Your inquiry has been received."),
    "errors": _l("Please correct the errors below."),
    "failed": _l("Your inquiry could not be sent. Please try again in a minute."),
}
# The words of the site's own form (migration 0009), so the catalogs translate them (``form_store.words``).
SHIPPED_WORDS = (_l("Contact"), _l("We read every message and answer by email."), _l("Your name"),
                 _l("Email address"), _l("Message"))


@bp.get("/")
def inquiry_form():
    """The site's own form."""
    return _form_page({}, {})


@bp.get("/f/<slug>")
def named_form(slug: str):
    """Form ``slug``; 404 when there is none or it is disabled."""
    form_store.page_form(slug=slug)
    return _form_page({}, {})


@bp.get("/api/challenge")
def challenge():
    """A fresh proof-of-work challenge in the ALTCHA format (``app.inquiries.spam``); never cached."""
    response = jsonify(spam.issue())
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/api/forms/<slug>/challenge")
def form_challenge(slug: str):
    """A fresh proof-of-work challenge for form ``slug``, as ``/api/challenge`` (CORS for its allowed sites)."""
    form_store.page_form(slug=slug)
    return challenge()


@bp.get("/api/forms/<slug>/embed")
def form_embed(slug: str):
    """What ``static/embed.js`` needs to render or enhance form ``slug`` on another site, in the visitor's
    language: its fields, a render time for the time trap, a challenge, and the words the script shows."""
    form = form_store.page_form(slug=slug)
    origin = current_app.config["ORIGIN"]
    response = jsonify(
        form=form.slug, title=form.title, description=form.description, lang=i18n.language_tag(),
        action=f"{origin}{url_for('public.submit_named_json', slug=form.slug)}",
        page=f"{origin}{url_for('public.named_form', slug=form.slug)}",
        fields=[_embedded_field(each) for each in form.fields], rendered=spam.form_token(),
        challenge=spam.issue(), challenge_url=f"{origin}{url_for('public.form_challenge', slug=form.slug)}",
        challenge_ttl=current_app.config["POW_TTL"], texts={key: str(text) for key, text in EMBED_TEXTS.items()},
    )
    response.headers["Cache-Control"] = "no-store"
    return response


def _embedded_field(field) -> dict:
    described = {"key": field.key, "type": field.type, "label": form_store.words(field.label),
                 "help": form_store.words(field.help), "required": field.required,
                 "choices": [{"value": c.value, "label": form_store.words(c.label) or c.value} for c in field.choices]}
    if field.type in ("text", "email", "textarea", "tel", "url", "hidden"):
        described["maxlength"] = field.max_length()
    if field.type == "number":
        described.update(min=field.minimum, max=field.maximum)
    if field.type == "hidden":
        described["value"] = field.default
    if field.type == "file":
        config = current_app.config
        most, max_bytes = uploads.files_allowed(field), config["ATTACHMENT_MAX_BYTES"]
        types = config["ATTACHMENT_TYPES"]
        described.update(accept=",".join(types), files=most, max_bytes=max_bytes,
                         limits=uploads.limits_text(most, max_bytes, types))
    return described


@bp.post("/")
@csrf.exempt  # checked in the view, once the whole body has arrived
@intake.receives_itself
def submit_form():
    """Save an inquiry to the site's own form and redirect to the thank-you page, or show the form again."""
    return _submit_page(None)


@bp.post("/f/<slug>")
@csrf.exempt  # checked in the view, once the whole body has arrived
@intake.receives_itself
def submit_named_form(slug: str):
    """Save an inquiry to form ``slug``, as ``submit_form`` does."""
    return _submit_page(slug)


def _submit_page(slug: str | None):
    """Save a form inquiry and redirect to the thank-you page, or show the form again.

    422 shows the errors per field. 400 (expired form), 429 and 503 keep the
    visitor's text; a body that was too large (413) or did not arrive whole
    (400) cannot be kept, and the form says so. An unknown or disabled form
    is 404, its page keeping the visitor's text. From another site the form
    must allow it (``app.forms.embed``): then no CSRF token is needed, and the
    visitor goes on to the form's thank-you address; otherwise 403, nothing
    stored, the text kept.
    """
    try:
        _receive(slug)
        token = request.form.get(spam.RENDERED_FIELD)
    except HTTPException as refusal:
        return _form_refused(refusal, {}, _lost_message(refusal))
    try:
        form = form_store.page_form(slug=slug)
    except NotFound as refusal:
        return _missing_form(refusal)
    except (DBAPIError, PoolTimeout) as error:
        return _missing_form(errors.database_unavailable(error), str(UNAVAILABLE))
    values = form_answers.raw_values(form.fields, request.form)
    origin = embed.request_origin()
    embedded = None if embed.is_own(origin) else origin
    if embedded is not None and not embed.allowed(form.form, embedded):
        metrics.count_inquiry("invalid")
        return _missing_form(Forbidden(), str(embed.NOT_ALLOWED))
    try:
        return _accept_form(form, values, token, embedded)
    except CSRFError as refusal:
        return _form_refused(refusal, values, str(EXPIRED), token)
    except TooManyRequests as refusal:
        return _form_refused(refusal, values, RATE_LIMITED.format(refusal=refusal.description), token)
    except (DBAPIError, PoolTimeout) as error:
        return _form_refused(errors.database_unavailable(error), values, str(UNAVAILABLE), token)


@bp.post("/api/inquiries")
@csrf.exempt
@intake.receives_itself
def submit_json():
    """Save a JSON inquiry to the site's own form: 201 ``{"ok": true}``, or 422 with an error per field.

    A body that is not whole, too large or not JSON is refused (400, 413)
    before anything is stored. The solution travels in the key ``altcha``;
    without a valid one the inquiry is filed as spam, with the same answer.
    """
    return _submit_json(None)


@bp.post("/api/forms/<slug>/inquiries")
@csrf.exempt
@intake.receives_itself
def submit_named_json(slug: str):
    """Save a JSON inquiry to form ``slug``, as ``submit_json`` does; 404 for an unknown or disabled form.

    A form with a file field also takes ``multipart/form-data``: its answers as fields, its files as files,
    answered in JSON the same way (413, 415 or 422 with an error per field for files refused)."""
    return _submit_json(slug)


def _submit_json(slug: str | None):
    with_files = request.mimetype == "multipart/form-data" and _takes_files(slug)
    if not request.is_json and not with_files:
        raise UnsupportedMediaType(str(NOT_JSON_TYPE))
    form = form_store.page_form(slug=slug)
    origin = request.headers.get("Origin")
    embedded = None if embed.is_own(origin) else origin
    if embedded is not None and not embed.allowed(form.form, embedded):
        raise Forbidden(str(embed.NOT_ALLOWED) if slug else str(CROSS_ORIGIN))
    if with_files:
        _receive(slug)
    data = request.form if with_files else intake.json_body()
    if not isinstance(data, dict):
        metrics.count_inquiry("invalid")
        return jsonify(ok=False, errors={"_": str(NOT_AN_OBJECT)}), 422
    if data.get(HONEYPOT):
        _limit_submissions()
        metrics.count_inquiry("honeypot")
        return jsonify(ok=True), 201
    clean, field_errors = form_answers.check(form.fields, data)
    files = _files_of(form, clean)
    if field_errors or files.errors:
        metrics.count_inquiry("invalid")
        return jsonify(ok=False, errors={**field_errors, **files.errors}), files.status or 422
    _save(form, clean, spam.check_solution(data.get(spam.FIELD)), embedded, files.uploads)
    cleanup.trigger("inquiry_api")
    return jsonify(ok=True), 201


@bp.get("/embed.js")
def embed_script():
    """The script a host page loads to render or enhance a form (``static/embed.js``); cached an hour."""
    return _static_for_other_sites("embed.js")


@bp.get("/embed.css")
def embed_style():
    """The optional stylesheet for embedded forms, themed by CSS custom properties (``static/embed.css``)."""
    return _static_for_other_sites("embed.css")


def _static_for_other_sites(name: str):
    response = current_app.send_static_file(name)
    response.headers["Cache-Control"] = "public, max-age=3600"
    response.headers["Cross-Origin-Resource-Policy"] = "cross-origin"
    response.headers["Access-Control-Allow-Origin"] = "*"  # the same file for every site, never credentials
    return response


@bp.get("/thanks")
def thanks():
    """The page shown after a successful submission."""
    return render_template("public/thanks.html")


@bp.get("/privacy")
def privacy():
    """How long inquiries and spam are kept, in plain words."""
    session = db.get_session()
    days, spam_days = retention.retention_days(session), retention.spam_retention_days(session)
    own = [(form_store.words(form.title), form.retention_days or days, form.spam_retention_days,
            form.retention_clock == retention.Clock.LAST_MESSAGE)
           for form in form_store.all_forms(session)
           if form.enabled and (form.retention_days or form.spam_retention_days
                                or form.retention_clock == retention.Clock.LAST_MESSAGE)]
    return render_template("public/privacy.html", retention_days=days, spam_retention_days=spam_days,
                           own_retention=own)


def _accept_form(form: form_store.Shown, values: dict, token: str | None, embedded: str | None):
    """``embedded``: the allowed origin of another site the form was posted from (no CSRF token then)."""
    if embedded is None:
        csrf.protect()
    if request.form.get(HONEYPOT):
        _limit_submissions()
        metrics.count_inquiry("honeypot")
        return redirect(_thanks_url(form, embedded), 303)
    clean, field_errors = form_answers.check(form.fields, request.form)
    files = _files_of(form, clean)
    if field_errors or files.errors:
        metrics.count_inquiry("invalid")
        shown = _form_page(values, {**field_errors, **files.errors}, token=token, back=_back_link(form, embedded))
        return shown, files.status or 422
    _save(form, clean, spam.judge_form(request.form.get(spam.FIELD), token), embedded, files.uploads)
    cleanup.trigger("inquiry_form")
    return redirect(_thanks_url(form, embedded), 303)


def _receive(slug: str | None) -> None:
    """Receive the body whole: with room for files when it is a form's upload (``app.attachments``)."""
    if request.mimetype == "multipart/form-data" and _takes_files(slug):
        intake.receive_with_files(2 * current_app.config["ATTACHMENT_MAX_BYTES"])
    else:
        intake.receive()


def _takes_files(slug: str | None) -> bool:
    """Whether form ``slug`` has a file field; False when it is not there or cannot be read (refused later)."""
    try:
        return any(each.type == "file" for each in form_store.page_form(slug=slug).fields)
    except (NotFound, DBAPIError, PoolTimeout):
        return False


def _files_of(form: form_store.Shown, clean: dict) -> uploads.Checked:
    """The submission's files checked (``app.attachments.uploads``); each file field's answer, their names."""
    config = current_app.config
    checked = uploads.check(form.fields, request.files, config["ATTACHMENT_MAX_BYTES"], config["ATTACHMENT_TYPES"])
    for each in form.fields:
        if each.type == "file":
            clean[each.key] = [upload.name for upload in checked.uploads if upload.field_key == each.key]
    return checked


def _thanks_url(form: form_store.Shown, embedded: str | None) -> str:
    """The form's own thank-you address for a submission from another site, if it is on an allowed
    origin; else Sundown's. Never an address the request names."""
    stored = form.form.thanks_url
    if embedded is not None and embed.thanks_url_ok(form.form, stored):
        return stored
    return url_for("public.thanks")


def _back_link(form: form_store.Shown, embedded: str | None) -> str | None:
    """The page of another site the visitor came from, for a link back (its origin allowed)."""
    referrer = request.headers.get("Referer")
    return referrer if embedded is not None and embed.thanks_url_ok(form.form, referrer) else None


def _form_page(values: dict, field_errors: dict[str, str], notice: str | None = None,
               token: str | None = None, back: str | None = None) -> str:
    """The request's form; a re-shown one keeps the first render time, so the time trap counts from it."""
    form = g.get("sundown_form") or form_store.page_form()
    return render_template(
        "public/form.html", form=form, values=values, errors=field_errors, notice=notice,
        rendered=spam.carried_over(token), labels=form.labels, back=back,
    )


def _missing_form(refusal: HTTPException, notice: str | None = None):
    """A form that is not there or disabled (404), or unreadable (503): what the visitor typed, kept."""
    kept = "\n\n".join(value for key, value in request.form.items(multi=True)
                        if key not in PAGE_FIELDS and value.strip())
    headers = [(k, v) for k, v in refusal.get_headers() if k.lower() != "content-type"]
    return render_template("public/no_form.html", kept=kept, notice=notice), refusal.code, headers


def _lost_message(refusal: HTTPException) -> str:
    if refusal.code == 413:
        return TOO_LARGE.format(kib=current_app.config["MAX_CONTENT_LENGTH"] // 1024)
    return str(NOT_RECEIVED)


def _form_refused(refusal: HTTPException, values: dict[str, str], notice: str, token: str | None = None):
    """The form again with ``notice``, the refusal's status and headers (``Retry-After``)."""
    headers = [(k, v) for k, v in refusal.get_headers() if k.lower() != "content-type"]
    return _form_page(values, {}, notice, token), refusal.code, headers


def _limit_submissions() -> None:
    """Count a submission that is not saved (the honeypot's); 429 when over a limit."""
    wait = _count_submission()
    if wait is not None:
        _refuse(wait)


def _count_submission(session: Session | None = None) -> int | None:
    config = current_app.config
    return ratelimit.hit_all([
        ("submit", ratelimit.client_id(), ratelimit.parse_limits(config["SUBMIT_RATE_LIMITS"])),
        # From every client together: a flood from endless addresses cannot grow the database without bound.
        ("submit-all", "all", ratelimit.parse_limits(config["SUBMIT_GLOBAL_RATE_LIMITS"])),
    ], session)


def _refuse(wait: int) -> NoReturn:
    metrics.count_inquiry("rate_limited")
    raise ratelimit.too_many(wait)


def _save(form: form_store.Shown, clean: dict, verdict: spam.Verdict, embedded: str | None = None,
          files: list[uploads.Upload] | tuple = ()) -> None:
    """Count the submission against the rate limits and save the inquiry in the inbox or the spam
    folder, with its files, its challenge consumed and, for the inbox, its notifications enqueued: one
    write transaction, so on SQLite a submission takes the write lock once. Over a limit the hit is
    committed alone (refused attempts count) and the answer is 429."""
    default_locale = current_app.config["DEFAULT_LOCALE"]
    stored = form_answers.stored(form.fields, form.form.email_field, clean, str(get_locale()), default_locale)
    values = dict(stored, form_id=form.id, email_key=lookup.key_of(stored["email"]),
                  user_agent=request.user_agent.string[:300] or None,
                  created_at=clock.now(), origin=embedded[:200] if embedded else None)
    with db.transaction(write=True) as session:
        wait = _count_submission(session)
        if wait is None:
            inquiry_id, status = spam.save(session, verdict, values)
            attachment_store.save(session, inquiry_id, files)
            if status == InquiryStatus.INBOX:  # the proof-of-work passed: never spam, honeypot or refused
                notify.enqueue_inquiries(session, [inquiry_id], form.form)
                ack.queue_for(session, inquiry_id, form.form, stored, str(get_locale()))
    if wait is not None:
        _refuse(wait)
    metrics.count_inquiry("accepted" if status == InquiryStatus.INBOX else "spam")
