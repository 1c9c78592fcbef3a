"""Spam has its own retention: the cleanup deletes spam at the spam cutoff and inquiries at theirs."""

from __future__ import annotations

import json
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, select

from app import cleanup
from app.core import db
from app.inquiries import retention
from app.models import Inquiry, InquiryStatus, Setting
from tests.factories import add_inquiries, inquiry

ROWS = select(Inquiry.name).order_by(Inquiry.name)

rows = st.lists(
    st.tuples(st.floats(0, 400, allow_nan=False), st.sampled_from(list(InquiryStatus)), st.booleans()),
    max_size=12,
)


def store_retentions(app, inbox_days: int, spam_days: int) -> None:
    with app.app_context(), db.transaction() as session:
        session.execute(delete(Setting).where(Setting.key.in_([retention.KEY, retention.SPAM_KEY])))
        retention.save(session, inbox_days, retention.INBOX)
        retention.save(session, spam_days, retention.SPAM)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arranged=rows, inbox_days=st.integers(1, 365), spam_days=st.integers(1, 365))
def test_each_folder_is_cleaned_at_its_own_cutoff_and_reads_agree(app, clock, query, arranged, inbox_days, spam_days):
    query.using(lambda session: (session.execute(delete(Inquiry)), session.commit()))
    store_retentions(app, inbox_days, spam_days)
    named = [
        inquiry(clock, days_old=age, status=status, legal_hold=held, name=f"row {i}")
        for i, (age, status, held) in enumerate(arranged)
    ]
    query.using(lambda session: add_inquiries(session, named))
    days = {InquiryStatus.INBOX: inbox_days, InquiryStatus.SPAM: spam_days}
    expected = sorted(
        row["name"]
        for row in named
        if row["legal_hold"] or row["created_at"] >= clock() - timedelta(days=days[row["status"]])
    )

    with app.test_request_context():
        session = db.get_session()
        visible = sorted(session.scalars(select(Inquiry.name).where(retention.visible_now(session, None))))
    assert visible == expected  # what admins see is what the cleanup will keep

    with app.app_context():
        run = cleanup.run("test", force=True)
    deleted = json.loads(run.deleted)
    assert query(ROWS) == expected
    assert deleted["inquiries"] + deleted["spam"] == len(named) - len(expected)
    assert deleted["spam"] == sum(1 for row in named if row["status"] == "spam" and row["name"] not in expected)


def test_spam_retention_defaults_to_30_days_and_ignores_invalid_values(app, db_session, clock):
    (kept, gone) = add_inquiries(
        db_session, [inquiry(clock, days_old=29.9, status="spam"), inquiry(clock, days_old=30.1, status="spam")]
    )
    db_session.add(Setting(key="spam_retention_days", value="9999"))  # out of bounds: the default applies
    db_session.commit()
    with app.app_context():
        assert retention.spam_retention_days(db.get_session()) == 30
        cleanup.run("test", force=True)
    db_session.commit()
    assert list(db_session.scalars(select(Inquiry.id))) == [kept]
    assert gone != kept


def test_a_dry_run_counts_spam_as_its_own_target(app, db_session, clock):
    add_inquiries(db_session, [inquiry(clock, days_old=40, status="spam"), inquiry(clock, days_old=40)])
    with app.app_context():
        plan = cleanup.dry_run()
    assert plan["spam"][0] == 1 and plan["inquiries"][0] == 0
