"""The public side: form, JSON API, spam and abuse defences, privacy, health."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import event, select

from app.core import db
from app.models import Inquiry, InquiryStatus, RateLimit, Setting
from app.web.public import contact_link
from tests.helpers import BEGUN, VALID, csrf_token, filled_form, solution, statements_of_one_submission

STATUSES = select(Inquiry.status).order_by(Inquiry.id)


def test_form_page_has_labelled_fields(client):
    page = client.get("/").get_data(as_text=True)
    for field in ("name", "email", "message"):
        assert f'<label for="{field}">' in page
        assert f'id="{field}"' in page


def test_valid_form_is_saved_in_the_inbox_and_redirects_to_thanks(client, query):
    response = client.post("/", data=filled_form(client))
    assert response.status_code == 303
    assert response.headers["Location"].endswith("/thanks")
    assert query(STATUSES) == [InquiryStatus.INBOX]
    assert "Thank you" in client.get("/thanks").get_data(as_text=True)


def test_form_keeps_input_and_shows_errors(client, query):
    data = {"name": "Grace", "email": "not-an-email", "message": "", "csrf_token": csrf_token(client)}
    response = client.post("/", data=data)
    page = response.get_data(as_text=True)
    assert response.status_code == 422
    assert 'value="Grace"' in page
    assert 'value="not-an-email"' in page
    assert 'id="email-error"' in page and 'id="message-error"' in page
    assert 'id="name-error"' not in page
    assert query.count(Inquiry) == 0


def test_form_errors_are_summarised_with_links_to_the_fields_in_plain_words(client):
    data = {"name": "Grace", "email": "grace@@example", "message": "", "csrf_token": csrf_token(client)}
    page = client.post("/", data=data).get_data(as_text=True)
    summary = page[page.index('<div class="alert" role="alert" tabindex="-1" autofocus') : page.index("</ul>")]
    assert 'id="form-errors"' in summary  # focused on load (autofocus, and form.js)
    assert '<a href="#email">Email address: Enter a valid email address, like name@example.com.</a>' in summary
    assert '<a href="#message">Message: This field is required.</a>' in summary
    assert "#name" not in summary
    assert "@-sign" not in page  # not the email library's own sentence


def test_form_without_csrf_token_is_refused(client, query):
    response = client.post("/", data=VALID)
    assert response.status_code == 400
    assert "expired" in response.get_data(as_text=True)
    assert query.count(Inquiry) == 0


def test_stored_values_are_trimmed_and_email_normalised(client, query):
    client.post(
        "/api/inquiries",
        json={"name": "  Ada  ", "email": " Ada@Example.COM ", "message": " hi\r\nthere ", "altcha": solution(client)},
    )
    (row,) = query(select(Inquiry))
    assert (row.name, row.email, row.message) == ("Ada", "Ada@example.com", "hi\nthere")
    assert row.created_at.tzinfo is not None


def test_json_valid_returns_201_without_id_and_lands_in_the_inbox(client, query):
    response = client.post("/api/inquiries", json={**VALID, "altcha": solution(client)})
    assert response.status_code == 201
    assert response.json == {"ok": True}
    assert query(STATUSES) == [InquiryStatus.INBOX]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**VALID, "name": ""}, "name"),
        ({**VALID, "name": "x" * 101}, "name"),
        ({**VALID, "name": "a\x07b"}, "name"),
        ({**VALID, "email": "nope"}, "email"),
        ({**VALID, "email": "a" * 250 + "@example.com"}, "email"),
        ({**VALID, "message": "x" * 5001}, "message"),
        ({**VALID, "message": "bad\x00byte"}, "message"),
        ({**VALID, "message": 42}, "message"),
        ({"name": "A", "email": "a@example.com"}, "message"),
    ],
)
def test_json_invalid_returns_422_with_field_errors(client, body, field, query):
    response = client.post("/api/inquiries", json=body)
    assert response.status_code == 422
    assert response.json["ok"] is False
    assert field in response.json["errors"]
    assert query.count(Inquiry) == 0


def test_limits_are_inclusive(client):
    body = {"name": "n" * 100, "email": "ada@example.com", "message": "m" * 5000}
    assert client.post("/api/inquiries", json=body).status_code == 201


def test_message_keeps_newlines_and_tabs(client):
    assert client.post("/api/inquiries", json={**VALID, "message": "a\n\tb"}).status_code == 201


def test_non_json_content_type_is_415(client):
    response = client.post("/api/inquiries", data="name=x", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert "JSON" in response.json["error"]


def test_malformed_json_is_400(client):
    response = client.post("/api/inquiries", data="{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json["ok"] is False


def test_json_array_is_422(client):
    assert client.post("/api/inquiries", json=[1, 2]).status_code == 422


def test_body_over_64_kib_is_413(client, query):
    response = client.post("/api/inquiries", data="x" * (64 * 1024 + 1), content_type="application/json")
    assert response.status_code == 413
    assert query.count(Inquiry) == 0


def test_cross_origin_json_is_refused(client, query):
    response = client.post("/api/inquiries", json=VALID, headers={"Origin": "https://evil.example"})
    assert response.status_code == 403
    assert query.count(Inquiry) == 0


def test_same_origin_json_is_accepted(client):
    response = client.post("/api/inquiries", json=VALID, headers={"Origin": "http://localhost"})
    assert response.status_code == 201


def test_honeypot_answers_success_and_stores_nothing(client, query):
    assert client.post("/api/inquiries", json={**VALID, "website": "spam"}).status_code == 201
    form = {**VALID, "website": "spam", "csrf_token": csrf_token(client)}
    assert client.post("/", data=form).status_code == 303
    assert query.count(Inquiry) == 0


@pytest.fixture
def strict_limits(app_config):
    # Accepted, spam, honeypot and refused (429) attempts count; invalid ones do not. 2 a minute, 4 a day.
    app_config["SUBMIT_RATE_LIMITS"] = "2/60,4/86400"


def test_rate_limit_answers_429_with_retry_after(strict_limits, client, clock, query):
    assert client.post("/api/inquiries", json=VALID).status_code == 201
    assert client.post("/api/inquiries", json=VALID).status_code == 201
    refused = client.post("/api/inquiries", json=VALID)
    assert refused.status_code == 429
    assert 0 < int(refused.headers["Retry-After"]) <= 60
    assert "Too many requests" in refused.json["error"]
    clock.advance(seconds=61)
    assert client.post("/api/inquiries", json=VALID).status_code == 201
    clock.advance(seconds=61)
    daily = client.post("/api/inquiries", json=VALID)
    assert daily.status_code == 429
    assert int(daily.headers["Retry-After"]) > 60
    assert query.count(Inquiry) == 3


@pytest.fixture
def request_commits(app):
    """The commits made on the request's own thread (not the runner's), by the app's engine."""
    commits: list[int] = []
    here = threading.get_ident()
    engine = db.engine_of(app)

    def count(_connection) -> None:
        if threading.get_ident() == here:
            commits.append(1)

    event.listen(engine, "commit", count)
    yield commits
    event.remove(engine, "commit", count)


