"""The job frame the parent sends is one the host reads: its largest size is one number, and a
job over it (the caller's variable values make it so) is refused before anything is made."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from splice_build.errors import ErrorCode
from splice_build.runtime import ToolResult
from splice_build.runtime.host_files import host_dir
from splice_build.runtime.limits import MAX_INPUT_BYTES, MAX_JOB_FRAME_BYTES

READS_ITS_VARIABLE = "export default async () => ({ n: process.env.BIG.length });"


def test_the_parent_and_the_host_bound_the_job_frame_alike() -> None:
    text = (host_dir() / "channel.mjs").read_text(encoding="utf-8")
    found = re.search(r"const MAX_INCOMING_FRAME = ([0-9 *]+);", text)
    assert found is not None, "channel.mjs no longer names MAX_INCOMING_FRAME"
    factors = [int(f) for f in found.group(1).split("*")]
    host_limit = 1
    for factor in factors:
        host_limit *= factor
    assert host_limit == MAX_JOB_FRAME_BYTES
    assert MAX_JOB_FRAME_BYTES >= 2 * MAX_INPUT_BYTES  # room for the context beside the input


def test_variables_over_the_frame_are_refused_before_anything_is_made(
    run_tool: Callable[..., ToolResult], project: Path, runtime_variant: str
) -> None:
    """An SDK caller's 9 MB value was TOOL_CRASHED ("the sandbox host failed before running
    the tool"), after the package's write grant had been made (with a pool, a package's
    grants are made when it is loaded, for the process warmed for it)."""
    result = run_tool(
        READS_ITS_VARIABLE,
        env={"BIG": "x" * (MAX_JOB_FRAME_BYTES + 1)},
        permissions={"env": ["BIG"], "fs": {"read": [], "write": ["out"]}},
    )
    assert result.error is not None
    assert result.error.code == ErrorCode.INPUT_TOO_LARGE, result.error
    assert "the variables @test/p0 declares hold" in result.error.details[0]
    assert (project / "out").exists() is (runtime_variant == "warm")


def test_a_large_variable_under_the_frame_reaches_the_tool(
    run_tool: Callable[..., ToolResult],
) -> None:
    size = MAX_JOB_FRAME_BYTES // 2
    result = run_tool(READS_ITS_VARIABLE, env={"BIG": "y" * size}, permissions={"env": ["BIG"]})
    assert result.ok, result.error
    assert result.output == {"n": size}
