"""``python -m bench.pow [--quick]``: the proof-of-work's figures (issue 14).

* ``pow_issue_us``, ``pow_verify_us``: server CPU to issue one challenge and to
  verify one solution, in-process (median of many; no database).
* ``pow_throughput_ratio`` (goal >= 0.95): JSON submissions per second with
  the proof-of-work over without it, on one database (SQLite, and PostgreSQL
  when its server binaries are here): the shipped server (2 workers x 4
  threads), sent a solved challenge with each submission (verification and
  the used-challenge insert), against the same app with the proof-of-work
  switched off (``bench/pow_off.py``), sent none; both file into the inbox.
  4 keep-alive clients alternate the two request by request; the figure is
  the median of the per-round ratios (see ``throughput_ratio``). Its control: the same against a
  server whose verification is deliberately slowed (``bench/pow_app.py``)
  must miss the goal, or the figure proves nothing.
* ``pow_solve_ms``: the browser's time to solve one challenge at the default
  difficulty, in the system Chromium under the real CSP: 20 form loads,
  median and p95, as the worker reports it and from page load to "solved";
  again with the CPU throttled 4x (Chrome DevTools' mid-tier mobile preset;
  it slows the page, not the worker).

Difficulty does not change the server's costs (the deterministic challenge
with a key signature is verified by two HMACs), so the throughput servers use
``POW_MAX_NUMBER=10`` to keep pre-solving cheap; the solve figures use the
default. ``python -m bench`` runs all of it (``run``); this module's own
``main`` runs parts of it and prints plain lines.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import math
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import altcha
import sqlalchemy as sa

from app import config, create_app
from app.core.db import engine_of, make_engine
from app.core.migrate import upgrade
from app.inquiries import spam
from bench.report import Control
from bench.stats import Ratio, cyclic_ratios, ratios
from devtools.pgcluster import Cluster, find_bindir, free_port
from devtools.server import running_server

GOAL = 0.95
OFF = "bench.pow_off:app"  # the same app with the proof-of-work switched off
CHROMIUM = os.environ.get("SUNDOWN_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
BODY = {"name": "Bench Visitor", "email": "bench@example.com", "message": "A realistic message.\n" * 10}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pow", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--only", choices=["costs", "solve", "throughput"], nargs="*", help="run only these parts")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="sundown-bench-pow-"))
    failed = False
    try:
        parts = set(args.only or ["costs", "solve", "throughput"])
        for name, value in (server_costs(workdir) if "costs" in parts else {}).items():
            print(f"{name}: {value:.1f}")
        for name, value in (solve_times(workdir, rounds=20) if "solve" in parts else {}).items():
            print(f"{name}: {value:.0f}")
        with ExitStack() as stack:
            if "throughput" not in parts:
                return
            for kind, url in databases(workdir, stack):
                figure = throughput_ratio(workdir, url, "wsgi:app", rounds=4 if args.quick else 8).value
                control = throughput_ratio(workdir, url, "bench.pow_app:app", rounds=3).value
                caught = control < GOAL
                failed |= not caught
                print(
                    f"pow_throughput_ratio.{kind}: {figure:.3f} "
                    f"(goal >= {GOAL}: {'met' if figure >= GOAL else 'MISSED'})"
                )
                print(
                    f"pow_throughput_ratio_control.{kind}: {control:.3f} "
                    f"(slowed verification {'caught' if caught else 'NOT CAUGHT'})"
                )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(1 if failed else 0)


def server_costs(workdir: Path, count: int = 2000) -> dict[str, float]:
    """Microseconds to issue a challenge and to verify its solution (median of ``count`` each)."""
    app = create_app(
        {
            "ENV": "production",
            "SECRET_KEY": secrets.token_hex(32),
            "ORIGIN": "http://localhost",
            "RP_ID": "localhost",
            "DATABASE_URL": f"sqlite:///{workdir / 'costs.db'}",
        }
    )
    with app.test_request_context():
        issued = [timed(spam.issue) for _ in range(count)]
        challenge = altcha.Challenge.from_dict(spam.issue())
        payload = altcha.Payload(challenge, altcha.solve_challenge(challenge)).to_base64()
        verified = [timed(lambda: spam.check_solution(payload)) for _ in range(count)]
        assert spam.check_solution(payload).reason is None
    engine_of(app).dispose()
    issue, verify = statistics.median(issued) * 1e6, statistics.median(verified) * 1e6
    return {"pow_issue_us": issue, "pow_verify_us": verify, "pow_issue_plus_verify_us": issue + verify}


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def databases(workdir: Path, stack: ExitStack):
    """SQLite, and PostgreSQL when its server binaries are here: ``(kind, url)`` of empty migrated databases."""
    kinds = [("sqlite", f"sqlite:///{workdir / 'throughput.db'}")]
    bindir = find_bindir()
    if bindir is not None:
        cluster = Cluster(bindir).start()
        stack.callback(cluster.stop)
        admin = sa.create_engine(cluster.url("postgres"), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.exec_driver_sql("CREATE DATABASE bench_pow")
        admin.dispose()
        kinds.append(("postgresql", cluster.url("bench_pow")))
    for _kind, url in kinds:
        engine = make_engine(url)
        upgrade(engine)
        engine.dispose()
    return kinds


@contextmanager
def server(workdir: Path, url: str, app_module: str, name: str = "server", **settings: str):
    port = free_port()
    env = {
        "SUNDOWN_DATABASE_URL": url,
        "SUNDOWN_SECRET_KEY": secrets.token_hex(32),
        "SUNDOWN_ORIGIN": f"http://localhost:{port}",
        "SUNDOWN_RP_ID": "localhost",
        "SUNDOWN_SUBMIT_RATE_LIMITS": "100000000/60,1000000000/86400",
        "SUNDOWN_SUBMIT_GLOBAL_RATE_LIMITS": "100000000/60,1000000000/86400",
        **settings,
    }
    with running_server(env, workdir / f"{name}.log", app_module, workers=2, threads=4, port=port) as (base, _):
        yield base, port


def throughput_ratio(
    workdir: Path, url: str, app_module: str, rounds: int, clients: int = 4, per_client: int = 40
) -> Ratio:
    """Per round, the throughput with proof-of-work over the throughput without; with its A/A control.

    Two servers on one database: ``app_module``, sent a solved challenge with
    each submission, and ``OFF`` (the proof-of-work switched off), sent the
    same submission without one; both file it in the inbox. Each client
    alternates the two request by request (half the clients start with
    each), so both sides see the same load and moment; at equal concurrency
    throughput is inversely proportional to the mean latency, so a round's
    ratio is mean latency without over mean latency with. The A/A control
    compares each round's requests without with the round's before it
    (``bench.stats.cyclic_ratios``).
    """
    with (
        server(workdir, url, app_module, "pow-on", SUNDOWN_POW_MAX_NUMBER="10") as (_base, port),
        server(workdir, url, OFF, "pow-off") as (_off_base, off_port),
    ):
        payloads = iter([solved(port) for _ in range(rounds * clients * per_client)])
        run_clients([[(port, None), (off_port, None)] * 10 for _ in range(clients)])  # warm-up
        with_means, without_means = [], []
        for _ in range(rounds):
            plans = [
                [(port, next(payloads)) if (i + c) % 2 == 0 else (off_port, None) for i in range(2 * per_client)]
                for c in range(clients)
            ]
            timings = run_clients(plans)
            with_means.append(statistics.mean(seconds for payload, seconds in timings if payload))
            without_means.append(statistics.mean(seconds for payload, seconds in timings if not payload))
    ratio = Ratio(ratios(without_means, with_means), cyclic_ratios(without_means))
    print(f"  rounds ({app_module}): " + " ".join(f"{value:.3f}" for value in ratio.rounds), flush=True)
    return ratio


def run(ctx) -> None:
    """In ``python -m bench``: server costs, the browser's solve time, the throughput ratio and its control."""
    for name, value in server_costs(ctx.workdir).items():
        ctx.report.add(name, value, "", "none", "in-process, median of 2000")
    loads = 3 if ctx.quick else 10
    for name, value in solve_times(ctx.workdir, rounds=loads).items():
        ctx.report.add(name, value, "", "chromium", f"{loads} form loads")
    control = Control("verification about 1 ms slower (10 package verifications)", "slow_verify")
    rounds = 2 if ctx.quick else 5
    # Full mode: 200 requests per client and round (smaller rounds spread about as much: docs/benchmarks.md).
    per_client = 40 if ctx.quick else 100
    for kind in ("sqlite", "postgresql"):
        database = ctx.database(kind, "pow")
        figure = throughput_ratio(ctx.workdir, database.url, "wsgi:app", rounds, per_client=per_client)
        slowed = throughput_ratio(
            ctx.workdir, database.url, "bench.pow_app:app", 1 if ctx.quick else 3, per_client=per_client
        )
        database.drop()
        samples = f"{rounds} rounds of {4 * 2 * per_client} submissions"
        ctx.report.add(
            "pow_throughput_ratio",
            figure.value,
            f"≥ {GOAL}",
            kind,
            "2 gunicorn servers 2x4, on and off, 4 keep-alive clients",
            samples=samples,
            ratio=figure,
        )
        control.figures.append(
            ctx.report.add(
                "pow_throughput_ratio",
                slowed.value,
                f"≥ {GOAL}",
                kind,
                samples=f"{len(slowed.rounds)} rounds of {4 * 2 * per_client} submissions",
                ratio=slowed,
                variant="slow_verify",
            )
        )
    ctx.report.control(control)


