"""A result frame's arrays and objects are counted on its text before it is decoded
(runtime/protocol.py, docs/runtime.md#results): a 1 MiB frame of empty arrays is refused
before one is built, and a frame at the bound is decoded and walked without a second copy of
its values. Each execution's traced Python memory is measured in the parent."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from splice_build.runtime.limits import MAX_FRAME_CONTAINERS
from testing.fake_providers import skill_runtime
from testing.hostile_packages import write_package

pytestmark = pytest.mark.node

# n empty arrays, and a string whose brackets are text, not containers.
TOOL = (
    "export default async (i) => { const a = [];"
    " for (let k = 0; k < i.n; k++) a.push(i.objects ? {} : []);"
    " return { a, s: '[{'.repeat(i.text) }; };"
)
# Containers of the frame besides the n: the frame's object, the output object and ``a``.
AROUND = 3
# A full 1 MiB frame of empty arrays: 350,000 lists once decoded (45 MiB traced before).
FULL_FRAME = 349_000


def _run(runtime: Any, package: Any, **given: Any) -> tuple[dict[str, Any], int]:
    tracemalloc.start()
    try:
        result = runtime.execute(package, "t", {"objects": False, "text": 0, **given}).to_json()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


def test_containers_past_the_bound_are_refused_before_decoding(tmp_path: Path) -> None:
    runtime = skill_runtime(tmp_path / "project", None)
    package = runtime.load(write_package(tmp_path / "packages", TOOL))
    runs = {
        "full": _run(runtime, package, n=FULL_FRAME),
        "over": _run(runtime, package, n=MAX_FRAME_CONTAINERS - AROUND + 1, objects=True),
        "at": _run(runtime, package, n=MAX_FRAME_CONTAINERS - AROUND, text=100_000),
    }
    message = (
        "Tool process sent an invalid message:"
        f" frame of more than {MAX_FRAME_CONTAINERS} arrays and objects"
    )
    for name in ("full", "over"):
        result, peak = runs[name]
        assert result["error"] == {"code": "INVALID_OUTPUT", "message": message}, result
        assert peak < 6 * 1024 * 1024, (name, peak >> 20)  # the frame's bytes and text
    result, peak = runs["at"]
    assert result["ok"] is True, result
    assert len(result["output"]["a"]) == MAX_FRAME_CONTAINERS - AROUND
    assert result["output"]["s"] == "[{" * 100_000
    assert peak < 14 * 1024 * 1024, peak >> 20  # 131,069 lists: 9 MiB; 17 MiB before