def test_a_submission_and_its_rate_limit_hit_commit_together(strict_limits, client, query, request_commits):
    """One write transaction per submission: on SQLite it takes the write lock once, not twice."""
    for _ in range(2):
        assert client.post("/api/inquiries", json=VALID).status_code == 201
    assert len(request_commits) == 2
    assert client.post("/api/inquiries", json=VALID).status_code == 429
    assert len(request_commits) == 3  # the refused attempt's hit is committed: it counts
    assert query.count(Inquiry) == 2
    # Three hits in each of the client's two windows; the site's two count only the two stored.
    assert sum(query(select(RateLimit.count))) == 3 * 2 + 2 * 2


def test_a_flood_from_endless_addresses_is_capped_for_the_whole_site(app_config, make_app, query):
    application = make_app({**app_config, "SUBMIT_GLOBAL_RATE_LIMITS": "5/60,1000/86400"})
    statuses = []
    for number in range(8):
        visitor = application.test_client()
        visitor.environ_base["REMOTE_ADDR"] = f"2001:db8:{number:x}::1"  # each its own /64: no client limit bites
        statuses.append(visitor.post("/api/inquiries", json=VALID).status_code)
    assert statuses == [201] * 5 + [429] * 3
    assert query.count(Inquiry) == 5


def test_a_submission_counts_its_hit_in_every_window_with_one_statement(strict_limits, app, client, query):
    """A read of the client's windows (a client already over its limit is refused before its inquiry is
    written), then, after the inquiry, the client's two limits and the site's two in one upsert (a round trip
    more under the site's shared row is a wait more for every other submission on PostgreSQL)."""
    statements = [each for each in statements_of_one_submission(app, client) if "rate_limits" in each]
    assert [statement.split()[0] for statement in statements] == ["SELECT", "INSERT"]
    assert sorted(query(select(RateLimit.count))) == [1, 1, 1, 1]  # the client's two windows, the site's two


