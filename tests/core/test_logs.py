"""Log lines (app/core/logs.py): JSON or text on stderr, a request id on each, and no personal data.

The handler writes to whatever ``sys.stderr`` is, so ``capsys`` sees exactly
the lines a server's log would get. A journey through gunicorn and Caddy with
JSON logs is in test_deploy_caddy.py.
"""

from __future__ import annotations

import json
import logging

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import DBAPIError

from app import cleanup
from app.core import db
from app.models import Inquiry
from tests.factories import add_inquiries, aged_inquiries
from tests.helpers import csrf_token, settle
from tests.softauthn import PasskeyBrowser, invite

# Personal data a journey types in; none may reach a log line.
PERSON = {
    "name": "Wilhelmina Quackenbush",
    "email": "wilhelmina.q@example.net",
    "message": "My neighbour Ottoline Frobisher lives at 17 Quarry Lane.",
}
SECRETS = (
    "Wilhelmina",
    "Quackenbush",
    "wilhelmina.q",
    "Ottoline",
    "Frobisher",
    "Quarry Lane",
    "Grace Hopperine",
    "bad-address-xyzzy",
)


def json_lines(text: str) -> list[dict]:
    """Every stderr line, each of which must be one JSON object."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture
def json_app(app_config, make_app):
    return make_app({**app_config, "LOG_FORMAT": "json"})


def test_json_lines_parse_and_carry_the_request_id_returned_in_the_header(json_app, capsys):
    capsys.readouterr()
    response = json_app.test_client().get("/privacy")
    [line] = json_lines(capsys.readouterr().err)
    assert line["request_id"] == response.headers["X-Request-ID"]
    assert (line["level"], line["logger"]) == ("INFO", "app.requests")
    assert line["http"] == {"method": "GET", "endpoint": "public.privacy", "status": 200, "ms": line["http"]["ms"]}
    assert line["message"].startswith("GET public.privacy 200 ")
    assert line["time"].endswith("+00:00")


def test_a_generated_request_id_comes_from_the_injected_randomness(app_config, make_app):
    app = make_app({**app_config, "RANDOM_BYTES": lambda count: bytes(range(count))})
    assert app.test_client().get("/privacy").headers["X-Request-ID"] == bytes(range(16)).hex()


@pytest.mark.parametrize(
    ("proxies", "supplied", "kept"),
    [
        (0, "from-the-client", False),  # no trusted proxy: anyone could send it
        (1, "caddy-3f2a.9", True),
        (1, "two words", False),
        (1, "x" * 129, False),
        (1, "semi;colon<script>", False),
    ],
)
def test_a_supplied_request_id_is_used_only_from_a_trusted_proxy_and_when_plain(
    app_config, make_app, proxies, supplied, kept
):
    client = make_app({**app_config, "PROXY_FIX": proxies}).test_client()
    answered = client.get("/privacy", headers={"X-Request-ID": supplied}).headers["X-Request-ID"]
    assert (answered == supplied) is kept
    assert len(answered) == (len(supplied) if kept else 32)


def test_text_lines_carry_the_request_id_too(client, capsys):
    capsys.readouterr()
    response = client.get("/privacy")
    [line] = capsys.readouterr().err.splitlines()
    assert f" INFO app.requests [{response.headers['X-Request-ID']}] GET public.privacy 200 " in line


def test_a_cleanup_run_logs_its_fields_as_an_object(db_session, clock, json_app, capsys):
    # json_app last: the newest app's handler is the process's one (one app per process in production).
    add_inquiries(db_session, aged_inquiries(clock, [200, 300]))
    capsys.readouterr()
    with json_app.app_context():
        cleanup.run("test")
    [line] = [line for line in json_lines(capsys.readouterr().err) if "cleanup_run" in line]
    run = line["cleanup_run"]
    assert (line["level"], line["logger"], line["request_id"]) == ("INFO", "app.cleanup", None)
    assert (run["status"], run["trigger"], run["deleted"]["inquiries"]) == ("ok", "test", 2)


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_a_whole_journey_logs_no_personal_data(app_config, make_app, capsys, caplog, log_format):
    app = make_app({**app_config, "LOG_FORMAT": log_format, "SUBMIT_RATE_LIMITS": "6/60"})
    visitor = app.test_client()
    capsys.readouterr()
    visitor.post("/", data={**PERSON, "csrf_token": csrf_token(visitor)})
    assert visitor.post("/api/inquiries", json=PERSON).status_code == 201
    visitor.post("/api/inquiries", json={**PERSON, "email": "bad-address-xyzzy"})
    visitor.post("/api/inquiries", json={**PERSON, "website": "http://Quackenbush.example"})
    while visitor.post("/api/inquiries", json=PERSON).status_code != 429:
        pass
    settle(app)
    admin = PasskeyBrowser(app, app.test_client())
    assert admin.enroll(invite(app, "Grace Hopperine")).status_code == 200
    with app.app_context():
        from app.core.db import get_session

        ids = list(get_session().scalars(select(Inquiry.id)))
    for path in ["/admin/", f"/admin/inquiries/{ids[0]}", "/admin/export.csv", "/admin/account"]:
        assert admin.client.get(path).status_code == 200, path
    token = csrf_token(admin.client, "/admin/")
    admin.client.post("/admin/inquiries/delete", data={"ids": ids[:1], "confirm": "1", "csrf_token": token})
    admin.logout()
    assert admin.login().status_code == 200
    logged = capsys.readouterr().err + caplog.text
    assert "app.requests" in logged  # the journey was logged
    for secret in SECRETS:
        assert secret.lower() not in logged.lower(), secret


def test_a_logged_database_error_shows_its_sql_but_not_its_parameters(json_app, capsys):
    with json_app.app_context():
        with pytest.raises(DBAPIError) as raised, db.get_engine().connect() as connection:
            connection.execute(text("INSERT INTO no_such_table VALUES (:name)"), {"name": PERSON["name"]})
        capsys.readouterr()
        logging.getLogger("app.web.errors").error("database error", exc_info=raised.value)
    [line] = json_lines(capsys.readouterr().err)
    assert "INSERT INTO no_such_table" in line["exc_info"]
    assert "SQL parameters hidden" in line["exc_info"]
    assert "Wilhelmina" not in json.dumps(line)
