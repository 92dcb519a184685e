"""Hashing throughput of the installed-files check (``spec.tree_digest``, what `splice verify`,
`splice run` and every no-op install run) against `sha256sum` over the same files, in the same
run (docs/architecture.md#performance-targets: at least 80 % of sha256sum's throughput)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from bench.common import Row, median, time_callable, time_command

FILES = 200  # within a package's 500-file limit
FILE_BYTES = 1024 * 1024  # 200 MiB in all: large enough that start-up costs do not dominate


def run(quick: bool = False) -> list[Row]:
    from splice_build.spec.tree_digest import tree_digest

    sha256sum = shutil.which("sha256sum")
    repeat = 3 if quick else 10
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        root = Path(tmp) / "pkg"
        root.mkdir()
        for index in range(FILES):
            (root / f"f{index:03}.bin").write_bytes(os.urandom(FILE_BYTES))
        total_mib = FILES * FILE_BYTES / (1024 * 1024)
        ours = total_mib / median(time_callable(lambda: tree_digest(root), repeat=repeat))
        if sha256sum is None:
            return [Row("tree_digest throughput", ours, "MiB/s")]
        names = sorted(str(p) for p in root.iterdir())
        theirs = total_mib / median(time_command([sha256sum, *names], repeat=repeat))
        return [Row("tree_digest throughput", ours, "MiB/s", "sha256sum", theirs, "≥ 0.8×")]
