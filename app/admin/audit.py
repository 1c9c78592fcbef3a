"""The admin audit log: who did what, when and to how many. Never message content."""

from __future__ import annotations

from flask_login import current_user
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.core import clock
from app.models import AuditEntry


def record(session: Session, action: str, count: int = 0, detail: str = "") -> None:
    """Add an audit entry for the logged-in admin to ``session`` (the caller commits)."""
    session.add(
        AuditEntry(
            admin_name=current_user.name,
            action=action,
            count=count,
            detail=detail[:300],
            created_at=clock.now(),
        )
    )


def recent(session: Session, limit: int = 50) -> list[AuditEntry]:
    """The newest audit entries first."""
    return list(
        session.scalars(
            select(AuditEntry).order_by(AuditEntry.created_at.desc(), AuditEntry.id.desc()).limit(limit)
        )
    )
