"""The public side: the inquiry form, the JSON API, the challenge, privacy and health pages.

The submission views are adapters of one service, ``app.inquiries.submit``: the
page form (``/``, ``/f/<slug>``), the JSON API (``/api/inquiries``,
``/api/forms/<slug>/inquiries``) and a form embedded on another site, which
posts to the same two. Each receives the body whole first (``app.web.intake``),
so nothing is stored from a body that did not fully arrive; checks what is the
web's (the CSRF token, the origin: ``app.forms.embed``); asks
``app.inquiries.spam`` for its verdict; and turns what ``submit`` returns into a
response. The form answers every refusal with the form again and a message in
words, keeping the visitor's text whenever it was received.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit

from flask import Blueprint, current_app, g, jsonify, redirect, render_template, request, url_for
from flask_babel import get_locale
from flask_babel import lazy_gettext as _l
from flask_wtf.csrf import CSRFError
from markupsafe import Markup, escape
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from werkzeug.exceptions import Forbidden, HTTPException, NotFound, UnsupportedMediaType

from app import cleanup
from app.core import db, i18n, metrics, ratelimit
from app.core.parsing import parse_address
from app.forms import answers as form_answers
from app.forms import embed
from app.forms import refused as refused_sites
from app.forms import store as form_store
from app.inquiries import retention, spam, submit
from app.inquiries.submit import Accepted, Invalid, Limited
from app.web import errors, intake
from app.web.security import csrf

bp = Blueprint("public", __name__)

# The page's, not the visitor's (and the services' whose forms post here unchanged: docs/embed.md).
PAGE_FIELDS = frozenset({*spam.HONEYPOTS, "csrf_token", spam.FIELD, spam.RENDERED_FIELD, "_next"})

# What the form says when it refuses a submission: whole sentences, translated when shown.
TOO_LARGE = _l(
    "Your inquiry is too large to send (the limit is {kib} KB), so nothing was saved, "
    "and your text could not be kept: please shorten it and send it again."
)
NOT_RECEIVED = _l(
    "Your inquiry did not arrive complete (the connection may have broken off), so nothing "
    "was saved, and your text could not be kept: please type it again and send it."
)
EXPIRED = _l(
    "The form had expired or was not sent from this site, so nothing was saved. Your text is kept below: send it again."
)
RATE_LIMITED = _l("{refusal} Your text is kept below.")
UNLISTED = _l(
    "The page you sent this from ({site}) is not one of the sites this form takes inquiries from, "
    "so nothing was saved yet, and the site's owner can see that it was tried. Your text is kept "
    "below: send it from here."
)
UNAVAILABLE = _l(
    "The inbox cannot save inquiries right now, so nothing was saved. "
    "Your text is kept below: please send it again in a minute."
)
NOT_JSON_TYPE = _l("Send the inquiry as JSON (Content-Type: application/json).")
CROSS_ORIGIN = _l("Cross-origin requests are not accepted.")
# The words of the site's own form (migration 0009), so the catalogs translate them (``form_store.words``).
SHIPPED_WORDS = (
    _l("Contact"),
    _l("We read every message and answer by email."),
    _l("Your name"),
    _l("Email address"),
    _l("Message"),
)


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
        form=form.slug,
        title=form.title,
        description=form.description,
        lang=i18n.language_tag(),
        action=f"{origin}{url_for('public.submit_named_json', slug=form.slug)}",
        page=f"{origin}{url_for('public.named_form', slug=form.slug)}",
        fields=[embed.described(each) for each in form.fields],
        rendered=spam.form_token(),
        challenge=spam.issue(),
        challenge_url=f"{origin}{url_for('public.form_challenge', slug=form.slug)}",
        challenge_ttl=current_app.config["POW_TTL"],
        texts=embed.texts(),
    )
    response.headers["Cache-Control"] = "no-store"
    return response


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
        submit.refused(_sender())
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
        return _unlisted(form, embedded, values)
    try:
        if embedded is None:  # from another site the allowed origin is the proof, and there is no session
            csrf.protect()
        verdict = spam.judge_form(request.form, spam.Reason.LISTED_SITE if embedded else spam.Reason.OWN_PAGE)
        result = submit.submit(form, request.form, request.files, verdict, embedded, _sender())
    except CSRFError as refusal:
        return _form_refused(refusal, values, str(EXPIRED), token)
    except (DBAPIError, PoolTimeout) as error:
        return _form_refused(errors.database_unavailable(error), values, str(UNAVAILABLE), token)
    return _page_answer(result, form, values, token, embedded)


def _unlisted(form: form_store.Shown, site: str, values: dict):
    """A post from a site the form does not list: recorded for the form's page (within the client's own
    limits), and the form here, the visitor's text kept, to send it from Sundown itself (403)."""
    metrics.count_inquiry("invalid")
    if submit.refused(_sender()) is None:
        with db.transaction(write=True) as session:
            refused_sites.record(session, form.form.id, site)
    notice = UNLISTED.format(site=site[:100])
    return _form_page(
        values,
        {},
        notice,
        action=url_for("public.submit_named_form", slug=form.slug),
        extra=form_answers.extras(form.fields, request.form),
    ), 403


