"""Warm processes get the same OS layer as cold ones, and a killed warm process leaves
nothing behind (its PID namespace dies with it)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from splice_build.runtime import SpliceRuntime
from splice_build.runtime.pool import WarmPool
from testing.hostile_packages import write_package
from testing.isolation import needs_os_layer
from testing.pool import sandbox_pids, wait_until_gone

pytestmark = [pytest.mark.node, needs_os_layer()]

REPORTS = (
    "import fs from 'node:fs'; export default () => ({ pid: process.pid,"
    " net: fs.readlinkSync('/proc/self/ns/net'), procs: fs.readdirSync('/proc').filter((n) => /^\\d+$/.test(n)) });"
)


def test_a_warm_process_has_the_os_layer(project: Path, tmp_path: Path) -> None:
    runtime = SpliceRuntime(
        project_root=project, env={}, pool=WarmPool(), _unsafe_in_process_guards_off=True
    )
    try:
        pkg = runtime.load(write_package(tmp_path / "pkgs", REPORTS))
        runtime.prewarm(pkg, wait=True)
        result = runtime.execute(pkg, "t", {})
        assert result.ok, result.to_json()
        assert result.output["pid"] == 1 and result.output["procs"] == ["1"]
        assert result.output["net"] != os.readlink("/proc/self/ns/net")
        assert result.to_json()["isolation"]["layer"] == "os"
        assert runtime._pool is not None and runtime._pool.stats().hits == 1
    finally:
        runtime.close()


def test_killing_a_warm_process_ends_its_node(project: Path, tmp_path: Path) -> None:
    runtime = SpliceRuntime(project_root=project, env={}, pool=WarmPool())
    try:
        pkg = runtime.load(write_package(tmp_path / "pkgs", "export default () => 1;"))
        runtime.prewarm(pkg, wait=True)
        assert runtime._pool is not None
        [waiter] = runtime._pool.idle_pids()  # the process Popen started: it waits for Node
        os.kill(waiter, signal.SIGKILL)
        assert wait_until_gone(str(tmp_path / "pkgs")) == []  # Node followed
        result = runtime.execute(pkg, "t", {})
        assert result.ok and runtime._pool.stats().discarded == 1
    finally:
        runtime.close()


def test_close_returns_only_once_every_warm_node_is_gone(project: Path, tmp_path: Path) -> None:
    """The process ``Popen`` started dies before its Node (PID 1 of the namespace): ``close``
    must wait for Node too. Checked right after ``close`` returns, no polling, many rounds."""
    pkgs = tmp_path / "pkgs"
    paths = [write_package(pkgs, "export default () => 1;", name=f"p{i}") for i in range(2)]
    for _ in range(8):
        runtime = SpliceRuntime(project_root=project, env={}, pool=WarmPool())
        for path in paths:
            runtime.prewarm(runtime.load(path), wait=True)
        assert len(sandbox_pids(str(pkgs))) == 2
        runtime.close()
        assert sandbox_pids(str(pkgs)) == []


def test_a_write_grant_made_by_the_call_is_in_the_warm_view(project: Path, tmp_path: Path) -> None:
    """A process started at ``load`` (before the call's mkdir of ``out``) still sees ``out``:
    the view is planned from the paths that exist at the start, so the grant is created
    before the warm start is requested (it was missing, or the start failed when the mkdir
    fell between the plan and the mounts and the call went cold)."""
    runtime = SpliceRuntime(project_root=project, env={}, pool=WarmPool())
    try:
        body = (
            "import fs from 'node:fs'; export default (i, ctx) =>"
            " { fs.writeFileSync(ctx.paths.project + '/out/f.txt', 'x'); return 1; };"
        )
        pkg_dir = write_package(tmp_path / "pkgs", body, permissions={"fs": {"write": ["out"]}})
        pkg = runtime.load(pkg_dir)
        runtime.prewarm(pkg, wait=True)
        result = runtime.execute(pkg, "t", {})
        assert result.ok, result.to_json()
        assert (project / "out" / "f.txt").read_text() == "x"
        assert runtime._pool is not None
        assert runtime._pool.stats().hits == 1 and runtime._pool.stats().cold == 0
    finally:
        runtime.close()
