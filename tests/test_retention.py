"""The shared read predicate and the preview agree with the retention policy."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from app import cleanup, retention
from app.models import Inquiry


def add(session, clock, days_old: float, hold: bool = False) -> Inquiry:
    row = Inquiry(name="n", email="e@example.com", message="m",
                     created_at=clock() - timedelta(days=days_old), legal_hold=hold)
    session.add(row)
    session.commit()
    return row


def test_visible_hides_expired_unless_held(db_session, clock, app):
    fresh, old, held = add(db_session, clock, 10), add(db_session, clock, 200), add(db_session, clock, 200, True)
    with app.test_request_context():
        cutoff = retention.current_cutoff(db_session)
    ids = set(db_session.scalars(select(Inquiry.id).where(retention.visible(cutoff))))
    assert ids == {fresh.id, held.id}
    assert old.id not in ids


def test_visible_is_exact_to_the_second(db_session, clock, app):
    row = add(db_session, clock, 180)
    with app.test_request_context():
        at_cutoff = retention.current_cutoff(db_session)
        clock.advance(seconds=1)
        after = retention.current_cutoff(db_session)
    assert db_session.scalar(select(Inquiry.id).where(retention.visible(at_cutoff))) == row.id
    assert db_session.scalar(select(Inquiry.id).where(retention.visible(after))) is None


def test_preview_counts_what_a_shorter_retention_would_delete(db_session, clock, app):
    add(db_session, clock, 5)
    oldest = add(db_session, clock, 40)
    add(db_session, clock, 35)
    add(db_session, clock, 50, hold=True)
    with app.test_request_context():
        result = retention.preview(db_session, 30)
    assert result.count == 2
    assert result.oldest == oldest.created_at