def test_a_client_over_its_own_limit_spends_none_of_the_sites(strict_limits, client, query):
    for _ in range(2):
        assert client.post("/api/inquiries", json=VALID).status_code == 201
    assert client.post("/api/inquiries", json=VALID).status_code == 429  # over once counted: counted again alone
    assert client.post("/api/inquiries", json=VALID).status_code == 429  # already over: refused by the read
    site = select(RateLimit.count).where(RateLimit.key.like("submit-all:%"))
    assert query(site) == [2, 2]


def test_a_submissions_counts_are_written_after_its_inquiry_so_their_rows_are_locked_only_until_its_commit(
    strict_limits, app, client
):
    """PostgreSQL holds a row lock until the transaction ends: counted first, the site-wide row made every
    submission wait for the whole transaction of every other."""
    statements = [" ".join(each.split()[:3]) for each in statements_of_one_submission(app, client)]
    inquiry = next(i for i, s in enumerate(statements) if s.startswith("INSERT INTO submissions"))
    counts = [i for i, s in enumerate(statements) if s.startswith("INSERT INTO rate_limits")]
    assert len(counts) == 1 and min(counts) > inquiry, statements


def test_a_submission_reads_its_clients_windows_before_its_write_transaction(strict_limits, app, client):
    """On SQLite the write transaction holds the one write lock from its start: the read that refuses a client
    already over its limit comes before it, so no other writer waits for it."""
    statements = statements_of_one_submission(app, client)
    read = next(i for i, s in enumerate(statements) if s.startswith("SELECT") and "rate_limits" in s)
    inquiry = next(i for i, s in enumerate(statements) if s.startswith("INSERT INTO submissions"))
    assert BEGUN in statements[read:inquiry], statements


@pytest.fixture
def same_length_limits(app_config):
    app_config["SUBMIT_RATE_LIMITS"] = "3/60,2/60"


def test_limits_of_the_same_length_share_a_window_and_the_tighter_one_refuses(same_length_limits, client, query):
    assert client.post("/api/inquiries", json=VALID).status_code == 201
    assert client.post("/api/inquiries", json=VALID).status_code == 201
    assert client.post("/api/inquiries", json=VALID).status_code == 429
    client_rows = select(RateLimit.count).where(RateLimit.key.like("submit:%"))
    assert query(client_rows) == [3]  # one row for both of the client's limits


def test_invalid_submissions_do_not_count_towards_the_limit(strict_limits, client, query):
    for _ in range(5):
        assert client.post("/api/inquiries", json={**VALID, "email": "nope"}).status_code == 422
        assert client.post("/", data={**VALID, "message": "", "csrf_token": csrf_token(client)}).status_code == 422
    assert client.post("/api/inquiries", json=VALID).status_code == 201  # spam counts
    assert client.post("/api/inquiries", json={**VALID, "website": "x"}).status_code == 201  # so does the honeypot
    assert client.post("/api/inquiries", json=VALID).status_code == 429
    assert query.count(Inquiry) == 1


