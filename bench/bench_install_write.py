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
import shutil
import tempfile
from pathlib import Path

from bench.common import Row, precompile, ratio_row, splice_argv, time_in_rounds

PACKAGES = 20
FILES = {f"lib/part{i:02d}.js": f"export const part{i} = {i};\n" * 40 for i in range(10)}


def _restore(project: Path, argv: list[str]) -> list[str]:
    script = 'rm -rf "$1/.splice/packages" && cd "$1" && shift && exec "$@"'
    return ["sh", "-c", script, "sh", str(project), *argv]


def run(quick: bool = False) -> list[Row]:
    from splice_build.sdk import Splice
    from testing.registry_fixtures import embedded_store, new_project, publish

    precompile()
    rounds = 4 if quick else 12
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = {"SPLICE_HOME": str(base / "home")}
        os.environ.update(env)
        ids = []
        for i in range(PACKAGES):
            publish(embedded_store(base / "home"), base / "work", name=f"pkg{i:02d}", files=FILES)
            ids.append(f"@acme/pkg{i:02d}")
        project = new_project(base / "p")
        Splice(project, env={**os.environ, **env}).add(ids)
        commands = {
            "install": (_restore(project, splice_argv("install")), None, env),
            "delete only": (_restore(project, ["true"]), None, env),
        }
        before = os.environ.get("SPLICE_BENCH_BEFORE")
        if before:
            precompile(Path(before))
            copy = project.with_name("p-before")
            shutil.copytree(project, copy, symlinks=True)
            old = {**env, "PYTHONPATH": before}
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
    if before:
        rows.append(
            ratio_row(
                f"splice install restoring {PACKAGES} packages (this tree)",
                taken["install"],
                "the same with SPLICE_BENCH_BEFORE's tree",
                taken["before"],
            )
        )
    return rows
