"""The OS layer's start-up cost (issue #14): a cold ``execute`` of example.hello, and a bare
sandbox start-to-exit, each with the OS layer (namespaces, private /proc, limits) against the
same without it (``isolation="in-process"``), measured in the same run; and the file view's
own cost (issue #17): a sandbox start + end with the OS layer and its file view against the
same plan without the view, alternating. The one-off detection probe is shown too."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from bench.common import REPO, Row, ratio_row, time_callable
from splice_build.records import replace


def _start_and_end(runtime: object, pkg: object) -> None:
    """Start the sandbox process of ``pkg`` and end it (no job: the host exits on hang-up)."""
    process, _lease = runtime._start(pkg)  # type: ignore[attr-defined]
    process.close()


def _file_view_rows(runtime: object, pkg: object, repeat: int) -> list[Row]:
    """Start + end of the same spec with and without the file view, alternating."""
    from splice_build.runtime import sandbox

    spec = runtime._spec(pkg)  # type: ignore[attr-defined]
    if not spec.isolation.file_view:
        return []
    bare = replace(spec, isolation=replace(spec.isolation, file_view=False))
    samples: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(repeat):
        for viewed, one in ((True, spec), (False, bare)):
            started = time.perf_counter()
            sandbox.start(one).close()
            samples[viewed].append(time.perf_counter() - started)
    return [
        ratio_row(
            "sandbox start + end, OS layer with the file view",
            samples[True],
            "the same without the file view",
            samples[False],
        )
    ]


def run(quick: bool = False) -> list[Row]:
    from splice_build.runtime import SpliceRuntime
    from splice_build.runtime.isolation.support import detect

    started = time.perf_counter()
    support = detect()
    probe_ms = (time.perf_counter() - started) * 1000
    rows = [Row("isolation detection probe (once per process)", probe_ms, "ms")]
    if not support.namespaces:
        return rows
    repeat = 10 if quick else 40
    example = REPO / "splice_build" / "skills" / "example"
    with tempfile.TemporaryDirectory() as tmp:
        samples = {}
        for mode in ("in-process", "auto"):
            runtime = SpliceRuntime(project_root=Path(tmp), env={}, isolation=mode)
            pkg = runtime.load(example)
            samples[mode, "start"] = time_callable(
                lambda rt=runtime, p=pkg: _start_and_end(rt, p), repeat=repeat
            )
            samples[mode, "execute"] = time_callable(
                lambda rt=runtime, p=pkg: rt.execute(p, "hello", {"name": "x"}),
                repeat=repeat,
            )
            if mode == "auto":
                rows += _file_view_rows(runtime, pkg, repeat)
    for what, label in (
        ("start", "sandbox start + end"),
        ("execute", "execute example.hello (cold)"),
    ):
        rows.append(
            ratio_row(
                f"{label}, OS layer",
                samples["auto", what],
                f"{label}, in-process only",
                samples["in-process", what],
            )
        )
    return rows
