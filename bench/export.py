"""The CSV export of every inquiry over HTTP, against the ``sqlite3 -csv`` shell, and its memory.

A copy of the backlog template (realistic rows) with the retention raised to
its maximum, so every row is visible; one gunicorn worker, so its memory is
the export's. Each round exports a small part (``?until=``, about a tenth of
the rows), then the shell and HTTP export everything, alternated. Before each
export the worker's peak RSS is reset (``/proc/PID/clear_refs``, 5), and the
growth is its peak afterwards minus its RSS before.
"""

from __future__ import annotations

import http.client
import shutil
import subprocess
import time
from datetime import timedelta

from bench.databases import utcnow
from bench.servers import memory_kb, reset_peak, serve, server_env
from bench.stats import Ratio, cyclic_ratios, median, ratios
from devtools.admins import log_in_to

COLUMNS = "id, created_at, name, email, message, legal_hold, hold_reason, hold_by"
ROUNDS = 3
ROW_END = b"\r\n"  # the app's csv.writer ends rows with CRLF; messages hold bare LFs


def run(ctx) -> None:
    """SQLite: rows/s ratio, rows/s at both sizes, peak RSS growth at both sizes."""
    sqlite3 = _sqlite3_shell()
    database = ctx.template("sqlite").copy("export")
    database.set_setting("retention_days", "3650")
    login = log_in_to(server_env(database.url), "Bench admin", browser="bench")
    until = (utcnow() - timedelta(days=380)).date().isoformat()
    measured = {"small": [], "large": [], "shell": [], "growth_small": [], "growth_large": []}
    try:
        with serve(database.url, ctx.workdir, "export-sqlite", workers=1) as server:
            worker = server.workers()[0]
            _export(server.port, login.cookie_header, "?since=2999-01-01")  # warm-up: imports, connections
            for _ in range(ROUNDS):
                _measure(server.port, login.cookie_header, worker, f"?until={until}", "small", measured)
                rows = _shell_export(sqlite3, database, measured)
                assert _measure(server.port, login.cookie_header, worker, "", "large", measured) == rows
    finally:
        database.drop()
    _report(ctx, measured, rows)


def _measure(port: int, cookie: str, worker: int, query: str, size: str, measured: dict) -> int:
    """One HTTP export with the worker's peak reset first; record rows/s and growth; return rows."""
    reset_peak(worker)
    before = memory_kb(worker)["VmRSS"]
    rows, seconds = _export(port, cookie, query)
    measured[size].append((rows, rows / seconds))
    measured[f"growth_{size}"].append((memory_kb(worker)["VmHWM"] - before) / 1024)
    return rows


def _report(ctx, measured: dict, rows: int) -> None:
    http_rates = [rate for _, rate in measured["large"]]
    ratio = Ratio(ratios(http_rates, measured["shell"]), cyclic_ratios(measured["shell"]))
    report = ctx.report
    report.add(
        "export_rows_per_s_ratio",
        ratio.value,
        "≥ 0.2",
        "sqlite",
        f"{rows} realistic rows: HTTP {median(http_rates):.0f} rows/s vs sqlite3 -csv "
        f"{median(measured['shell']):.0f} rows/s (medians)",
        samples=f"{ROUNDS} + {ROUNDS} exports, alternated",
        ratio=ratio,
    )
    for size in ("small", "large"):
        count = measured[size][0][0]
        rates = [rate for _, rate in measured[size]]
        report.add(
            f"export_rows_per_s_{size}",
            median(rates),
            "",
            "sqlite",
            f"{count} rows; per export {', '.join(f'{r:.0f}' for r in rates)}",
            samples=f"{ROUNDS} exports",
        )
        growth = measured[f"growth_{size}"]
        report.add(
            f"export_rss_growth_mb_{size}",
            max(growth),
            "≤ 30",
            "sqlite",
            f"{count} rows; worker peak RSS after minus RSS before, peak reset before each export: "
            f"{', '.join(f'{g:.1f}' for g in growth)} MB",
            samples=f"{ROUNDS} exports",
        )
    difference = max(measured["growth_large"]) - max(measured["growth_small"])
    report.add(
        "export_rss_growth_large_minus_small_mb",
        difference,
        "≤ 5",
        "sqlite",
        f"{measured['large'][0][0]} rows vs {measured['small'][0][0]}: memory must not grow with the rows",
        samples=f"{ROUNDS} + {ROUNDS} exports",
    )


def _export(port: int, cookie: str, query: str = "") -> tuple[int, float]:
    """Download the CSV, counting rows (row ends less the header's); return (rows, seconds)."""
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    connection.request("GET", f"/admin/export.csv{query}", headers={"Host": "localhost", "Cookie": cookie})
    response = connection.getresponse()
    assert response.status == 200, f"export answered {response.status}"
    rows = _count_rows(iter(lambda: response.read(1 << 16), b""))
    connection.close()
    return rows, time.perf_counter() - started


def _shell_export(sqlite3: str, database, measured: dict) -> int:
    """``sqlite3 -csv`` writing every row, the same columns in the same order, to a pipe; return rows.

    Its rows end with a bare LF, as do lines inside messages, so the rows are counted in SQL.
    """
    rows = database.count()
    started = time.perf_counter()
    query = f"SELECT {COLUMNS} FROM submissions ORDER BY created_at, id"
    with subprocess.Popen([sqlite3, "-csv", "-header", database.path, query], stdout=subprocess.PIPE) as process:
        while process.stdout.read(1 << 16):
            pass
    measured["shell"].append(rows / (time.perf_counter() - started))
    return rows


def _count_rows(chunks) -> int:
    """Rows in the app's CSV stream: CRLF row ends (one may straddle two chunks) less the header's."""
    ends, last = 0, b""
    for chunk in chunks:
        ends += (last + chunk).count(ROW_END)
        last = chunk[-1:]
    return ends - 1


def _sqlite3_shell() -> str:
    """The ``sqlite3`` command-line shell, installed from Debian's package when missing."""
    found = shutil.which("sqlite3")
    if found:
        return found
    print("# installing the sqlite3 shell (apt-get install sqlite3)", flush=True)
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "sqlite3"], check=True)
    return shutil.which("sqlite3") or "sqlite3"
