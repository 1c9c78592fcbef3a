"""Property tests: any form or JSON body gets a clear answer, never a 500, and a
row is stored, in the inbox when sent as a person's browser sends it, exactly
when the input is valid."""

from __future__ import annotations

import json
import unicodedata

from email_validator import EmailNotValidError, validate_email
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from app.models import Inquiry, InquiryStatus
from tests.helpers import filled_form, solution

LIMITS = {"name": 100, "email": 254, "message": 5000}
PROPERTY_SETTINGS = settings(
    max_examples=75, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

texts = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=120),
    st.sampled_from(
        [
            "",
            "  ",
            "Ada",
            "ada@example.com",
            "a@b",
            "x" * 101,
            "hi\nthere",
            "\x00",
            "\ud800",
            "é@example.org",
            "eve=?utf-8?q?x?=1@example.org",
        ]
    ),
)
json_values = st.one_of(texts, st.integers(), st.none(), st.booleans(), st.lists(st.integers(), max_size=2))
field_names = st.sampled_from(["name", "email", "message", "website", "other"])


def is_valid_text(value, field: str) -> bool:
    """An independent statement of the rules in the specification."""
    if not isinstance(value, str):
        return False
    value = value.replace("\r\n", "\n").replace("\r", "\n").strip()
    allowed = {"\n", "\t"} if field == "message" else set()
    if not value or len(value) > LIMITS[field]:
        return False
    return all(unicodedata.category(c) != "Cs" and (unicodedata.category(c) != "Cc" or c in allowed) for c in value)


def in_inbox(query) -> int:
    return query.scalar(select(func.count()).where(Inquiry.status == InquiryStatus.INBOX))


def is_valid(body: dict) -> bool:
    if body.get("website"):
        return False
    if not all(is_valid_text(body.get(field, ""), field) for field in LIMITS):
        return False
    try:
        address = validate_email(body["email"].strip(), check_deliverability=False).normalized
    except EmailNotValidError:
        return False
    return "=?" not in address  # an encoded word's opening: no reply could be addressed to it


@PROPERTY_SETTINGS
@given(body=st.dictionaries(field_names, json_values, max_size=5))
def test_any_json_body_is_answered_and_stored_only_when_valid(client, body, query):
    before, inbox_before = query.count(Inquiry), in_inbox(query)
    try:
        payload = json.dumps({**body, "altcha": solution(client)})
    except (UnicodeEncodeError, ValueError):
        return
    response = client.post(
        "/api/inquiries", data=payload.encode("utf-8", "surrogatepass"), content_type="application/json"
    )
    assert response.status_code in (201, 400, 422)
    assert response.is_json
    expected = 1 if is_valid(body) else 0
    assert query.count(Inquiry) - before == expected
    assert in_inbox(query) - inbox_before == expected
    if expected:
        assert response.status_code == 201


@PROPERTY_SETTINGS
@given(body=st.dictionaries(field_names, texts, max_size=5))
def test_any_form_body_is_answered_and_stored_only_when_valid(client, body, query):
    before, inbox_before = query.count(Inquiry), in_inbox(query)
    form = {key: value.encode("utf-8", "surrogatepass") for key, value in body.items()}
    person = filled_form(client)
    form.update({key: person[key] for key in ("csrf_token", "rendered", "altcha")})
    response = client.post("/", data=form)
    assert response.status_code in (303, 422)
    # Browsers cannot send lone surrogates; Werkzeug replaces undecodable bytes.
    decoded = {k: v.encode("utf-8", "surrogatepass").decode("utf-8", "replace") for k, v in body.items()}
    expected = 1 if is_valid(decoded) else 0
    assert query.count(Inquiry) - before == expected
    assert in_inbox(query) - inbox_before == expected
    assert response.status_code == (303 if expected or decoded.get("website") else 422)


@PROPERTY_SETTINGS
@given(raw=st.binary(max_size=200))
def test_any_bytes_as_json_never_fail(client, raw):
    response = client.post("/api/inquiries", data=raw, content_type="application/json")
    assert response.status_code in (201, 400, 422)
