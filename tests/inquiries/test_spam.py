"""The spam defence (app.inquiries.spam): proof-of-work, replays, the time trap, weighed with the content;
suspicious inquiries are filed in spam with the checks that put them there."""

from __future__ import annotations

import base64
import json
import threading
from datetime import timedelta

import altcha
import pytest
from sqlalchemy import event, select

from app import config
from app.core import db
from app.inquiries import spam
from app.models import Inquiry, InquiryStatus, UsedChallenge
from tests.helpers import VALID, csrf_token, filled_form, rendered_ago, solution

STATUSES = select(Inquiry.status).order_by(Inquiry.id)
CHECKS = select(Inquiry.spam_checks).order_by(Inquiry.id)
ONE_LINK = {"message": "Hello, see https://one.example for what I mean."}
INBOX, SPAM = InquiryStatus.INBOX, InquiryStatus.SPAM


def send_json(client, **extra):
    return client.post("/api/inquiries", json={**VALID, **extra})


def decoded(payload: str) -> dict:
    return json.loads(base64.b64decode(payload))


def encoded(data: dict) -> str:
    return base64.b64encode(json.dumps(data).encode()).decode()


# --- the challenge --------------------------------------------------------------


def test_challenge_is_a_signed_altcha_v2_challenge_never_cached(client, clock):
    response = client.get("/api/challenge")
    assert response.headers["Cache-Control"] == "no-store"
    challenge = response.get_json()
    parameters = challenge["parameters"]
    assert set(challenge) == {"parameters", "signature"} and len(challenge["signature"]) == 64
    assert (parameters["algorithm"], parameters["cost"]) == ("PBKDF2/SHA-256", spam.COST)
    assert parameters["keySignature"]  # the fast path: verifying costs one HMAC
    assert parameters["data"] == {"expires": int((clock() + timedelta(seconds=600)).timestamp())}
    assert "expiresAt" not in parameters  # the package would check it against the wall clock


def test_the_counter_to_find_comes_from_the_apps_randomness(app_config, make_app):
    app_config.update(RANDOM_BYTES=lambda count: (1234).to_bytes(count, "big"), POW_MAX_NUMBER=5000)
    client = make_app(app_config).test_client()
    challenge = altcha.Challenge.from_dict(client.get("/api/challenge").get_json())
    assert altcha.solve_challenge(challenge).counter == 1234


def test_the_default_difficulty_and_lifetime():
    assert (config.DEFAULTS["POW_MAX_NUMBER"], config.DEFAULTS["POW_TTL"]) == (2500, 600)
    assert config.DEFAULTS["MIN_FILL_SECONDS"] == 3


def test_challenges_are_signed_with_a_key_derived_from_the_secret_key(app_config, make_app, app, client):
    other = make_app({**app_config, "SECRET_KEY": "another-secret-long-enough-for-production"}).test_client()
    with app.test_request_context("/"):
        assert spam.check_solution(solution(other)).reason == spam.Reason.INVALID


# --- proof-of-work verdicts -------------------------------------------------------


def test_a_solved_challenge_lands_in_the_inbox(client, query):
    assert send_json(client, altcha=solution(client)).status_code == 201
    assert client.post("/", data=filled_form(client)).status_code == 303
    assert query(STATUSES) == [INBOX, INBOX]


def test_no_solution_alone_reaches_the_inbox_and_with_links_lands_in_spam_saying_why(client, query):
    """A person without JavaScript is one check against, never the only gate."""
    assert send_json(client).json == {"ok": True}
    form = filled_form(client, altcha="")
    response = client.post("/", data=form)
    assert (response.status_code, response.headers["Location"]) == (303, "/thanks")
    two_links = "See https://a.example and https://b.example now"
    assert send_json(client, message=two_links).json == {"ok": True}  # the same answer
    assert query(STATUSES) == [INBOX, INBOX, SPAM]
    assert query(CHECKS) == [None, None, ["no_solution", "links:2"]]


