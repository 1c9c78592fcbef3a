"""The Tags page, /admin/tags: the tags an owner defines, for those who triage to put on inquiries.

Creating and deleting a tag are audited; deleting one takes it off every
inquiry (``ON DELETE CASCADE``).
"""

from __future__ import annotations

from flask import flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_login import current_user
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from app import audit
from app.admin import bp
from app.core import clock, db
from app.inquiries import triage
from app.models import AuditAction, InquiryTag, Tag


@bp.get("/tags")
def tags():
    """Every tag, with how many inquiries carry it, and the form to add one."""
    return _page()


def _page(error: str | None = None, value: str = ""):
    session = db.get_session()
    counts = dict(session.execute(select(InquiryTag.tag_id, func.count()).group_by(InquiryTag.tag_id)).all())
    return render_template("admin/tags.html", tags=triage.all_tags(session), counts=counts, error=error, value=value)


@bp.post("/tags")
def create_tag():
    """Add a tag (a name of 1 to 40 characters, not yet taken)."""
    name = " ".join(request.form.get("name", "").split())
    if not name or len(name) > triage.TAG_MAX:
        return _page(_("A tag is 1 to %(max)d characters.", max=triage.TAG_MAX), name[: triage.TAG_MAX]), 422
    session = db.get_session(write=True)
    session.add(Tag(name=name, created_at=clock.now()))
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        return _page(_("There is a tag %(name)s already.", name=name), name), 422
    audit.record(session, current_user, AuditAction.TAG_CREATED, 1, f"tag {name}")
    session.commit()
    flash(_("Tag %(name)s added.", name=name))
    return redirect(url_for("admin.tags"), 303)


@bp.post("/tags/<int:tag_id>/delete")
def delete_tag(tag_id: int):
    """Delete a tag: it comes off every inquiry."""
    session = db.get_session(write=True)
    tag = session.get(Tag, tag_id)
    if tag is None:
        flash(_("That tag no longer exists."), "warning")
        return redirect(url_for("admin.tags"), 303)
    name = tag.name
    removed = session.execute(
        select(func.count()).select_from(InquiryTag).where(InquiryTag.tag_id == tag_id)
    ).scalar_one()
    session.delete(tag)
    audit.record(session, current_user, AuditAction.TAG_DELETED, removed, f"tag {name}")
    session.commit()
    flash(_("Tag %(name)s deleted.", name=name))
    return redirect(url_for("admin.tags"), 303)
