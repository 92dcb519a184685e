"""Sandbox cost: a cold ``execute`` of example.hello and whole ``splice run`` processes (a
package directory, and an installed package), each against a bare ``node --permission -e 0``
measured in the same run (issue #12 target: ``splice run example.hello`` ≤ 3 ×). The floor is
shown too: a bare ``python -c pass`` of the same interpreter (site and .pth files included)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from bench.common import (
    REPO,
    Row,
    bare_node,
    example_project,
    precompile,
    ratio_row,
    splice_argv,
    time_callable,
    time_command,
)


def run(quick: bool = False) -> list[Row]:
    from splice_build.runtime import SpliceRuntime

    precompile()
    repeat = 5 if quick else 20
    example = REPO / "splice_build" / "skills" / "example"
    bare = bare_node(repeat=repeat)
    python = time_command([sys.executable, "-c", "pass"], repeat=repeat)
    rows = [ratio_row("python -c pass (the floor)", python, "node --permission -e 0", bare)]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        runtime = SpliceRuntime(project_root=base, env={})
        pkg = runtime.load(example)
        execute = time_callable(lambda: runtime.execute(pkg, "hello", {"name": "x"}), repeat=repeat)
        rows.append(
            ratio_row(
                "execute example.hello (cold process)", execute, "node --permission -e 0", bare
            )
        )
        whole = time_command(
            splice_argv("run", "--dir", str(example), "example.hello", "name=x"),
            repeat=repeat,
            cwd=base,
        )
        rows.append(
            ratio_row(
                "splice run --dir <example> example.hello",
                whole,
                "node --permission -e 0",
                bare,
                "≤ 3×",
            )
        )
        env = {**os.environ, "HOME": str(base), "SPLICE_HOME": str(base / ".splice")}
        project = example_project(base, env)
        installed = time_command(
            splice_argv("run", "example.hello", "name=x"), repeat=repeat, env=env, cwd=project
        )
        rows.append(
            ratio_row(
                "splice run example.hello (installed)",
                installed,
                "node --permission -e 0",
                bare,
                "≤ 3×",
            )
        )
    return rows