def test_a_wrong_solution_counts_twice_against(client, query):
    payload = decoded(solution(client))
    wrong_key = {**payload, "solution": {**payload["solution"], "derivedKey": "00" * 32}}
    assert send_json(client, altcha=encoded(wrong_key), **ONE_LINK).status_code == 201
    payload = decoded(solution(client))
    harder = {
        **payload,
        "challenge": {**payload["challenge"], "parameters": {**payload["challenge"]["parameters"], "cost": 1}},
    }  # an easier challenge than the one signed
    assert send_json(client, altcha=encoded(harder), **ONE_LINK).status_code == 201
    assert query(STATUSES) == [SPAM, SPAM]
    assert query(CHECKS) == [["invalid_solution", "links:1"]] * 2
    assert query.count(UsedChallenge) == 0


@pytest.mark.parametrize(
    "raw",
    [
        "not base64 !",
        base64.b64encode(b"\xff\xfe").decode(),
        encoded({"challenge": [], "solution": 3}),
        encoded({"challenge": {"parameters": {}}, "solution": {}}),
        base64.b64encode(b"[" * 5000).decode(),
        12345,
        ["a"],
        {"challenge": 1},
    ],
)
def test_a_malformed_solution_counts_against_never_an_error(client, query, raw):
    assert send_json(client, altcha=raw, **ONE_LINK).status_code == 201
    assert query(STATUSES) == [SPAM] and query(CHECKS) == [["malformed_solution", "links:1"]]


def test_an_expired_challenge_counts_against(client, clock, query):
    almost, late = solution(client), solution(client)
    clock.advance(seconds=599)
    assert send_json(client, altcha=almost, **ONE_LINK).status_code == 201
    clock.advance(seconds=1)  # 600 s: the challenge's expiry
    assert send_json(client, altcha=late, **ONE_LINK).status_code == 201
    assert query(STATUSES) == [INBOX, SPAM] and query(CHECKS)[1] == ["expired_challenge", "links:1"]


def test_a_replayed_solution_lands_in_spam(client, query):
    payload = solution(client)
    assert send_json(client, altcha=payload).status_code == 201
    assert send_json(client, altcha=payload).status_code == 201
    assert client.post("/", data=filled_form(client, altcha=payload)).status_code == 303
    assert query(STATUSES) == [INBOX, SPAM, SPAM]
    assert query(CHECKS)[1] == ["replayed_solution"]


def test_postgresql_stores_the_used_challenge_and_the_inquiry_in_one_statement(app, client, db_kind, query):
    """A round trip fewer per solved submission: in a threaded worker each one also waits for the GIL."""
    payload = solution(client)
    statements = []
    event.listen(db.engine_of(app), "before_cursor_execute", lambda *call: statements.append(call[2]))
    assert send_json(client, altcha=payload).status_code == 201
    writes = [sql for sql in statements if "used_challenges" in sql or "INSERT INTO submissions" in sql]
    assert len(writes) == 1
    # SQLite has no data-modifying CTE: there the challenge goes in first, on the driver's cursor.
    assert ("used_challenges" in writes[0]) == (db_kind == "postgresql")
    assert query(STATUSES) == [INBOX] and query.count(UsedChallenge) == 1


def test_a_used_challenge_is_kept_until_it_expires(client, clock, query):
    send_json(client, altcha=solution(client))
    (expires_at,) = query(select(UsedChallenge.expires_at))
    assert expires_at == (clock() + timedelta(seconds=600)).replace(microsecond=0)