def test_rate_limit_holds_across_app_instances(strict_limits, app_config, client, make_app):
    other = make_app(app_config).test_client()
    assert client.post("/api/inquiries", json=VALID).status_code == 201
    assert other.post("/api/inquiries", json=VALID).status_code == 201
    assert other.post("/api/inquiries", json=VALID).status_code == 429


def test_rate_limited_form_shows_a_page(strict_limits, client):
    token = csrf_token(client)
    for _ in range(2):
        client.post("/", data={**VALID, "csrf_token": token})
    response = client.post("/", data={**VALID, "csrf_token": token})
    assert response.status_code == 429
    assert "Retry-After" in response.headers
    assert "Too many requests" in response.get_data(as_text=True)


def test_rate_limit_rows_store_no_client_address(strict_limits, client, query):
    client.post("/api/inquiries", json=VALID, environ_base={"REMOTE_ADDR": "203.0.113.9"})
    keys = query(select(RateLimit.key))
    assert keys and not any("203.0.113.9" in key for key in keys)


def test_privacy_states_both_retentions(client, app):
    page = client.get("/privacy").get_data(as_text=True)
    assert "<strong>180 days</strong>" in page and "<strong>30 days</strong>" in page
    with app.app_context(), db.transaction() as session:
        session.add(Setting(key="retention_days", value="60"))
        session.add(Setting(key="spam_retention_days", value="7"))
    page = client.get("/privacy").get_data(as_text=True)
    assert "<strong>60 days</strong>" in page and "<strong>7 days</strong>" in page


def test_privacy_without_an_operator_tells_the_owner_what_to_set(client):
    page = client.get("/privacy").get_data(as_text=True)
    assert 'id="operator-unset"' in page and "SUNDOWN_OPERATOR_NAME" in page
    assert "To write to us about your data" not in page


@pytest.fixture
def operator(app_config):
    """The operator's name and contact (set before the app is built)."""
    app_config["OPERATOR_NAME"] = "Example <Ltd>, 1 Main Street, Lyon"
    app_config["OPERATOR_CONTACT"] = "Privacy@Example.org"


def test_privacy_names_the_operator_and_links_their_contact(operator, client):
    page = client.get("/privacy").get_data(as_text=True)
    assert "in the care of Example &lt;Ltd&gt;, 1 Main Street, Lyon." in page
    assert '<a href="mailto:Privacy@example.org">Privacy@example.org</a>' in page
    assert 'id="operator-unset"' not in page


@pytest.mark.parametrize(
    ("contact", "shown"),
    [
        ("https://example.org/privacy", '<a href="https://example.org/privacy">https://example.org/privacy</a>'),
        ("Data Office, 1 <Main> St", "Data Office, 1 &lt;Main&gt; St"),
        (None, None),
    ],
)
def test_the_operators_contact_is_a_link_when_it_is_an_address(app, contact, shown):
    with app.app_context():
        assert (str(contact_link(contact)) if contact else None) == shown


def test_healthz_reports_database_and_migrations(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json == {"ok": True, "database": True, "migrations": True, "cleanup": "ok"}


@pytest.mark.parametrize("path", ["/", "/privacy", "/thanks", "/healthz", "/nope"])
def test_security_headers_on_every_response(client, path):
    headers = client.get(path).headers
    csp = headers["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "worker-src 'self'" in csp  # the form's solver
    assert "unsafe-inline" not in csp
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"]


def test_pages_have_no_inline_scripts_or_styles(client):
    for path in ("/", "/privacy", "/thanks"):
        page = client.get(path).get_data(as_text=True)
        assert "<script>" not in page and "<style" not in page and "style=" not in page


def test_unknown_page_is_a_friendly_404(client):
    response = client.get("/nope")
    assert response.status_code == 404
    assert "Not Found" in response.get_data(as_text=True)
