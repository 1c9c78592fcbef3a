"""The CSV export of every inquiry over HTTP, against the ``sqlite3 -csv`` shell.

One gunicorn worker, so its memory is the export's: VmRSS before the first
export, VmHWM (the peak) after each. Exports of the small and the large table
alternate with the shell's export of the same columns, after a warm-up.
"""

from __future__ import annotations

import http.client
import shutil
import subprocess
import time

from bench.databases import admin_session_token
from bench.servers import memory_kb, serve

COLUMNS = "id, created_at, name, email, message, legal_hold, hold_reason, hold_by"
COOKIE = "sundown_admin"  # the session cookie's name on an http origin


def run(ctx) -> None:
    """SQLite: rows/s ratio, peak RSS growth, RSS at large ÷ at small."""
    sqlite3 = _sqlite3_shell()
    small, large = ctx.sizes["export_rows"]
    database = ctx.database("sqlite", "export")
    token = admin_session_token(database)
    # Recent rows, all within retention, so every one is exported.
    database.load(small, 100, 50)
    with serve(database.url, ctx.workdir, "export-sqlite", workers=1) as server:
        worker = server.workers()[0]
        _export(server.port, token, "?since=2999-01-01")  # warm-up: imports, connections
        baseline = memory_kb(worker)["VmRSS"]
        rows_small, _ = _export(server.port, token)
        peak_small = memory_kb(worker)["VmHWM"]
        database.load(large - small, 150, 100)
        shell, http = [], []
        for _ in range(2):
            shell.append(_shell_export(sqlite3, database.path, large))
            rows, seconds = _export(server.port, token)
            assert rows == large, f"the export returned {rows} of {large} rows"
            http.append(large / seconds)
        peak_large = memory_kb(worker)["VmHWM"]
    database.dispose()
    assert rows_small == small, f"the export returned {rows_small} of {small} rows"
    shell_rate = sum(shell) / len(shell)
    http_rate = sum(http) / len(http)
    report = ctx.report
    report.add("export_rows_per_s_ratio", http_rate / shell_rate, "≥ 0.2", "sqlite",
               f"{large} rows: HTTP {http_rate:.0f} rows/s vs sqlite3 -csv {shell_rate:.0f} rows/s")
    report.add("export_peak_rss_growth_mb", (peak_large - baseline) / 1024, "≤ 30", "sqlite",
               f"worker VmHWM after exports minus VmRSS before ({baseline / 1024:.0f} MB)")
    report.add("export_rss_large_over_small", peak_large / peak_small, "≤ 1.1", "sqlite",
               f"VmHWM after {large} rows ÷ after {small} rows")


def _export(port: int, token: str, query: str = "") -> tuple[int, float]:
    """Download the CSV, counting rows (lines less the header); return (rows, seconds)."""
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    connection.request("GET", f"/admin/export.csv{query}",
                       headers={"Host": "localhost", "Cookie": f"{COOKIE}={token}"})
    response = connection.getresponse()
    assert response.status == 200, f"export answered {response.status}"
    lines = 0
    while chunk := response.read(1 << 16):
        lines += chunk.count(b"\n")
    connection.close()
    return lines - 1, time.perf_counter() - started


def _shell_export(sqlite3: str, path: str, rows: int) -> float:
    """Rows/s of ``sqlite3 -csv`` writing the same columns, in the same order, to a pipe."""
    started = time.perf_counter()
    with subprocess.Popen([sqlite3, "-csv", "-header", path,
                           f"SELECT {COLUMNS} FROM submissions ORDER BY created_at, id"],
                          stdout=subprocess.PIPE) as process:
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: process.stdout.read(1 << 16), b""))
    assert lines - 1 == rows, f"sqlite3 wrote {lines - 1} of {rows} rows"
    return rows / (time.perf_counter() - started)


def _sqlite3_shell() -> str:
    """The ``sqlite3`` command-line shell, installed from Debian's package when missing."""
    found = shutil.which("sqlite3")
    if found:
        return found
    print("# installing the sqlite3 shell (apt-get install sqlite3)", flush=True)
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "sqlite3"], check=True)
    return shutil.which("sqlite3") or "sqlite3"