def solved(port: int) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", "/api/challenge", headers={"Host": f"localhost:{port}"})
    challenge = altcha.Challenge.from_dict(json.loads(connection.getresponse().read()))
    connection.close()
    return altcha.Payload(challenge, altcha.solve_challenge(challenge)).to_base64()


def run_clients(plans: list[list[tuple[int, str | None]]]) -> list[tuple[str | None, float]]:
    """Each plan's ``(port, payload)`` submissions in order, a keep-alive connection per port, all plans at once.

    Returns ``(payload, seconds)`` per submission.
    """
    timings: list[tuple[str | None, float]] = []
    errors: list[str] = []

    def client(plan):
        connections = {port: http.client.HTTPConnection("127.0.0.1", port, timeout=30) for port, _ in plan}
        for port, payload in plan:
            body = json.dumps(dict(BODY, **({"altcha": payload} if payload else {})))
            started = time.perf_counter()
            connections[port].request(
                "POST", "/api/inquiries", body, {"Content-Type": "application/json", "Host": f"localhost:{port}"}
            )
            response = connections[port].getresponse()
            response.read()
            timings.append((payload, time.perf_counter() - started))
            if response.status != 201:
                errors.append(str(response.status))
        for connection in connections.values():
            connection.close()

    threads = [threading.Thread(target=client, args=(plan,)) for plan in plans]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[:5]
    return timings


