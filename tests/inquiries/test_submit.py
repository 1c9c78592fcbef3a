"""The one intake (app/inquiries/submit.py): what ``submit`` returns, and what it stores, on both databases.

Called as the views call it, in a request of the app, with verdicts made by ``app.inquiries.spam``;
the views' responses are tested in tests/web/.
"""

from __future__ import annotations

import io

import pytest
from sqlalchemy import select
from werkzeug.datastructures import FileStorage, MultiDict

from app.forms import store as form_store
from app.inquiries import spam, submit
from app.inquiries.submit import Accepted, Discarded, Invalid, Limited, Sender
from app.models import DEFAULT_FORM_ID, Attachment, Inquiry, InquiryStatus, RateLimit, UsedChallenge
from tests.attachments.test_attachments import FIELDS as FILE_FIELDS
from tests.attachments.test_attachments import png
from tests.helpers import VALID, editor_post, solution

SENDER = Sender("en", "client-key", "Mozilla/5.0 (X11; Linux x86_64)")
NO_FILES = MultiDict()


@pytest.fixture
def submitting(app):
    """``submitting(data, verdict, ...)``: ``submit`` to form ``slug`` (the site's own by default), in a request."""

    def call(data, verdict, files=NO_FILES, origin=None, slug=None, sender=SENDER):
        with app.test_request_context("/"):
            return submit.submit(form_store.page_form(slug), data, files, verdict, origin, sender)

    return call


def solved(app, client) -> spam.Verdict:
    """The verdict on a freshly solved challenge: ok."""
    raw = solution(client)
    with app.test_request_context("/"):
        verdict = spam.check_solution(raw)
    assert verdict.reason is None
    return verdict


def test_a_solved_submission_is_accepted_into_the_inbox_with_its_challenge_used(app, client, submitting, query):
    result = submitting(VALID, solved(app, client))
    assert isinstance(result, Accepted) and result.status == InquiryStatus.INBOX
    row = query.scalar(select(Inquiry))
    assert (row.id, row.status, row.name, row.email, row.origin) == (
        result.inquiry_id,
        InquiryStatus.INBOX,
        VALID["name"],
        VALID["email"],
        None,
    )
    assert row.user_agent == SENDER.user_agent and row.form_id == DEFAULT_FORM_ID
    assert query.count(UsedChallenge) == 1


def test_a_suspicious_verdict_is_accepted_into_the_spam_folder_without_touching_challenges(submitting, query):
    result = submitting(VALID, spam.Verdict(spam.Reason.TOO_FAST))
    assert isinstance(result, Accepted) and result.status == InquiryStatus.SPAM
    assert query(select(Inquiry.status)) == [InquiryStatus.SPAM]
    assert query.count(UsedChallenge) == 0


def test_a_replayed_verdict_is_accepted_into_the_spam_folder(app, client, submitting, query):
    verdict = solved(app, client)
    first, again = submitting(VALID, verdict), submitting(VALID, verdict)
    assert (first.status, again.status) == (InquiryStatus.INBOX, InquiryStatus.SPAM)
    assert query.count(UsedChallenge) == 1


def test_both_forms_of_the_insert_store_the_same_columns(app, client, submitting, query):
    """PostgreSQL's single statement (challenge and inquiry) and the plain insert take the same values."""
    origin = "https://www." + "long" * 60 + ".example"
    inbox = submitting(VALID, solved(app, client), origin=origin)
    filed_as_spam = submitting(VALID, spam.Verdict(spam.Reason.TOO_FAST), origin=origin)
    columns = [column for column in Inquiry.__table__.columns if column.name not in ("id", "status", "spam_checks")]
    rows = query.rows(select(*columns).order_by(Inquiry.id))
    assert [inbox.inquiry_id, filed_as_spam.inquiry_id] == query(select(Inquiry.id).order_by(Inquiry.id))
    assert rows[0] == rows[1]
    stored = dict(zip([column.name for column in columns], rows[0], strict=True))
    assert stored["origin"] == origin[:200] and stored["email_key"] == VALID["email"].lower()
    assert stored["answers"] and stored["legal_hold"] is False and stored["created_at"].tzinfo is not None


