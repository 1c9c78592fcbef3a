"""``python -m bench [--quick]``: run every benchmark, print figures, rewrite docs/benchmarks.md."""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import traceback
from pathlib import Path

from bench import backlog, claim, exactly_once, export
from bench.context import Context
from bench.report import Report

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = [claim, backlog, export, exactly_once]


def main() -> None:
    """Run the suite; a benchmark that fails is reported and the others still run."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller data, under 3 minutes")
    parser.add_argument("--only", nargs="*", help="run only these benchmarks (module names)")
    parser.add_argument("--no-write", action="store_true", help="do not rewrite docs/benchmarks.md")
    args = parser.parse_args()
    report = Report("quick" if args.quick else "full")
    workdir = Path(tempfile.mkdtemp(prefix="sundown-bench-"))
    ctx = Context(args.quick, report, workdir)
    started = time.perf_counter()
    failures = 0
    try:
        for module in BENCHMARKS:
            name = module.__name__.rsplit(".", 1)[1]
            if args.only and name not in args.only:
                continue
            try:
                module.run(ctx)
            except Exception:  # noqa: BLE001 - one broken benchmark must not hide the others
                failures += 1
                print(f"# {name} failed (server logs in {workdir}):\n{traceback.format_exc()}", flush=True)
    finally:
        ctx.close()
    print(f"# finished in {time.perf_counter() - started:.0f} s", flush=True)
    if not args.no_write:
        report.write_markdown(ROOT / "docs" / "benchmarks.md")
    if failures == 0:
        shutil.rmtree(workdir, ignore_errors=True)
    raise SystemExit(1 if failures else 0)


main()
