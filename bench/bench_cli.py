"""Whole-process cost of the CLI's light paths against a bare Python start."""

from __future__ import annotations

import sys

from bench.common import REPO, Row, ratio_row, splice_argv, time_command


def run(quick: bool = False) -> list[Row]:
    repeat = 5 if quick else 20
    python = time_command([sys.executable, "-c", "pass"], repeat=repeat)
    version = time_command(splice_argv("--version"), repeat=repeat)
    example = REPO / "splice_build" / "skills" / "example"
    validate = time_command(splice_argv("validate", str(example)), repeat=repeat)
    return [
        ratio_row("splice --version", version, "python -c pass", python, "≤ 2×"),
        ratio_row("splice validate <example>", validate, "python -c pass", python),
    ]
