"""Calls that end badly in every way a tool can make them end leave nothing behind in the
parent: no descriptor, no child, no zombie (a long-lived ``splice mcp`` runs thousands)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode
from splice_build.runtime import SpliceRuntime
from testing.hostile_packages import write_package

pytestmark = pytest.mark.node

ENDINGS = {
    "throw": ("export default () => { throw new Error('x'); };", ErrorCode.TOOL_ERROR),
    "exit": ("export default () => { process.exit(3); };", ErrorCode.TOOL_CRASHED),
    "abort": ("export default () => { process.abort(); };", ErrorCode.TOOL_CRASHED),
    "never settles": ("export default () => new Promise(() => {});", ErrorCode.TOOL_CRASHED),
    "busy": ("export default () => { for (;;) {} };", ErrorCode.TIMEOUT),
    "out of memory": (
        "export default () => { const keep = [];\n"
        "  for (;;) keep.push(new ArrayBuffer(256 * 1024 * 1024)); };",
        ErrorCode.TOOL_ERROR,
    ),
}


def _children() -> tuple[set[str], set[str]]:
    """This process's children (those of every thread), and those of them that are zombies."""
    children: set[str] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            children.update((task / "children").read_text("ascii").split())
        except OSError:
            continue  # the thread ended
    zombies = set()
    for child in children:
        try:
            state = Path(f"/proc/{child}/stat").read_text("utf-8").rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state == "Z":
            zombies.add(child)
    return children, zombies


@pytest.mark.parametrize("isolation", ["auto", "in-process"])
def test_failed_calls_leave_no_descriptor_child_or_zombie(
    project: Path, tmp_path: Path, isolation: str
) -> None:
    runtime = SpliceRuntime(project_root=project, env={}, isolation=isolation)
    packages = {
        name: runtime.load(
            write_package(tmp_path / "pkgs", body, name=f"end{index}", timeout_ms=1000)
        )
        for index, (name, (body, _code)) in enumerate(ENDINGS.items())
    }
    runtime.execute(packages["throw"], "t", {})  # what the first call opens once stays open
    descriptors = sorted(os.listdir("/proc/self/fd"))
    # Servers other tests of the session left running are children too: only new ones count.
    before, _ = _children()
    for _round in range(3):
        for name, (_body, code) in ENDINGS.items():
            result = runtime.execute(packages[name], "t", {})
            assert result.error is not None and result.error.code == code, (name, result.to_json())
    assert sorted(os.listdir("/proc/self/fd")) == descriptors
    after, zombies = _children()
    assert (after - before, zombies - before) == (set(), set())
