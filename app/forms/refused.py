"""Sites a form refused: posts from an origin it does not list, so its page can offer to allow one.

A post from an unlisted site stores nothing of what was sent (the visitor's
page keeps their text, ``app.web.public``); here only the origin, how many
times, and the latest. The rows stay bounded whatever arrives: at most
``MAX_SITES`` a form (a new origin past that is not recorded), and the
rows of a form older than ``KEPT`` go each time one is recorded. Each post
also counts against its client's own rate limits (``app.inquiries.submit``),
so one client cannot fill the list quickly.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from app.core import clock, dialect
from app.models import RefusedSite

MAX_SITES = 20
KEPT = timedelta(days=14)
ORIGIN_MAX = 200


def record(session: Session, form_id: int, origin: str) -> None:
    """Count a post to form ``form_id`` from ``origin``, in the caller's write transaction."""
    now = clock.now()
    session.execute(delete(RefusedSite).where(RefusedSite.form_id == form_id, RefusedSite.last_at < now - KEPT))
    origin = origin[:ORIGIN_MAX]
    known = session.get(RefusedSite, (form_id, origin)) is not None
    if not known and (session.scalar(select(func.count()).where(RefusedSite.form_id == form_id)) or 0) >= MAX_SITES:
        return
    statement = dialect.upsert(session, RefusedSite.__table__).values(
        form_id=form_id, origin=origin, count=1, last_at=now
    )
    session.execute(
        statement.on_conflict_do_update(
            index_elements=["form_id", "origin"], set_={"count": RefusedSite.__table__.c.count + 1, "last_at": now}
        )
    )


def recent(session: Session, form_id: int, since: datetime | None = None) -> list[RefusedSite]:
    """The sites form ``form_id`` refused since ``since`` (``KEPT`` ago by default), the latest first."""
    since = since or clock.now() - KEPT
    return list(
        session.scalars(
            select(RefusedSite)
            .where(RefusedSite.form_id == form_id, RefusedSite.last_at >= since)
            .order_by(RefusedSite.last_at.desc())
        )
    )


def forget(session: Session, form_id: int, origin: str) -> None:
    """Drop a site from form ``form_id``'s list (it was allowed), in the caller's transaction."""
    session.execute(delete(RefusedSite).where(RefusedSite.form_id == form_id, RefusedSite.origin == origin))
