"""Forms: several forms, each with its own fields, retention and recipients.

* ``fields``: what a form asks (field types, their limits, labels per language); pure.
* ``answers``: a submission checked against a form's fields, and how its answers are stored.
* ``editor``: an admin's edit of a form (the page works without JavaScript), checked.
* ``store``: reading and writing forms; the site's default form (``/``, ``POST /api/inquiries``).

An inquiry belongs to one form (``Inquiry.form_id``). Its answers are stored
with each field's label as it was asked (``Inquiry.answers``), so a field
renamed or removed later still shows on the inquiries that answered it.
"""

from __future__ import annotations

from markupsafe import Markup, escape

from app.forms.fields import Field


def field_aria(field: Field, errors: dict[str, str], prefix: str = "", limits: str | None = None) -> Markup:
    """A form field's ``aria-invalid`` and ``aria-describedby`` (its help, the id of its ``limits`` hint if
    any, its error), as attributes."""
    hint = " ".join(each for each in (f"{prefix}{field.key}-help" if field.help else None, limits) if each)
    return _aria(bool(errors.get(field.key)), hint or None, f"{prefix}{field.key}-error")


def input_aria(name: str, errors: dict[str, str], hint: str | None = None) -> Markup:
    """An editor input's ``aria-invalid`` and ``aria-describedby`` (its hint, its error), as attributes."""
    return _aria(bool(errors.get(name)), hint, f"{name}-error")


def _aria(invalid: bool, hint: str | None, error_id: str) -> Markup:
    described = [each for each in (hint, error_id if invalid else None) if each]
    attributes = ' aria-invalid="true"' if invalid else ""
    if described:
        attributes += f' aria-describedby="{escape(" ".join(described))}"'
    return Markup(attributes)
