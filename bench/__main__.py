"""`python -m bench [topic…] [--quick]`: run the benchmarks and print one table."""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import inspect
import os
import pkgutil
import platform
import sys
from pathlib import Path

from bench.common import Row


def _topics() -> list[str]:
    here = Path(__file__).parent
    return sorted(
        m.name[len("bench_") :]
        for m in pkgutil.iter_modules([str(here)])
        if m.name.startswith("bench_")
    )


def _format(rows: list[Row]) -> str:
    lines = ["| benchmark | value | baseline | ratio | target |", "|---|---|---|---|---|"]
    for r in rows:
        base = f"{r.baseline} = {r.baseline_value:.1f} {r.unit}" if r.baseline else ""
        ratio = f"{r.ratio:.2f}×" if r.ratio is not None else ""
        lines.append(f"| {r.name} | {r.value:.1f} {r.unit} | {base} | {ratio} | {r.target or ''} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("topics", nargs="*", help=f"any of: {', '.join(_topics())}")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument(
        "--minutes",
        type=float,
        help="how long each load and soak topic runs (load_*, soak_*; they have a default)",
    )
    args = parser.parse_args(argv)
    topics = args.topics or _topics()
    unknown = set(topics) - set(_topics())
    if unknown:
        parser.error(f"unknown topics: {', '.join(sorted(unknown))}")
    print(
        f"# {dt.date.today()} · {platform.platform()} · {os.cpu_count()} cores · "
        f"Python {platform.python_version()}"
    )
    rows: list[Row] = []
    for topic in topics:
        module = importlib.import_module(f"bench.bench_{topic}")
        options: dict[str, object] = {"quick": args.quick}
        if args.minutes is not None and "minutes" in inspect.signature(module.run).parameters:
            options["minutes"] = args.minutes
        topic_rows = module.run(**options)
        print(f"\n## {topic}\n{_format(topic_rows)}", flush=True)
        rows += topic_rows
    return 0


if __name__ == "__main__":
    sys.exit(main())
