"""The Forms pages: every form, and an editor that creates, changes, previews, disables and deletes one.

The editor is one plain HTML form (``app.forms.editor``): "Preview" shows
the form as visitors will see it without saving, "Save" stores it, a blank
card below the fields adds one, and each field's Move and Remove buttons
show the form again in its new shape, unsaved. static/builder.js enhances
the same form: it does those moves in place and keeps the preview beside the
fields up to date from ``preview_form``. A form that inquiries answered can be
disabled but not deleted; the site's own form (``/``) can be neither.
"""

from __future__ import annotations

from datetime import timedelta

from flask import abort, current_app, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from flask_login import current_user
from sqlalchemy.exc import IntegrityError

from app import audit
from app.admin import bp
from app.admin import forecast as forecast_view
from app.core import clock, db, i18n
from app.forms import editor, embed, store
from app.forms import refused as refused_sites
from app.forms.fields import TYPES, dump
from app.inquiries import forecast_store
from app.models import DEFAULT_FORM_ID, AuditAction, Form
from app.notify import settings as notify_settings

# The type names as the editor's menu shows them.
TYPE_NAMES = {
    "text": _l("Short text"),
    "email": _l("E-mail address"),
    "textarea": _l("Long text"),
    "number": _l("Number"),
    "tel": _l("Phone number"),
    "url": _l("Web address"),
    "date": _l("Date"),
    "select": _l("Single choice (menu)"),
    "radio": _l("Single choice (buttons)"),
    "checkboxes": _l("Multiple choice"),
    "consent": _l("Consent"),
    "hidden": _l("Hidden"),
    "file": _l("Files"),
}


@bp.get("/forms")
def forms():
    """Every form: title, address, state and retention."""
    return render_template("admin/forms.html", forms=store.all_forms(db.get_session()), default_form_id=DEFAULT_FORM_ID)


@bp.get("/forms/new")
def new_form():
    """The editor for a new form, with one blank field."""
    return _editor(editor.Draft(title={}, enabled=True), None, {})


@bp.post("/forms/new")
def create_form():
    """Preview or save a new form."""
    return _submit(None)


@bp.get("/forms/<int:form_id>")
def edit_form(form_id: int):
    """The editor for form ``form_id``."""
    form = _form_or_404(form_id)
    return _editor(editor.Draft.of(form, store.shown(form).fields), form, {})


@bp.post("/forms/<int:form_id>")
def change_form(form_id: int):
    """Preview or save form ``form_id``."""
    return _submit(_form_or_404(form_id))


@bp.post("/forms/preview")
def preview_form():
    """The preview of what the editor would post, for its script to show while fields change: 200 even when
    an input is wrong (the preview shows what it can; Save reports the errors)."""
    draft, _errors = editor.read(request.form, i18n.LOCALES, current_app.config["DEFAULT_LOCALE"])
    return render_template("admin/_form_preview.html", draft=draft, preview=_preview(draft, None))


@bp.post("/forms/<int:form_id>/delete")
def delete_form(form_id: int):
    """Delete a form no inquiry answered; otherwise say why not."""
    session = db.get_session(write=True)
    form = _form_or_404(form_id)
    slug = form.slug
    if not store.delete_form(session, form):
        session.rollback()
        flash(
            _(
                "The form %(slug)s has inquiries or is the site's own form, so it was not deleted: disable it instead.",
                slug=slug,
            ),
            "error",
        )
        return redirect(url_for("admin.edit_form", form_id=form_id), 303)
    audit.record(session, current_user, AuditAction.FORM_DELETED, detail=slug)
    session.commit()
    store.forget(current_app)
    flash(_("The form %(slug)s was deleted.", slug=slug))
    return redirect(url_for("admin.forms"), 303)


def _form_or_404(form_id: int) -> Form:
    form = db.get_session().get(Form, form_id)
    if form is None:
        abort(404)
    return form


