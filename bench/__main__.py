"""``python -m bench [--quick] [--strict]``: run every benchmark and its controls, print, rewrite the docs.

Exit status: 1 when a benchmark broke, or a control (a deliberately broken
variant) was not caught; with ``--strict`` also when a goal is not met.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import tempfile
import time
import traceback
from pathlib import Path

from bench import (
    backlog,
    backlog_files,
    claim,
    claiming,
    exactly_once,
    export,
    forecast,
    forms,
    notify,
    search,
    secure_delete,
    spamset,
    uploads,
)
from bench import pow as proof_of_work
from bench.context import Context
from bench.report import Report

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = [
    claim,
    claiming,
    backlog,
    backlog_files,
    secure_delete,
    export,
    exactly_once,
    proof_of_work,
    search,
    notify,
    forms,
    uploads,
    spamset,
    forecast,
]


def main() -> None:
    """Run the suite; a benchmark that fails is reported and the others still run."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller data (minutes, not an hour)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when any goal is not met")
    parser.add_argument("--only", nargs="*", help="run only these benchmarks (module names)")
    parser.add_argument(
        "--rows", type=int, nargs="+", default=(), help="backlog sizes (expired rows) instead of the mode's"
    )
    parser.add_argument("--no-write", action="store_true", help="leave docs/benchmarks.md and the picture alone")
    args = parser.parse_args()
    # Stopped with SIGTERM (kill, a CI timeout), unwind as on an error: every server, receiver and
    # PostgreSQL cluster the run started is stopped by the code that started it, none is orphaned.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    report = Report("quick" if args.quick else "full")
    workdir = Path(tempfile.mkdtemp(prefix="sundown-bench-"))
    ctx = Context(args.quick, report, workdir, write_docs=not args.no_write, rows=tuple(args.rows))
    started = time.perf_counter()
    broken = []
    chosen = [module for module in BENCHMARKS if not args.only or _name(module) in args.only]
    try:
        for index, module in enumerate(chosen):
            name = _name(module)
            begun = time.perf_counter()
            try:
                module.run(ctx)
                print(f"# {name} took {time.perf_counter() - begun:.0f} s", flush=True)
            except Exception:  # noqa: BLE001 - one broken benchmark must not hide the others
                broken.append(name)
                print(f"# {name} failed (server logs in {workdir}):\n{traceback.format_exc()}", flush=True)
            except SystemExit:  # stopped: what was measured is still written, saying what was not
                report.not_run = [_name(each) for each in chosen[index:]]
                broken.append(f"{name} (stopped)")
                break
    finally:
        ctx.close()
    report.seconds = time.perf_counter() - started
    print(f"# finished in {report.seconds:.0f} s", flush=True)
    if not args.no_write:
        report.write_markdown(ROOT / "docs" / "benchmarks.md")
    if broken:  # keep the server logs, not gigabytes of databases
        for leftover in workdir.glob("*.db*"):
            leftover.unlink()
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    raise SystemExit(_verdict(report, broken, args.strict))


def _name(module) -> str:
    return module.__name__.rsplit(".", 1)[1]


def _exit_on_sigterm(_signum, _frame) -> None:
    raise SystemExit(143)


def _verdict(report: Report, broken: list[str], strict: bool) -> int:
    """Print what failed; 1 if a benchmark broke, a control was not caught, or (strict) a goal is unmet."""
    for control in report.uncaught():
        print(f"# control not caught: {control.name} ({control.variant})", flush=True)
    unmet = report.unmet()
    for figure in unmet:
        print(f"# goal not met: {figure.name}.{figure.database} = {figure.met()}", flush=True)
    if broken:
        print(f"# benchmarks that broke: {', '.join(broken)}", flush=True)
    return 1 if broken or report.uncaught() or (strict and unmet) else 0


main()
