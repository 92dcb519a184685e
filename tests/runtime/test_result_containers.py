"""What a result frame of many small containers costs the parent (runtime/protocol.py,
docs/security.md#memory-a-tool-can-make-the-parent-hold): the decoded value is walked with one
iterator per open level, never a second copy of its values. A 1 MiB frame of empty arrays
(350,000 Python lists) peaked at 46 MiB of traced memory, half of it the depth check's stack
of (child, depth) pairs. Each execution's traced Python memory is measured in the parent."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from testing.fake_providers import skill_runtime
from testing.hostile_packages import write_package

pytestmark = pytest.mark.node

TOOL = (
    "export default async (i) => { const a = [];"
    " for (let k = 0; k < i.n; k++) a.push(i.objects ? {} : []);"
    " return { a }; };"
)
FULL_FRAME = 349_000  # empty arrays: a frame just under 1 MiB
# The decoded lists and dicts alone take 22 MiB for the arrays; the walk adds no copy of them.
PEAK_BOUND = 30 * 1024 * 1024


def _run(runtime: Any, package: Any, **given: Any) -> tuple[dict[str, Any], int]:
    tracemalloc.start()
    try:
        result = runtime.execute(package, "t", {"objects": False, **given}).to_json()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


def test_a_frame_of_small_containers_is_walked_without_a_copy(tmp_path: Path) -> None:
    runtime = skill_runtime(tmp_path / "project", None)
    package = runtime.load(write_package(tmp_path / "packages", TOOL))
    for objects, n in ((False, FULL_FRAME), (True, FULL_FRAME // 2)):
        result, peak = _run(runtime, package, n=n, objects=objects)
        assert result["ok"] is True, result
        assert len(result["output"]["a"]) == n
        assert peak < PEAK_BOUND, (objects, peak >> 20)
