"""Small helpers shared by the tests."""

from __future__ import annotations

import re
import threading
from datetime import timedelta

import altcha
from sqlalchemy import event, select

from app.core import background, clock, db
from app.inquiries import spam
from app.models import Base

CSRF_INPUT = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_token(client, path: str = "/") -> str:
    """The CSRF token from the form at ``path``."""
    page = client.get(path).get_data(as_text=True)
    match = CSRF_INPUT.search(page)
    assert match, f"no CSRF token on {path}"
    return match.group(1)


def settle(app, timeout: float = 30) -> None:
    """Wait until ``app``'s background runner has nothing pending or running (work after responses)."""
    assert background.runner_of(app).wait_idle(timeout), "background work did not finish"


VALID = {"name": "Ada Lovelace", "email": "ada@example.com", "message": "Hello,\nI have a question."}
FILL_TIME = timedelta(seconds=20)  # how long the people in the tests take to fill in the form


def solution(client) -> str:
    """The proof-of-work a browser sends: a fresh challenge from ``client``'s app, solved (the altcha package)."""
    challenge = altcha.Challenge.from_dict(client.get("/api/challenge").get_json())
    return altcha.Payload(challenge, altcha.solve_challenge(challenge)).to_base64()


def rendered_ago(app, ago: timedelta = FILL_TIME) -> str:
    """The signed render time of a form shown ``ago`` before the app's clock says now."""
    with app.app_context():
        return spam.form_token(clock.now() - ago)


def filled_form(client, **fields) -> dict:
    """What a person's browser posts: ``VALID`` (or ``fields``), the CSRF token, a render time
    ``FILL_TIME`` ago and a solved challenge."""
    return {
        **VALID,
        "csrf_token": csrf_token(client),
        spam.RENDERED_FIELD: rendered_ago(client.application),
        spam.FIELD: solution(client),
        **fields,
    }


def submit_inquiry(client) -> int:
    """POST a valid, solved JSON inquiry and wait for the work after it; the status code.

    Closing the response hands the cleanup to the runner, as a server does.
    """
    with client.post("/api/inquiries", json={**VALID, spam.FIELD: solution(client)}) as response:
        status = response.status_code
    settle(client.application)
    return status


def query_plan(db_session, statement) -> str:
    """The database's plan for ``statement`` as one string; on PostgreSQL with sequential scans off, since
    the tests' tables are tiny and the question is whether an index can serve."""
    from sqlalchemy import text

    compiled = statement.compile(db_session.get_bind(), compile_kwargs={"literal_binds": True})
    if db_session.get_bind().dialect.name == "sqlite":
        return " ".join(str(row[-1]) for row in db_session.execute(text(f"EXPLAIN QUERY PLAN {compiled}")))
    db_session.execute(text("SET enable_seqscan = off"))
    return " ".join(row[0] for row in db_session.execute(text(f"EXPLAIN {compiled}")))


def editor_post(client, path: str, fields: list[dict], action: str = "save", **settings) -> dict:
    """What the editor's plain HTML form posts for a form with ``fields`` (rows in order)."""
    data = {
        "csrf_token": csrf_token(client, path),
        "action": action,
        "field_count": str(len(fields)),
        "slug": "quote",
        "title-en": "Quote request",
        "enabled": "1",
        **settings,
    }
    for row, field in enumerate(fields):
        data.update({f"field-{row}-{part}": value for part, value in field.items()})
        data.setdefault(f"field-{row}-position", str(row + 1))
    return data


def snapshot(query, skip: tuple[str, ...] = ()) -> dict[str, list[tuple]]:
    """Every row of every table the models describe (but those named in ``skip``), in a stable order: two
    snapshots compare equal when nothing was written between them."""

    def read(session) -> dict[str, list[tuple]]:
        return {
            table.name: sorted((tuple(row) for row in session.execute(select(table))), key=repr)
            for table in Base.metadata.sorted_tables
            if table.name not in skip
        }

    return query.using(read)


def statements_of_one_submission(app, client, parameters: bool = False) -> list[str]:
    """The statements a valid submission sends from this thread through SQLAlchemy, in order; with
    ``parameters``, each followed by `` -- `` and its parameters."""
    statements: list[str] = []
    here = threading.get_ident()

    def record(_conn, _cursor, statement: str, values, *_args) -> None:
        if threading.get_ident() == here:
            statements.append(f"{statement} -- {values!r}" if parameters else statement)

    def begun(_conn) -> None:
        if threading.get_ident() == here:
            statements.append(BEGUN)

    engine = db.engine_of(app)
    event.listen(engine, "before_cursor_execute", record)
    event.listen(engine, "begin", begun)
    try:
        assert client.post("/api/inquiries", json=VALID).status_code == 201
    finally:
        event.remove(engine, "before_cursor_execute", record)
        event.remove(engine, "begin", begun)
    return statements


BEGUN = "-- a transaction begins"
