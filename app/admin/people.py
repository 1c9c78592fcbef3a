"""People: everything held about one e-mail address, its export, and its erasure (``app.people``).

``GET /admin/people?email=...`` shows the inquiries of one address in every
folder (held ones, and those past retention not yet cleaned up) with the
audit entries about each; ``/admin/people/export.json`` and ``.csv`` stream
the same, ``.zip`` the JSON with the files sent (``app.people.archive``);
``POST /admin/people/erase`` asks for confirmation first (how many
go, which holds keep which inquiries), then erases.

An admin given some forms finds, exports and erases the inquiries of those
forms only (``forms_for``), and the page says so. Each export is recorded
as an access to each inquiry it holds (``app.inquiries.access``).
"""

from __future__ import annotations

from flask import Response, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import ngettext
from flask_login import current_user
from werkzeug.exceptions import BadRequest

from app.admin import bp
from app.auth import permissions
from app.auth.permissions import Permission
from app.core import background, clock, db
from app.core.csvstream import download
from app.forms import store as form_store
from app.inquiries import access, gone, retention
from app.models import AccessKind
from app.people import archive, erasure, lookup, records

MAX_ADDRESS_LENGTH = 320


@bp.get("/people")
def people():
    """The lookup form and, for a valid ``email``, everything held about it."""
    raw = request.args.get("email", "").strip()
    if not raw:
        return render_template("admin/people.html", scope=_scope(), raw="", person=None, error=None)
    address = lookup.normalise(raw)
    if address is None:
        error = _("Enter a valid email address, like name@example.com.")
        return render_template(
            "admin/people.html", scope=_scope(), raw=raw[:MAX_ADDRESS_LENGTH], person=None, error=error
        ), 422
    session = db.get_session()
    person = lookup.find(session, address, _forms(Permission.PEOPLE))
    cutoffs = {policy.status.value: retention.current_cutoff(session, policy) for policy in retention.POLICIES}
    return render_template("admin/people.html", scope=_scope(), raw=address, person=person, error=None, cutoffs=cutoffs)


@bp.get("/people/export.json")
def person_export_json():
    """Everything held about ``email`` as JSON (``app.people.records`` documents the shape), streamed."""
    address = _address_arg(request.args)
    return _download(records.stream_json, address, "application/json", "json")


@bp.get("/people/export.csv")
def person_export_csv():
    """Everything held about ``email`` as CSV, streamed."""
    address = _address_arg(request.args)
    return _download(records.stream_csv, address, "text/csv", "csv")


@bp.get("/people/export.zip")
def person_export_zip():
    """Everything held about ``email`` with the files sent, as a zip (``app.people.archive``), streamed."""
    address = _address_arg(request.args)
    return _download(archive.stream_zip, address, "application/zip", "zip")


@bp.post("/people/erase")
def person_erase():
    """First POST: the confirmation (how many, which holds keep what). With ``confirm=1``: erase."""
    address = _address_arg(request.form)
    if request.form.get("confirm") != "1":
        person = lookup.find(db.get_session(), address, _forms(Permission.ERASE))
        if not person.erasable:
            flash(_nothing_to_erase(len(person.held)), "warning")
            return redirect(url_for("admin.people", email=address), 303)
        return render_template("admin/people_confirm_erase.html", person=person, scope=_scope())
    outcome = erasure.erase(address, current_user.name, _forms(Permission.ERASE))
    if outcome.erased:
        gone.forget_after_response()
    flash(_erased_message(outcome), "message" if outcome.erased else "warning")
    return redirect(url_for("admin.people", email=address), 303)


def _address_arg(values) -> str:
    address = lookup.normalise(values.get("email", ""))
    if address is None:
        raise BadRequest(_("Enter a valid email address, like name@example.com."))
    return address


def _download(stream, address: str, mimetype: str, extension: str) -> Response:
    forms = _forms(Permission.PEOPLE)
    ids = lookup.ids_of(db.get_session(), address, forms)
    if ids:
        access.record(current_user, AccessKind.PERSON_EXPORT, ids)
    filename = f"sundown-person-{clock.now():%Y-%m-%d}.{extension}"
    return download(stream(background.this_app(), address, forms), filename, mimetype)


def _scope() -> list[str] | None:
    """The slugs of the forms this admin reaches in People, for the page to say so; None for every form."""
    forms = _forms(Permission.PEOPLE)
    if forms is None:
        return None
    return sorted(slug for form_id, slug in form_store.names(db.get_session()).items() if form_id in forms)


def _forms(permission: Permission) -> frozenset[int] | None:
    """The forms this admin reaches in People for ``permission`` (None: every form)."""
    return permissions.forms_for(current_user, permission)


def _nothing_to_erase(held: int) -> str:
    if held:
        return ngettext(
            "Nothing to erase: the only inquiry is on legal hold. Release the hold first.",
            "Nothing to erase: all %(num)d inquiries are on legal hold. Release the holds first.",
            held,
        )
    return _("Nothing is held about this address.")


def _erased_message(outcome: erasure.Outcome) -> str:
    message = ngettext("Erased %(num)d inquiry.", "Erased %(num)d inquiries.", outcome.erased)
    if outcome.kept_on_hold:
        message += " " + ngettext(
            "%(num)d inquiry on legal hold kept.", "%(num)d inquiries on legal hold kept.", outcome.kept_on_hold
        )
    return message
