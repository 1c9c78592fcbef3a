"""The getting-started checklist an owner sees on the Overview, and putting it away or bringing it back.

Six steps from "installed" to "a form on my site, answered". Each is
ticked from what the database and the settings hold, never from a click on
the checklist, so a step done elsewhere (or undone) shows as such the next
time the Overview is drawn. Whether it is shown is each admin's own choice
(``Admin.start_dismissed_at``); only owners see it, since only they may
set up forms and notifications (``Permission.SETTINGS`` in the policy).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from flask import current_app, flash, redirect, url_for
from flask_babel import gettext as _
from flask_login import current_user
from sqlalchemy import exists, select, update
from sqlalchemy.orm import Session

from app.admin import bp
from app.auth import permissions
from app.auth.invites import FIRST_ADMIN_NAME
from app.auth.permissions import Permission
from app.conversations import references
from app.core import clock, db
from app.models import DEFAULT_FORM_ID, Admin, Form, Inquiry
from app.notify import settings as notify_settings


@dataclass(frozen=True)
class Step:
    """One step of the checklist: its name for ids, what to do, where it is done, and whether it is."""

    key: str
    text: str
    url: str
    done: bool


@dataclass(frozen=True)
class Checklist:
    """The steps, in order, and whether this admin put the checklist away."""

    steps: list[Step]
    dismissed: bool

    @property
    def done(self) -> int:
        """How many steps are done."""
        return sum(step.done for step in self.steps)


def for_overview(session: Session, admin: Admin) -> Checklist | None:
    """The checklist ``admin`` sees on the Overview; None for an admin who is not an owner."""
    if not permissions.may(admin, Permission.SETTINGS):
        return None
    return Checklist(steps(session, admin), admin.start_dismissed_at is not None)


def steps(session: Session, admin: Admin) -> list[Step]:
    """The six steps, each ticked from the stored state."""
    forms = list(session.scalars(select(Form)))
    return [
        Step("name", _("Choose the name the team sees"), url_for("admin.account", _anchor="admin-name"), named(admin)),
        Step(
            "replies",
            _("Set where answers to your replies come back"),
            url_for("admin.account", _anchor="admin-email"),
            bool(admin.email or current_app.config["REPLY_TO"] or references.configured()),
        ),
        Step("form", _("Make a form, or adjust the one given"), url_for("admin.forms"), form_made(forms)),
        Step(
            "site",
            _("Put a form on your site"),
            url_for("admin.edit_form", form_id=DEFAULT_FORM_ID, _anchor="embed-title"),
            on_a_site(session, forms),
        ),
        Step(
            "inquiry",
            _("Send yourself a test inquiry"),
            url_for("public.inquiry_form"),
            bool(session.scalar(select(exists().where(Inquiry.id.is_not(None))))),
        ),
        Step("notify", _("Set up notifications"), url_for("admin.notifications"), notified(session, forms)),
    ]


def named(admin: Admin) -> bool:
    """Whether the admin has a name of their own: the first admin is enrolled as ``admin`` unless they chose one
    (an invited admin carries the name the inviting owner gave)."""
    return admin.name != FIRST_ADMIN_NAME


def form_made(forms: list[Form]) -> bool:
    """Whether a form was made besides the one given, or the given one was saved since it was made."""
    return any(form.id != DEFAULT_FORM_ID or form.updated_at != form.created_at for form in forms)


def on_a_site(session: Session, forms: list[Form]) -> bool:
    """Whether a form lists a site it may be embedded on, or an inquiry came from another site."""
    if any(form.allowed_origins for form in forms):
        return True
    return bool(session.scalar(select(exists().where(Inquiry.origin.is_not(None)))))


def notified(session: Session, forms: list[Form]) -> bool:
    """Whether new inquiries reach someone: the site's recipients, webhook or chat, or a form's own."""
    site = notify_settings.load(session)
    if site.emails or site.webhook_url or site.chat:
        return True
    return any(form.notify_emails or form.webhook_url or form.notify_urls for form in forms)


@bp.post("/overview/start/dismiss")
def dismiss_start():
    """Put the checklist away for this admin; the Overview then offers to bring it back."""
    _set_dismissed(clock.now())
    flash(_("The checklist is hidden. Bring it back from the bottom of the Overview."))
    return redirect(url_for("admin.overview"), 303)


@bp.post("/overview/start/restore")
def restore_start():
    """Show the checklist again to this admin."""
    _set_dismissed(None)
    return redirect(url_for("admin.overview", _anchor="start-title"), 303)


def _set_dismissed(moment: datetime | None) -> None:
    session = db.get_session(write=True)
    session.execute(update(Admin).where(Admin.id == current_user.id).values(start_dismissed_at=moment))
    session.commit()
