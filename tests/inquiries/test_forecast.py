"""The forecast: what the cleanup deletes on each coming day and month, by each form's retention and clock."""

from __future__ import annotations

from datetime import date, timedelta

from app.inquiries import forecast, forecast_store, retention
from app.models import Form, InquiryStatus
from tests.factories import add_file, add_inquiries, inquiry

TODAY = date(2026, 6, 1)  # the fake clock's day


def computed(app, db_session, clock) -> forecast.Forecast:
    with app.test_request_context():
        return forecast.compute(db_session, clock())


def add_form(db_session, slug: str, **values) -> int:
    contact = db_session.get(Form, 1)
    form = Form(slug=slug, title={"en": slug.title()}, fields=contact.fields, email_field=contact.email_field, **values)
    db_session.add(form)
    db_session.commit()
    return form.id


def test_each_inquiry_counts_on_the_day_its_retention_ends_and_holds_count_nowhere(app, db_session, clock):
    add_inquiries(
        db_session,
        [
            inquiry(clock, days_old=179),  # received 2025-12-04: deleted 2026-06-02
            inquiry(clock, days_old=179, legal_hold=True),
            inquiry(clock, days_old=200),  # past it already: the next cleanup, today
            inquiry(clock, days_old=10),  # 2026-11-18: in November, not in the thirty days
            inquiry(clock, days_old=29, status=InquiryStatus.SPAM),  # spam keeps 30 days: 2026-06-02
        ],
    )
    result = computed(app, db_session, clock)
    inbox = result.line(1, "inbox")
    assert inbox is not None and inbox.retention_days == 180
    assert [bucket.inquiries for bucket in inbox.days[:3]] == [1, 1, 0]
    assert inbox.days[1].start == TODAY + timedelta(days=1)
    assert [bucket.start.month for bucket in inbox.months[:2]] == [6, 7]
    assert inbox.months[0].inquiries == 2 and inbox.months[5].inquiries == 1 and inbox.total() == 3
    spam = result.line(1, "spam")
    assert spam is not None and spam.days[1].inquiries == 1 and spam.total() == 1


def test_a_form_counting_from_the_last_message_follows_it_and_its_own_retention(app, db_session, clock):
    quote = add_form(db_session, "quote", retention_days=10, retention_clock=retention.Clock.LAST_MESSAGE)
    add_inquiries(
        db_session,
        [
            inquiry(clock, days_old=20, form_id=quote, last_message_at=clock() - timedelta(days=5)),
            inquiry(clock, days_old=8, form_id=quote),  # no message since: from receipt, in two days
            inquiry(clock, days_old=8),  # Contact keeps 180 days: in November
        ],
    )
    result = computed(app, db_session, clock)
    line = result.line(quote, "inbox")
    assert line is not None and line.retention_days == 10 and line.clock == retention.Clock.LAST_MESSAGE
    assert [n for n, bucket in enumerate(line.days) if bucket.inquiries] == [2, 5]
    assert result.line(1, "inbox").next_days() == 0
    assert result.summed("inbox").total() == 3


def test_files_and_bytes_go_with_their_inquiry(app, db_session, clock):
    with_file, _plain = add_inquiries(db_session, [inquiry(clock, days_old=179), inquiry(clock, days_old=179)])
    add_file(db_session, with_file, b"x" * 3000)
    add_file(db_session, with_file, b"y" * 1000, name="two.txt")
    bucket = computed(app, db_session, clock).line(1, "inbox").days[1]
    assert (bucket.inquiries, bucket.files, bucket.bytes) == (2, 2, 4000)


def test_the_stored_forecast_is_read_only_while_it_follows_the_retentions(app, db_session, clock):
    add_inquiries(db_session, [inquiry(clock, days_old=179)])
    with app.test_request_context():
        assert forecast_store.current(db_session) is None
        forecast_store.store()
        db_session.rollback()  # a fresh snapshot of the database
        stored = forecast_store.current(db_session)
        assert stored is not None and stored.forecast.line(1, "inbox").days[1].inquiries == 1
        retention.save(db_session, 90)
        db_session.commit()
        assert forecast_store.current(db_session) is None  # a changed retention makes it wrong, not just old
        forecast_store.store()
        db_session.rollback()
        assert forecast_store.current(db_session).forecast.line(1, "inbox").days[0].inquiries == 1
        clock.advance(days=1)
        assert forecast_store.current(db_session) is None  # a new day too


def test_the_refresh_is_claimed_once(app, db_session, clock):
    with app.test_request_context():
        assert forecast_store.refresh() is not None
        assert forecast_store.refresh() is None  # within the claim's interval
        clock.advance(seconds=11)
        assert forecast_store.refresh() is not None
