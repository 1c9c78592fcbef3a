"""The first Retention page with its forecast, on SQLite and PostgreSQL, at a million inquiries over twenty forms.

A database of ``forecast_rows`` realistic inquiries (1,000,000 in the full
run) received over the last 400 days, spread over twenty forms with six
retentions (30 days to two years, one form counting from the thread's
last message), a tenth of them spam and about 5% on hold. One owner opens
``/admin/retention`` through the app (Flask's test client, the whole page,
after one other admin page has warmed the process up):

* ``forecast_first_page_ms_empty``: the first page before any forecast
  is stored (it asks for one after its response);
* ``forecast_first_page_ms``: the page once the forecast is stored (what
  every owner sees), ``ROUNDS`` times (the control's ``CONTROL_ROUNDS``);
* ``forecast_compute_ms``: computing the forecast itself, as the refresh
  after a response does (a trend figure: no page waits for it).

Control: the page computing the forecast itself, as if there were no
store (``forecast_store.current`` replaced by a computation); it must miss
the goal at the full size.
"""

from __future__ import annotations

import time
from datetime import timedelta

from sqlalchemy import delete, update

from app import create_app
from app.core import background, clock, db
from app.inquiries import forecast, forecast_store
from app.models import Form, Inquiry, Setting
from bench.databases import utcnow
from bench.report import Control
from bench.servers import server_env
from bench.stats import median
from devtools.admins import log_in, site_settings
from devtools.realistic import Rows

ROUNDS = 5
CONTROL_ROUNDS = 2  # the control's pages take seconds each and miss the goal by far
GOAL_MS = 300
FORMS = 20
RETENTIONS = (30, 90, 180, 365, 730, None)  # None: the site's 180 days
SPAN_DAYS = 400
ROWS = {"full": 1_000_000, "quick": 20_000}


def run(ctx) -> None:
    """Both databases: the first pages and the computation, then the control."""
    control = Control("forecast_in_the_page", "the page computes the forecast itself")
    rows = ROWS["quick" if ctx.quick else "full"]
    for kind in ("sqlite", "postgresql"):
        # Loaded once a week and kept (a million rows take minutes to load); measured on a copy.
        # Named with its size: a quick run's 20,000 rows must not take the million's place (a load drops the
        # other databases of its prefix, as stale).
        template = ctx.cached(kind, f"forecast_{rows}", rows, lambda each: _load(each, rows))
        database = template.copy(f"forecast_{kind}")
        try:
            _measure(ctx, database, kind, "")
            control.figures += _measure(ctx, database, kind, "computed_in_page")
        finally:
            database.drop()
    if ctx.quick:  # at 20,000 rows even the computation fits the goal: nothing can separate
        print(f"# control {control.name}: not judged in quick mode (judged at the full size)", flush=True)
    else:
        ctx.report.control(control)


def _load(database, rows: int) -> None:
    """``rows`` inquiries over the last ``SPAN_DAYS`` days on twenty forms, a tenth spam, one form by last message."""
    now = utcnow()
    database.load_rows(Rows(7).inquiries(rows, now - timedelta(days=SPAN_DAYS), now - timedelta(minutes=1)))
    retentions = {f"form-{n}": RETENTIONS[n % len(RETENTIONS)] for n in range(2, FORMS + 1)}
    forms = database.add_forms({"contact": None, **retentions})
    with database.engine.begin() as conn:
        conn.execute(update(Form).where(Form.slug == "form-2").values(retention_clock="last_message"))
        conn.execute(update(Inquiry).where(Inquiry.id % 10 == 0).values(status="spam"))
    database.spread_over_forms(sorted(forms.values()))


def _measure(ctx, database, kind: str, variant: str) -> list:
    settings = site_settings(server_env(database.url))
    app = create_app(settings)
    login = log_in(app, f"Bench {variant or 'owner'}", browser="bench")
    client = app.test_client()
    client.set_cookie(login.cookie, login.token)
    original = forecast_store.current
    empty = compute = None
    try:
        _page(client, "/admin/account")  # warm-up: imports, connections, the layout's templates
        if variant:
            forecast_store.current = _computed
        else:
            empty, compute = _empty_then_computed(app, client)
        pages = [_page(client) for _ in range(CONTROL_ROUNDS if variant else ROUNDS)]
    finally:
        forecast_store.current = original
        background.runner_of(app).wait_idle(600)
        db.engine_of(app).dispose()
    rows = database.count()
    note = f"{rows} rows, {FORMS} forms; per page {', '.join(f'{s:.0f}' for s in pages)} ms"
    figure = ctx.report.add(
        "forecast_first_page_ms",
        median(pages),
        f"≤ {GOAL_MS}",
        kind,
        note,
        samples=f"{len(pages)} pages",
        variant=variant,
    )
    if not variant:
        ctx.report.add("forecast_first_page_ms_empty", empty, f"≤ {GOAL_MS}", kind, f"{rows} rows, none stored yet")
        ctx.report.add("forecast_compute_ms", compute, "", kind, f"{rows} rows, {FORMS} forms, both policies")
    return [figure]


def _empty_then_computed(app, client) -> tuple[float, float]:
    """The page with no forecast stored (it asks for one after its response), then the computation alone."""
    with app.app_context(), db.transaction(write=True) as session:
        session.execute(delete(Setting).where(Setting.key.in_([forecast_store.KEY, forecast_store.CLAIM_KEY])))
    empty = _page(client)
    background.runner_of(app).wait_idle(600)  # the refresh it asked for, before anything else is measured
    with app.app_context():
        started = time.perf_counter()
        forecast_store.store()
        compute = (time.perf_counter() - started) * 1000
    return empty, compute


def _computed(session):
    """The control's ``current``: the forecast computed for the page, every time."""
    now = clock.now()
    return forecast_store.Snapshot(forecast.compute(session, now), now)


def _page(client, path: str = "/admin/retention") -> float:
    """Milliseconds for one page (the whole response)."""
    started = time.perf_counter()
    response = client.get(path)
    assert response.status_code == 200, f"{path} answered {response.status_code}"
    response.get_data()
    return (time.perf_counter() - started) * 1000