def test_ten_threads_sending_one_solution_at_once_put_at_most_one_in_the_inbox(app, query):
    payload = solution(app.test_client())
    start = threading.Barrier(10)
    statuses = []

    def send():
        client = app.test_client()
        start.wait()
        statuses.append(send_json(client, altcha=payload).status_code)

    threads = [threading.Thread(target=send) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [201] * 10
    stored = query(STATUSES)
    assert len(stored) == 10 and stored.count(INBOX) == 1
    assert query.count(UsedChallenge) == 1


def test_a_database_error_on_the_used_challenge_insert_is_a_503_and_stores_nothing(app, client, query):
    payload, form = solution(client), filled_form(client, message="Kept through the outage")
    with app.app_context(), db.get_engine().begin() as connection:  # the insert's table is gone
        connection.exec_driver_sql("DROP TABLE used_challenges")
    assert send_json(client, altcha=payload).status_code == 503
    response = client.post("/", data=form)
    assert response.status_code == 503 and "Kept through the outage" in response.get_data(as_text=True)
    assert query.count(Inquiry) == 0


# --- the time trap -------------------------------------------------------------


@pytest.mark.parametrize(
    ("shown", "status", "checks"),
    [
        (timedelta(seconds=2.9), SPAM, ["too_fast"]),
        (timedelta(seconds=3), INBOX, None),
        (timedelta(days=1), INBOX, None),
        (timedelta(days=1, seconds=1), INBOX, None),
    ],
)
def test_the_time_trap_files_a_form_sent_too_soon_as_spam_even_solved(client, query, shown, status, checks):
    """Too soon outweighs a solved challenge; a day-old form counts only a little against."""
    form = filled_form(client, rendered=rendered_ago(client.application, shown))
    assert client.post("/", data=form).status_code == 303
    assert query(STATUSES) == [status] and query(CHECKS) == [checks]


@pytest.mark.parametrize(
    ("rendered", "checks"),
    [
        (None, ("own_page",)),
        ("", ("own_page",)),
        ("1700000000000", ("no_render_time", "own_page")),
        ("1700000000000.forged-signature", ("no_render_time", "own_page")),
    ],
)
def test_a_render_time_is_checked_only_where_the_form_carries_one(app, client, rendered, checks):
    """A snippet pasted on another site has no render time: that is no sign of anything; a forged one is
    noted (it weighs nothing alone)."""
    form = filled_form(client, altcha="")
    if rendered is None:
        del form["rendered"]
    else:
        form["rendered"] = rendered
    with app.test_request_context("/"):
        verdict = spam.judge_form(form, spam.Reason.OWN_PAGE)
    assert verdict.reason == spam.Reason.NO_SOLUTION and verdict.checks == checks and not verdict.spam


def test_the_form_shown_again_keeps_its_first_render_time(client, query):
    first = rendered_ago(client.application, timedelta(seconds=5))  # typed for 5 s, then "Send"
    page = client.post("/", data={**filled_form(client, rendered=first), "email": "x"}).get_data(as_text=True)
    assert f'name="rendered" value="{first}"' in page
    # Fixing the email takes no time (the clock stands still): still 5 s since the form was first shown.
    assert client.post("/", data=filled_form(client, rendered=first)).status_code == 303
    assert query(STATUSES) == [INBOX]


def test_a_fresh_form_carries_a_render_time_of_now(client, clock):
    page = client.get("/").get_data(as_text=True)
    with client.application.app_context():
        assert f'name="rendered" value="{spam.form_token(clock())}"' in page


def test_the_form_loads_its_solver_and_the_csp_allows_its_worker(client):
    response = client.get("/")
    page = response.get_data(as_text=True)
    assert '<script src="/static/form.js">' in page
    assert 'data-worker-url="/static/pow-worker.js"' in page and 'data-challenge-url="/api/challenge"' in page
    assert 'name="altcha" value=""' in page
    assert "worker-src 'self'" in response.headers["Content-Security-Policy"]
    for asset in ("form.js", "pow-worker.js"):
        with client.get(f"/static/{asset}") as script:
            assert script.status_code == 200


# --- refusals keep the text and are announced ----------------------------------------


def test_a_rate_limited_form_keeps_the_text_says_the_wait_and_takes_focus(app_config, make_app):
    app_config["SUBMIT_RATE_LIMITS"] = "1/60,100/86400"
    client = make_app(app_config).test_client()
    assert client.post("/", data=filled_form(client)).status_code == 303
    response = client.post("/", data=filled_form(client, message="My second, carefully typed message"))
    page = response.get_data(as_text=True)
    assert response.status_code == 429 and response.headers["Retry-After"] == "60"
    assert "My second, carefully typed message" in page
    assert "Please try again in 60 seconds." in page
    assert 'role="alert" tabindex="-1" autofocus data-summary id="form-notice"' in page


def test_a_refused_json_inquiry_keeps_its_429_and_retry_after(app_config, make_app):
    app_config["SUBMIT_RATE_LIMITS"] = "1/60,100/86400"
    client = make_app(app_config).test_client()
    assert send_json(client).status_code == 201
    refused = send_json(client)
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "60"


def test_csrf_is_checked_before_anything_is_filed(client, query):
    form = filled_form(client, csrf_token="stale")
    assert client.post("/", data=form).status_code == 400
    assert query.count(Inquiry) == 0 and query.count(UsedChallenge) == 0
    assert csrf_token(client)
