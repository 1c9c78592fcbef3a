"""Reading and writing forms.

``page_form(slug)`` is what the public routes serve (404 for an unknown or
disabled form); ``default_form()`` is the site's own (``/``). A form is
read once per request and cached on ``g``: a submission reads it for its
page, its checks and its notification.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from flask import current_app, g
from flask_babel import get_locale, gettext
from sqlalchemy import delete, exists, func, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session
from werkzeug.exceptions import NotFound

from app.core import clock, db
from app.forms import fields as form_fields
from app.forms.fields import SLUG, Field, text_in
from app.models import DEFAULT_FORM_ID, Form, Inquiry

EXTENSION = "sundown.forms"
FRESH_FOR = 1.0  # seconds a process serves a form as it read it
MOST_REMEMBERED = 256  # forms a process remembers at once; past it, it forgets them all and reads again


@dataclass(frozen=True)
class Shown:
    """A form as a page shows it: the row's settings and its fields, read."""

    form: Form
    fields: tuple[Field, ...]

    @property
    def id(self) -> int:
        """The form's id."""
        return self.form.id

    @property
    def slug(self) -> str:
        """The form's slug."""
        return self.form.slug

    @property
    def title(self) -> str:
        """The title in this request's language (``words``)."""
        return words(self.form.title)

    @property
    def description(self) -> str:
        """The description in this request's language (``words``)."""
        return words(self.form.description)

    @property
    def labels(self) -> dict[str, str]:
        """Each field's label in this request's language, by key (the error summary's too)."""
        return {each.key: words(each.label) for each in self.fields}


def words(texts: dict[str, str] | None) -> str:
    """An admin's text in this request's language; else the default language's, through the catalogs.

    So the words the site ships with ("Your name", "Contact") are shown
    translated, and an admin's own words in the default language as written.
    """
    texts = texts or {}
    locale = str(get_locale())
    if texts.get(locale):
        return texts[locale]
    fallback = text_in(texts, current_app.config["DEFAULT_LOCALE"], current_app.config["DEFAULT_LOCALE"])
    return gettext(fallback) if fallback else ""


def shown(form: Form) -> Shown:
    """``form`` with its fields read."""
    return Shown(form, form_fields.load(form.fields))


def by_slug(session: Session, slug: str) -> Form | None:
    """The form named ``slug``, enabled or not."""
    return session.scalar(select(Form).where(Form.slug == slug))


def page_form(slug: str | None = None) -> Shown:
    """The enabled form ``slug`` (the site's default when None); 404 when there is none.

    Read in a short transaction of its own (a submission's save takes its own
    connection after it) and remembered by the process for ``FRESH_FOR``, as
    the notification settings are: every submission reads its form, and a
    change saved by another process applies here that much later (this
    process forgets at once: ``forget``). When the database does not answer,
    the site's own form is shown as it ships (``shipped_form``), so a
    visitor's text is kept on the 503 page a save then gets; any other form
    raises the database's error.

    Anyone can ask for any address, so only forms that exist are remembered,
    at most ``MOST_REMEMBERED`` of them, and an address that cannot be a slug
    is 404 before any lookup: a stream of made-up addresses costs a query
    each (or none), never memory.
    """
    if slug is not None and not SLUG.match(slug):
        raise NotFound()
    cached = g.get("sundown_form")
    if cached is not None and (slug is None or cached.slug == slug):
        return cached
    memory = current_app.extensions.setdefault(EXTENSION, {})
    remembered = memory.get(slug)
    if remembered is not None and time.monotonic() - remembered[0] < FRESH_FOR:
        form = remembered[1]
    else:
        try:
            form = _read(slug)
        except (DBAPIError, PoolTimeout):
            if slug is not None:
                raise
            form = shown(shipped_form())
        else:
            _remember(memory, slug, form)
    if form is None or not form.form.enabled:
        raise NotFound()
    g.sundown_form = form
    return form


def _remember(memory: dict, slug: str | None, form: Shown | None) -> None:
    """Keep ``form`` (read just now) for ``FRESH_FOR``; a miss is not kept, and a full memory starts over."""
    if form is None:
        memory.pop(slug, None)
        return
    if len(memory) >= MOST_REMEMBERED and slug not in memory:
        memory.clear()  # forms are few (an admin makes each): past the bound something is off, so start over
    memory[slug] = (time.monotonic(), form)


def _read(slug: str | None) -> Shown | None:
    with db.reading() as session:
        form = session.get(Form, DEFAULT_FORM_ID) if slug is None else by_slug(session, slug)
        if form is None:
            return None
        session.expunge(form)
    return shown(form)


def forget(app) -> None:
    """Forget the forms this process remembers (after an admin saved one)."""
    app.extensions[EXTENSION] = {}


def shipped_form() -> Form:
    """The site's own form as migration 0009 makes it (not stored: for a page while the database is down)."""
    return Form(
        id=DEFAULT_FORM_ID,
        slug="contact",
        title={"en": "Contact"},
        description={"en": "We read every message and answer by email."},
        fields=form_fields.dump(form_fields.CONTACT_FIELDS),
        email_field="email",
        enabled=True,
    )


def all_forms(session: Session) -> list[Form]:
    """Every form, the default first, then by title."""
    forms = list(session.scalars(select(Form).order_by(Form.id)))
    return sorted(forms, key=lambda form: (form.id != DEFAULT_FORM_ID, str(form.title.get("en", form.slug))))


def names(session: Session) -> dict[int, str]:
    """Each form's slug by id, for lists that name an inquiry's form."""
    return {form_id: slug for form_id, slug in session.execute(select(Form.id, Form.slug))}


def recent_origins(session: Session, form_id: int, since) -> list[tuple[str | None, int, object]]:
    """The other sites that sent the form inquiries since ``since``: origin, how many, the latest."""
    return [
        (origin, count, latest)
        for origin, count, latest in session.execute(
            select(Inquiry.origin, func.count(), func.max(Inquiry.created_at))
            .where(Inquiry.form_id == form_id, Inquiry.origin.is_not(None), Inquiry.created_at >= since)
            .group_by(Inquiry.origin)
            .order_by(func.count().desc())
            .limit(20)
        )
    ]


def has_inquiries(session: Session, form_id: int) -> bool:
    """Whether any inquiry (any folder, any age) answered the form."""
    return bool(session.scalar(select(exists().where(Inquiry.form_id == form_id))))


def delete_form(session: Session, form: Form) -> bool:
    """Delete ``form`` if it is not the default and no inquiry answered it; False otherwise.

    The check and the delete are one statement, so an inquiry saved
    meanwhile either keeps the form or was not yet there.
    """
    if form.id == DEFAULT_FORM_ID:
        return False
    deleted = db.rowcount(
        session.execute(delete(Form).where(Form.id == form.id, ~exists().where(Inquiry.form_id == form.id)))
    )
    return deleted == 1


def touch(form: Form) -> None:
    """Mark ``form`` as changed now."""
    form.updated_at = clock.now()