def solve_times(workdir: Path, rounds: int) -> dict[str, float]:
    """The browser's solve time at the default difficulty, unthrottled and throttled 4x (ms)."""
    from playwright.sync_api import sync_playwright

    figures = {}
    url = f"sqlite:///{workdir / 'solve.db'}"
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    with server(workdir, url, "wsgi:app") as (base, _port), sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for label, rate in (("", 1), ("_throttled_4x", 4)):
                worker, total = [], []
                for _ in range(rounds):
                    solve, ready = solve_once(browser, base, rate)
                    worker.append(solve)
                    total.append(ready)
                figures[f"pow_solve_ms{label}_median"] = statistics.median(worker)
                figures[f"pow_solve_ms{label}_p95"] = nearest_rank(worker, 0.95)
                figures[f"pow_ready_after_load_ms{label}_median"] = statistics.median(total)
                figures[f"pow_ready_after_load_ms{label}_p95"] = nearest_rank(total, 0.95)
        finally:
            browser.close()
    figures["pow_max_number"] = config.DEFAULTS["POW_MAX_NUMBER"]
    return figures


def solve_once(browser, base: str, throttle: float) -> tuple[float, float]:
    """One fresh page: (the worker's solve time, page load to solved), in ms."""
    context = browser.new_context(base_url=base)
    page = context.new_page()
    problems = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    if throttle != 1:
        context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate", {"rate": throttle})
    page.goto("/")
    page.wait_for_selector("form[data-spam-check='solved']", state="attached", timeout=120_000)
    ready = page.evaluate("performance.now()")
    payload = json.loads(base64.b64decode(page.locator("input[name='altcha']").input_value()))
    context.close()
    assert not problems, problems
    return payload["solution"]["time"], ready


def nearest_rank(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


if __name__ == "__main__":
    main()
