"""Sandbox cost: a cold ``execute`` of example.hello and a whole ``splice run --dir`` process,
each against a bare ``node --permission -e 0`` measured in the same run (DESIGN.md target:
``splice run`` ≤ 4 ×)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench.common import REPO, Row, ratio_row, splice_argv, time_callable, time_command


def run(quick: bool = False) -> list[Row]:
    from splice_build.runtime import SpliceRuntime
    from splice_build.runtime.node import find_node

    repeat = 5 if quick else 20
    example = REPO / "splice_build" / "skills" / "example"
    node = find_node()
    bare = time_command([str(node.path), "--permission", "-e", "0"], repeat=repeat, env={})
    with tempfile.TemporaryDirectory() as tmp:
        runtime = SpliceRuntime(project_root=Path(tmp), env={})
        pkg = runtime.load(example)
        execute = time_callable(lambda: runtime.execute(pkg, "hello", {"name": "x"}), repeat=repeat)
        whole = time_command(
            splice_argv("run", "--dir", str(example), "example.hello", "name=x"),
            repeat=repeat,
            cwd=Path(tmp),
        )
    return [
        ratio_row("execute example.hello (cold process)", execute, "node --permission -e 0", bare),
        ratio_row(
            "splice run --dir <example> example.hello",
            whole,
            "node --permission -e 0",
            bare,
            "≤ 4×",
        ),
    ]
