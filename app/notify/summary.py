"""The optional weekly summary: once a week, what the cleanup deletes in the next seven days, per form.

Owners turn it on on the Retention page (``preferences`` row
``retention_weekly_summary``). The first stored forecast of each ISO week
(``app.notify.warning.decide``, after an admin's response) enqueues one
e-mail of kind ``retention_summary``; the ``settings`` row
``retention_summary_week`` says which week was summarised, so each goes once.
What it lists is read when it is sent, from the stored forecast
(``app.inquiries.forecast_store.stored``): never recomputed. Each form's
line says whether its inquiries will be deleted or anonymised.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from flask_babel import ngettext
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.forms import store as form_store
from app.inquiries import forecast, forecast_store
from app.inquiries.retention import Expiry
from app.models import Form, Preference, Setting

KEY = "retention_weekly_summary"  # preferences: "1" when owners chose it
WEEK_KEY = "retention_summary_week"  # settings: the ISO week last summarised
DAYS = 7


def enabled(session: Session) -> bool:
    """Whether owners chose the weekly summary."""
    return session.scalar(select(Preference.value).where(Preference.key == KEY)) == "1"


def week_of(day: date) -> str:
    """The ISO week ``day`` falls in: ``2026-W49``."""
    year, week, _weekday = day.isocalendar()
    return f"{year}-W{week:02d}"


def due(session: Session, today: date) -> bool:
    """Whether a summary is due: chosen, and none yet for ``today``'s week."""
    if not enabled(session):
        return False
    return session.scalar(select(Setting.value).where(Setting.key == WEEK_KEY)) != week_of(today)


@dataclass(frozen=True)
class Line:
    """One form's line of the summary: its inquiries deleted (or anonymised, ``anonymise``) and its spam
    deleted in the next seven days."""

    form_id: int
    title: str
    inbox: int
    spam: int
    anonymise: bool = False

    def does(self) -> frozenset[str]:
        """What the cleanup does to the form's inquiries these seven days: delete, anonymise, or both (its
        inbox anonymised, its spam deleted)."""
        inbox = {Expiry.ANONYMISE if self.anonymise else Expiry.DELETE} if self.inbox else set()
        return frozenset(inbox | ({Expiry.DELETE} if self.spam else set()))

    def text(self) -> str:
        """The form, its counts, and whether its inquiries are deleted or anonymised."""
        if self.anonymise:
            words = ngettext(
                "%(form)s: %(num)d inquiry will be anonymised in the next seven days.",
                "%(form)s: %(num)d inquiries will be anonymised in the next seven days.",
                self.inbox,
                form=self.title,
            )
            spam = ngettext("And %(num)d in spam will be deleted.", "And %(num)d in spam will be deleted.", self.spam)
        else:
            words = ngettext(
                "%(form)s: %(num)d inquiry will be deleted in the next seven days.",
                "%(form)s: %(num)d inquiries will be deleted in the next seven days.",
                self.inbox,
                form=self.title,
            )
            spam = ngettext("And %(num)d in spam.", "And %(num)d in spam.", self.spam)
        return f"{words} {spam}" if self.spam else words


def lines_of(session: Session) -> list[Line]:
    """Each form that deletes something in the next seven days, from the stored forecast (none stored: none)."""
    snapshot = forecast_store.stored(session)
    if snapshot is None:
        return []
    found = []
    for form in session.scalars(select(Form).order_by(Form.id)):
        inbox, spam = (_week(snapshot.forecast.line(form.id, policy)) for policy in (forecast.INBOX, forecast.SPAM))
        if inbox or spam:
            anonymise = form.expiry_action == Expiry.ANONYMISE
            found.append(Line(form.id, form_store.words(form.title), inbox, spam, anonymise))
    return found


def _week(line: forecast.Line | None) -> int:
    return sum(bucket.inquiries for bucket in line.days[:DAYS]) if line is not None else 0