@pytest.mark.parametrize("name", spam.HONEYPOTS)
def test_the_honeypot_is_discarded_unstored_and_counted_for_its_client_alone(submitting, query, name):
    result = submitting({**VALID, name: "http://spam.example"}, spam.judge_api({name: "x"}))
    assert result == Discarded()
    assert query.count(Inquiry) == 0
    assert query(select(RateLimit.key).where(RateLimit.key.like("submit-all%"))) == []  # no site budget spent
    assert query.count(RateLimit) == 2  # the client's two windows


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({**VALID, "email": "not-an-address"}, "email"),
        ({**VALID, "message": ""}, "message"),
        ([VALID], "_"),
        ("text", "_"),
    ],
)
def test_an_invalid_submission_is_refused_with_422_nothing_stored_nothing_counted(submitting, query, data, field):
    result = submitting(data, spam.Verdict(spam.Reason.NO_SOLUTION))
    assert isinstance(result, Invalid) and result.status == 422
    assert set(result.errors) == {field} and result.errors[field]
    assert query.count(Inquiry) == 0 and query.count(RateLimit) == 0


@pytest.fixture
def support(admin_client) -> str:
    """A form with a file field (at most two files)."""
    data = editor_post(admin_client, "/admin/forms/new", FILE_FIELDS, slug="support", **{"title-en": "Support"})
    assert admin_client.post("/admin/forms/new", data=data).status_code == 303
    return "support"


def files(*items: tuple[bytes, str]) -> MultiDict:
    return MultiDict([("files", FileStorage(io.BytesIO(data), filename=name)) for data, name in items])


def test_files_are_stored_with_the_inquiry_and_named_in_its_answer(app, client, submitting, support, query):
    result = submitting(VALID, solved(app, client), files=files((png(), "screen.png")), slug=support)
    assert isinstance(result, Accepted)
    assert query(select(Attachment.name).where(Attachment.inquiry_id == result.inquiry_id)) == ["screen.png"]
    answers = query.scalar(select(Inquiry.answers))
    assert {"key": "files", "type": "file", "label": "Screenshots or documents", "value": ["screen.png"]} in answers


@pytest.mark.parametrize(
    ("items", "status"),
    [
        ([(b"MZ\x90\x00" + b"\x00" * 60, "tool.exe")], 415),
        ([(png(), "a.png"), (png(), "b.png"), (png(), "c.png")], 422),
        ([(b"\x00" * 5000, "big.txt")], 413),
    ],
)
def test_refused_files_make_an_invalid_result_with_their_status(app, submitting, support, query, items, status):
    app.config["ATTACHMENT_MAX_BYTES"] = 2048
    result = submitting(VALID, spam.Verdict(spam.Reason.NO_SOLUTION), files=files(*items), slug=support)
    assert isinstance(result, Invalid) and (result.status, list(result.errors)) == (status, ["files"])
    assert query.count(Inquiry) == 0 and query.count(Attachment) == 0


@pytest.fixture
def strict_limits(app_config):
    app_config["SUBMIT_RATE_LIMITS"] = "2/60,100/86400"


def test_over_a_limit_the_result_is_limited_and_the_hit_is_committed_alone(strict_limits, submitting, query):
    verdict = spam.Verdict(spam.Reason.NO_SOLUTION)
    assert [type(submitting(VALID, verdict)) for _ in range(2)] == [Accepted, Accepted]
    result = submitting(VALID, verdict)
    assert isinstance(result, Limited) and 0 < result.wait <= 60
    assert isinstance(submitting({**VALID, spam.HONEYPOT: "x"}, spam.judge_api({spam.HONEYPOT: "x"})), Limited)
    assert query.count(Inquiry) == 2
    client_counts = query(select(RateLimit.count).where(RateLimit.key.like("submit:60:%")))
    assert client_counts == [4]  # both refused attempts counted


def test_another_client_is_not_limited_by_the_first(strict_limits, submitting):
    verdict = spam.Verdict(spam.Reason.NO_SOLUTION)
    for _ in range(3):
        submitting(VALID, verdict)
    other = Sender("en", "another-client-key")
    assert isinstance(submitting(VALID, verdict, sender=other), Accepted)
