"""The retention rule: the shared read predicate and the preview agree with the policy."""

from __future__ import annotations

from sqlalchemy import select

from app.inquiries import retention
from app.models import Inquiry
from tests.factories import add_inquiries, inquiry


def test_visible_hides_expired_unless_held(db_session, clock, app):
    fresh, old, held = add_inquiries(
        db_session,
        [
            inquiry(clock, days_old=10),
            inquiry(clock, days_old=200),
            inquiry(clock, days_old=200, legal_hold=True),
        ],
    )
    with app.test_request_context():
        cutoff = retention.current_cutoff(db_session)
    ids = set(db_session.scalars(select(Inquiry.id).where(retention.visible(cutoff))))
    assert ids == {fresh, held}
    assert old not in ids


def test_visible_is_exact_to_the_second(db_session, clock, app):
    (row,) = add_inquiries(db_session, [inquiry(clock, days_old=180)])
    with app.test_request_context():
        at_cutoff = retention.current_cutoff(db_session)
        clock.advance(seconds=1)
        after = retention.current_cutoff(db_session)
    assert db_session.scalar(select(Inquiry.id).where(retention.visible(at_cutoff))) == row
    assert db_session.scalar(select(Inquiry.id).where(retention.visible(after))) is None


def test_preview_counts_what_a_shorter_retention_would_delete(db_session, clock, app):
    rows = [
        inquiry(clock, days_old=5),
        inquiry(clock, days_old=40),
        inquiry(clock, days_old=35),
        inquiry(clock, days_old=50, legal_hold=True),
    ]
    add_inquiries(db_session, rows)
    with app.test_request_context():
        result = retention.preview(db_session, 30)
    assert result.count == 2
    assert result.oldest == rows[1]["created_at"]