def _page_answer(result: submit.Result, form: form_store.Shown, values: dict, token: str | None, embedded: str | None):
    """The page's answer to ``result``: the thank-you page, or the form again with the errors or the wait."""
    match result:
        case Invalid(errors=field_errors, status=status):
            extra = form_answers.extras(form.fields, request.form)
            return _form_page(
                values, field_errors, field_errors.get("_"), token=token, back=_back_link(form, embedded), extra=extra
            ), status
        case Limited(wait=wait):
            refusal = ratelimit.too_many(wait)
            return _form_refused(refusal, values, RATE_LIMITED.format(refusal=refusal.description), token)
        case Accepted():
            cleanup.trigger("inquiry_form")
    return redirect(_thanks_url(form, embedded, request.form.get("_next")), 303)


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
        if slug:
            _unlisted(form, embedded, {})
        raise Forbidden(str(embed.NOT_ALLOWED) if slug else str(CROSS_ORIGIN))
    if with_files:
        try:
            _receive(slug)
        except HTTPException:
            submit.refused(_sender())
            raise
    data = request.form if with_files else intake.json_body()
    verdict = spam.judge_api(data, spam.Reason.LISTED_SITE if embedded else None)
    match submit.submit(form, data, request.files, verdict, embedded, _sender()):
        case Invalid(errors=field_errors, status=status):
            return jsonify(ok=False, errors=field_errors), status
        case Limited(wait=wait):
            raise ratelimit.too_many(wait)
        case Accepted():
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
    own = [
        (
            form_store.words(form.title),
            form.retention_days or days,
            form.spam_retention_days,
            form.retention_clock,
        )
        for form in form_store.all_forms(session)
        if form.enabled
        and (form.retention_days or form.spam_retention_days or form.retention_clock != retention.Clock.RECEIVED)
    ]
    return render_template(
        "public/privacy.html",
        retention_days=days,
        spam_retention_days=spam_days,
        own_retention=own,
        contact=contact_link(current_app.config["OPERATOR_CONTACT"]),
    )


def contact_link(contact: str | None) -> Markup | None:
    """The operator's contact (``SUNDOWN_OPERATOR_CONTACT``) for the privacy page: an e-mail or web address as
    a link, anything else (a postal address) as text; None when unset."""
    if not contact:
        return None
    text = contact.strip()
    if urlsplit(text).scheme in ("http", "https"):
        return Markup('<a href="{}">{}</a>').format(text, text)
    try:
        address = parse_address(text)
    except ValueError:
        return escape(text)
    return Markup('<a href="mailto:{}">{}</a>').format(quote(address, safe="@"), address)


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


def _thanks_url(form: form_store.Shown, embedded: str | None, named: str | None = None) -> str:
    """Where a submission from another site goes next: the address its own ``_next`` field names (as
    Formspree's and Basin's forms do) when a redirect can carry it and it is on one of the form's listed
    sites, else the form's thank-you address (``embed.thanks_url``); else Sundown's thank-you page."""
    if embedded is not None and named and embed.redirectable(named) and embed.thanks_url_ok(form.form, named):
        return named
    return embed.thanks_url(form.form, embedded) or url_for("public.thanks")


def _back_link(form: form_store.Shown, embedded: str | None) -> str | None:
    """The page of another site the visitor came from, for a link back (its origin allowed)."""
    referrer = request.headers.get("Referer")
    return referrer if embedded is not None and embed.thanks_url_ok(form.form, referrer) else None


def _form_page(
    values: dict,
    field_errors: dict[str, str],
    notice: str | None = None,
    token: str | None = None,
    back: str | None = None,
    action: str | None = None,
    extra: dict[str, str] | None = None,
) -> str:
    """The request's form; a re-shown one keeps the first render time, so the time trap counts from it,
    and the ``extra`` answers sent to fields it does not have (``form_answers.extras``), to send again."""
    form = g.get("sundown_form") or form_store.page_form()
    return render_template(
        "public/form.html",
        form=form,
        values=values,
        errors=field_errors,
        notice=notice,
        rendered=spam.carried_over(token),
        labels=form.labels,
        back=back,
        action=action or request.path,
        extra=extra or {},
    )


def _missing_form(refusal: HTTPException, notice: str | None = None):
    """A form that is not there or disabled (404), or unreadable (503): what the visitor typed, kept."""
    kept = "\n\n".join(
        value for key, value in request.form.items(multi=True) if key not in PAGE_FIELDS and value.strip()
    )
    headers = [(k, v) for k, v in refusal.get_headers() if k.lower() != "content-type"]
    return render_template("public/no_form.html", kept=kept, notice=notice), refusal.code, headers


def _lost_message(refusal: HTTPException) -> str:
    if refusal.code == 413:
        return TOO_LARGE.format(kib=current_app.config["MAX_CONTENT_LENGTH"] // 1024)
    return str(NOT_RECEIVED)


def _form_refused(
    refusal: HTTPException, values: dict[str, form_answers.Answer], notice: str, token: str | None = None
):
    """The form again with ``notice``, the refusal's status and headers (``Retry-After``)."""
    headers = [(k, v) for k, v in refusal.get_headers() if k.lower() != "content-type"]
    return _form_page(values, {}, notice, token), refusal.code, headers


def _sender() -> submit.Sender:
    """Who sent the request, as ``submit`` needs it: language, rate limits' key, browser."""
    return submit.Sender(str(get_locale()), ratelimit.client_id(), request.user_agent.string)
