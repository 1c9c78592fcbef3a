"""The first page of an inbox search, on SQLite and PostgreSQL, on the backlog's realistic rows.

A copy of the backlog template (1,000,000 expired and 100,000 recent
realistic rows in the full run) with the retention raised to its maximum,
so every row is in the inbox. One admin opens ``/admin/?q=...`` through the
app (Flask's test client: the whole page, its search, its count of matches
and the navigation's unread count), ``ROUNDS`` times for each search:
text in almost every message, text in a few percent of them (a name), text
in a handful (an e-mail address), text in none, and three characters
found nowhere (the shortest search allowed). The goal applies to each.

Control: the same searches with the index left unused (SQLite: ``LIKE`` on
every row, as before the index; PostgreSQL: the trigram indexes dropped);
its rare and absent searches must miss the goal at the full size.
"""

from __future__ import annotations

import time

from app import create_app
from app.core import db
from app.inquiries import search
from bench.report import Control
from bench.servers import server_env
from bench.stats import median
from devtools.admins import log_in, site_settings
from devtools.realistic import Rows

ROUNDS = 5
CONTROL_STATEMENT_TIMEOUT = 600  # seconds
GOAL_MS = 300


def searches() -> dict[str, str]:
    """The searches measured, by kind; the rare ones taken from the template's own rows (seed 1)."""
    name, email = Rows(1).person()
    return {
        "common_word": "delivery",
        "name": name.split()[1],
        "email": email,
        "absent": "zebracorn",
        "three_characters": "qxz",
    }


def run(ctx) -> None:
    """Both databases: each search's median first page, then the control without the index."""
    control = Control("search_without_index", "LIKE on every row")
    for kind in ("sqlite", "postgresql"):
        database = ctx.template(kind).copy(f"search_{kind}")
        database.set_setting("retention_days", "3650")
        try:
            _measure(ctx, database, kind, "")
            control.figures += _measure(ctx, database, kind, "no_index")
        finally:
            database.drop()
    if ctx.quick:  # 5,500 rows: LIKE on every row is still well within the goal, so nothing can separate
        print(f"# control {control.name}: not judged in quick mode (judged at the full size)", flush=True)
    else:
        ctx.report.control(control)


def _measure(ctx, database, kind: str, variant: str) -> list:
    settings = site_settings(server_env(database.url))
    if variant:  # without the index a page reads every message: at the large sizes, past the default timeout
        settings["DB_STATEMENT_TIMEOUT"] = CONTROL_STATEMENT_TIMEOUT
    app = create_app(settings)
    login = log_in(app, f"Bench {variant or 'admin'}", browser="bench")
    client = app.test_client()
    client.set_cookie(login.cookie, login.token)
    original = search.found_ids
    if variant:
        _leave_index_unused(database)
    try:
        _page(client, "")  # warm-up: imports, connections, the cleanup claim
        timings = {kind_: [_page(client, text) for _ in range(ROUNDS)] for kind_, text in searches().items()}
    finally:
        search.found_ids = original
        db.engine_of(app).dispose()
    rows = database.count()
    figures = []
    for name, samples in timings.items():
        figures.append(
            ctx.report.add(
                f"search_first_page_ms_{name}",
                median(samples),
                f"≤ {GOAL_MS}",
                kind,
                f"{rows} rows, q={searches()[name]!r}; per page {', '.join(f'{s:.0f}' for s in samples)} ms",
                samples=f"{ROUNDS} pages",
                variant=variant,
            )
        )
    return [figure for figure in figures if figure.name.endswith(("_email", "_absent", "_three_characters"))]


def _leave_index_unused(database) -> None:
    """The control: SQLite searches with ``LIKE`` alone; PostgreSQL loses its trigram indexes (a copy's)."""
    if database.kind == "sqlite":
        search.found_ids = lambda _session, _query: None  # every search is the LIKE walk
        return
    with database.engine.begin() as conn:
        for index in sorted(search.TRIGRAM_INDEXES):
            conn.exec_driver_sql(f"DROP INDEX {index}")


def _page(client, text: str) -> float:
    """Milliseconds for one inbox page searching ``text`` (the whole response)."""
    started = time.perf_counter()
    response = client.get("/admin/", query_string={"q": text} if text else None)
    assert response.status_code == 200, f"search answered {response.status_code}"
    response.get_data()
    return (time.perf_counter() - started) * 1000
