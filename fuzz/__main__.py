"""``python -m fuzz <target> [--runs N | --seconds S]``: run one fuzz target (fuzz/README.md).

The engine is atheris (libFuzzer, coverage-guided) when it is importable, else Hypothesis.
Seeds come from ``fuzz/corpus/<target>/``; new coverage is written to a scratch copy, never
to the repository. A crashing or hanging input is saved under ``fuzz/findings/`` and the
process exits non-zero.
"""

from __future__ import annotations

import argparse
import sys

from fuzz.engine import ENGINES, default_engine, run
from fuzz.targets import TARGETS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__)
    parser.add_argument("target", choices=sorted(TARGETS), nargs="?")
    parser.add_argument("--list", action="store_true", help="list the targets")
    parser.add_argument("--runs", type=int, default=None, help="stop after N inputs")
    parser.add_argument("--seconds", type=int, default=None, help="stop after S seconds")
    parser.add_argument("--timeout", type=int, default=10, help="per-input cap (s): a hang")
    parser.add_argument("--engine", choices=ENGINES, default=default_engine())
    args = parser.parse_args(argv)
    if args.list or args.target is None:
        for name, target in sorted(TARGETS.items()):
            print(f"{name:15} {target.doc}")
        return 0
    if args.runs is None and args.seconds is None:
        parser.error("give --runs N or --seconds S")
    return run(TARGETS[args.target], args.engine, args.runs, args.seconds, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
