"""A writing `splice install`: 20 packages of 12 files restored from the verified cache.

What it costs to make every staged file durable before the swap that commits it (fsync of
each file and directory, docs/lifecycle.md#crash-safety). Each timed run deletes
``.splice/packages`` and runs `splice install`, which writes, fsyncs and swaps in all 20
copies from ``SPLICE_HOME``'s cache. The baseline is the same deletion followed by a no-op
`true`. ``SPLICE_BENCH_BEFORE=<older checkout>`` adds the same row for that checkout, timed in
the same interleaved rounds.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from bench.bench_install import PACKAGES, before_copy, installed_project
from bench.common import Row, precompile, ratio_row, splice_argv, time_in_rounds

FILES = {f"lib/part{i:02d}.js": f"export const part{i} = {i};\n" * 40 for i in range(10)}


def _restore(project: Path, argv: list[str]) -> list[str]:
    script = 'rm -rf "$1/.splice/packages" && cd "$1" && shift && exec "$@"'
    return ["sh", "-c", script, "sh", str(project), *argv]


def run(quick: bool = False) -> list[Row]:
    precompile()
    rounds = 4 if quick else 12
    with tempfile.TemporaryDirectory() as tmp:
        project, env = installed_project(Path(tmp), FILES)
        commands = {
            "install": (_restore(project, splice_argv("install")), None, env),
            "delete only": (_restore(project, ["true"]), None, env),
        }
        copy = before_copy(project)
        if copy is not None:
            old = {**env, "PYTHONPATH": os.environ["SPLICE_BENCH_BEFORE"]}
            commands["before"] = (_restore(copy, splice_argv("install")), None, old)
        taken = time_in_rounds(commands, rounds)
    rows = [
        ratio_row(
            f"splice install restoring {PACKAGES} packages from the cache",
            taken["install"],
            "rm -rf .splice/packages alone",
            taken["delete only"],
        )
    ]
    if copy is not None:
        rows.append(
            ratio_row(
                f"splice install restoring {PACKAGES} packages (this tree)",
                taken["install"],
                "the same with SPLICE_BENCH_BEFORE's tree",
                taken["before"],
            )
        )
    return rows