def _submit(form: Form | None):
    with db.transaction() as session:  # not the request's: it may begin writing below
        chat = ((form.notify_urls or []) if form else [], notify_settings.load(session).chat)
    draft, errors = editor.read(request.form, i18n.LOCALES, current_app.config["DEFAULT_LOCALE"], chat)
    if form is not None and form.id == DEFAULT_FORM_ID and not draft.enabled:
        errors["enabled"] = _("The site's own form is always on: its address is the site's front page.")
    if request.form.get("action") != "save" or errors:
        return _editor(draft, form, errors), 422 if errors else 200
    session = db.get_session(write=True)
    target = form or Form(created_at=clock.now())
    for name in (
        "slug",
        "title",
        "description",
        "enabled",
        "retention_days",
        "spam_retention_days",
        "notify_emails",
        "webhook_url",
        "notify_urls",
        "email_field",
        "allowed_origins",
        "thanks_url",
        "ack_enabled",
        "ack_include_message",
        "ack_quote_new",
        "retention_clock",
        "expiry_action",
    ):
        setattr(target, name, getattr(draft, name))
    target.ack_texts = draft.ack_texts or None
    target.fields = dump(draft.fields)
    store.touch(target)
    session.add(target)
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        return _editor(draft, form, {"slug": _("Another form already has this address.")}), 422
    action = AuditAction.FORM_CHANGED if form else AuditAction.FORM_CREATED
    audit.record(session, current_user, action, detail=draft.slug)
    session.commit()
    store.forget(current_app)
    flash(_("The form %(slug)s was saved.", slug=draft.slug))
    return redirect(url_for("admin.edit_form", form_id=target.id), 303)


RECENT = timedelta(days=30)  # how far back the editor lists the sites that sent inquiries


@bp.post("/forms/<int:form_id>/allow-site")
def allow_site(form_id: int):
    """Add a site the form refused to the sites that may embed it (one click on the form's page)."""
    session = db.get_session(write=True)
    form = _form_or_404(form_id)
    try:
        rule = embed.parse_rule(request.form.get("origin", ""))
    except ValueError:
        flash(_("That is not a site's address, so nothing was changed."), "error")
        return redirect(url_for("admin.edit_form", form_id=form_id), 303)
    listed = list(form.allowed_origins or [])
    if rule not in listed and len(listed) >= embed.MAX_ORIGINS:
        flash(_("The form already lists as many sites as it can; remove one first."), "error")
        return redirect(url_for("admin.edit_form", form_id=form_id), 303)
    if rule not in listed:
        form.allowed_origins = [*listed, rule]
        store.touch(form)
    refused_sites.forget(session, form.id, rule)
    audit.record(session, current_user, AuditAction.SITE_ALLOWED, detail=f"{form.slug}: {rule}"[:300])
    session.commit()
    store.forget(current_app)
    flash(_("%(site)s may now send inquiries to this form.", site=rule))
    return redirect(url_for("admin.edit_form", form_id=form_id, _anchor="embed-title"), 303)


def _preview(draft: editor.Draft, form: Form | None) -> store.Shown:
    """The form as the draft would show it to visitors."""
    shown_as = Form(
        id=form.id if form else None,
        slug=draft.slug,
        title=draft.title,
        description=draft.description,
        email_field=draft.email_field,
        enabled=draft.enabled,
    )
    return store.Shown(shown_as, tuple(draft.fields))


def _editor(draft: editor.Draft, form: Form | None, errors: dict[str, str]):
    preview = _preview(draft, form)
    origin = current_app.config["ORIGIN"]
    session = db.get_session()
    recent = store.recent_origins(session, form.id, clock.now() - RECENT) if form else []
    block = embed.snippet(store.shown(form), origin, current_app.config["DEFAULT_LOCALE"]) if form else ""
    return render_template(
        "admin/form_edit.html",
        draft=draft,
        form=form,
        errors=errors,
        preview=preview,
        origin=origin,
        recent=recent,
        snippet=block,
        refused=refused_sites.recent(session, form.id) if form else [],
        locales=i18n.LOCALES,
        language_names=i18n.NAMES,
        default_locale=current_app.config["DEFAULT_LOCALE"],
        types=TYPES,
        type_names=TYPE_NAMES,
        parts=editor.PARTS,
        is_default=form is not None and form.id == DEFAULT_FORM_ID,
        fc=forecast_view.view(forecast_store.current(session), [form.id]) if form else None,
    )
