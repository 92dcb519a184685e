"""The warm pool: one process per call, never reused; a package changed after its process
started is refused before the job is sent; no process outlives its parent.

(The runtime's whole suite also runs through a pool: see ``make_runtime`` in conftest.py.)
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode
from splice_build.runtime import SpliceRuntime
from splice_build.runtime.host_files import host_entry
from splice_build.runtime.pool import PoolKey, WarmPool
from testing.hostile_packages import tool_returning, write_package
from testing.pool import sandbox_pids, start_pool_parent, wait_until_dead, wait_until_gone

pytestmark = pytest.mark.node

# The package lives in <tmp>/pkgs/<name>, the project in <tmp>/project (conftest.py).
WRITES_ON_IMPORT = (
    "import fs from 'node:fs';\n"
    "const out = new URL('../../../project/out', import.meta.url).pathname;\n"
    "fs.writeFileSync(out + '/imported-' + process.pid, 'x');\n"
    "export default () => process.pid;\n"
)
OUT = {"fs": {"read": [], "write": ["out"]}}


@pytest.fixture
def pooled(project: Path) -> Iterator[SpliceRuntime]:
    """Without the OS layer: these tests tell processes apart by the pid a tool reports, and
    in a PID namespace every tool is PID 1 (the layered pool: test_isolation_pool.py)."""
    runtime = SpliceRuntime(
        project_root=project, env={}, pool=WarmPool(max_size=4), isolation="in-process"
    )
    yield runtime
    runtime.close()


def _pool(runtime: SpliceRuntime) -> WarmPool:
    pool = runtime._pool
    assert pool is not None
    return pool


def _alive(pid: int) -> bool:
    return pid in sandbox_pids(str(host_entry()))


def test_a_process_is_never_used_twice(pooled: SpliceRuntime, tmp_path: Path) -> None:
    pkg = pooled.load(write_package(tmp_path / "pkgs", tool_returning("process.pid")))
    pids = []
    for _ in range(12):
        pooled.prewarm(pkg, wait=True)
        waiting = _pool(pooled).idle_pids()
        result = pooled.execute(pkg, "t", {})
        assert result.ok, result.to_json()
        assert result.output in waiting  # it was started before the call
        pids.append(result.output)
        assert not _alive(result.output)  # it ended with its call
    assert len(set(pids)) == len(pids)
    stats = _pool(pooled).stats()
    assert stats.hits == 12 and stats.cold == 0


def test_concurrent_calls_get_distinct_processes(pooled: SpliceRuntime, tmp_path: Path) -> None:
    pkg = pooled.load(write_package(tmp_path / "pkgs", tool_returning("process.pid")))
    outputs: list[int] = []
    lock = threading.Lock()

    def call() -> None:
        for _ in range(5):
            result = pooled.execute(pkg, "t", {})
            assert result.ok, result.to_json()
            with lock:
                outputs.append(result.output)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(outputs) == 20 and len(set(outputs)) == 20


def test_no_tool_code_runs_before_the_job(
    pooled: SpliceRuntime, project: Path, tmp_path: Path
) -> None:
    (project / "out").mkdir()
    pkg = pooled.load(write_package(tmp_path / "pkgs", WRITES_ON_IMPORT, permissions=OUT))
    pooled.prewarm(pkg, wait=True)
    [pid] = _pool(pooled).idle_pids()
    threading.Event().wait(0.5)  # give a host that imported early the time to show it
    assert not (project / "out" / f"imported-{pid}").exists()
    result = pooled.execute(pkg, "t", {})
    assert result.ok and result.output == pid, result.to_json()
    assert (project / "out" / f"imported-{pid}").exists()


@pytest.mark.parametrize("pool", [True, False])
def test_a_verified_load_is_described_once_and_still_rechecked(
    pooled: SpliceRuntime, project: Path, tmp_path: Path, pool: bool
) -> None:
    """``load_verified`` (Splice.run after its check against the lock) trusts the caller's
    digest and manifest for the description, never for the call: a call, pooled or cold,
    re-hashes before its job. A description is reused only for the very manifest it was
    built from."""
    from splice_build.spec.manifest import Manifest
    from splice_build.spec.tree_digest import tree_digest

    runtime = pooled if pool else SpliceRuntime(project_root=project, env={})
    (project / "out").mkdir()
    pkg_dir = write_package(tmp_path / "pkgs", WRITES_ON_IMPORT, permissions=OUT)
    digest = tree_digest(pkg_dir)
    assert digest is not None
    manifest = Manifest.from_json((pkg_dir / "manifest.json").read_bytes())
    pkg = runtime.load_verified(pkg_dir, digest, manifest)
    assert pkg.manifest is manifest
    assert runtime.load_verified(pkg_dir, digest, manifest) is pkg
    entry = pkg_dir / "tools" / "t.mjs"
    entry.write_text(entry.read_text() + "// changed after the caller's check\n")
    assert runtime.load_verified(pkg_dir, digest, manifest) is pkg  # same key, same description
    result = runtime.execute(pkg, "t", {})
    assert result.error is not None
    assert result.error.code == ErrorCode.INSTALLED_PACKAGE_MODIFIED, result.to_json()
    assert not list((project / "out").iterdir())  # nothing of the changed code ran
    other = Manifest.from_json((pkg_dir / "manifest.json").read_bytes())
    assert runtime.load_verified(pkg_dir, digest, other) is not pkg
    new_digest = tree_digest(pkg_dir)
    assert new_digest is not None
    assert runtime.load_verified(pkg_dir, new_digest, other) is not pkg


def test_a_pooled_load_describes_only_the_manifest_it_hashed(
    pooled: SpliceRuntime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``load`` with a pool hashes the tree before it reads the manifest; a manifest replaced
    in between (then put back) is refused, not described under the digest of the old one."""
    from splice_build.errors import SandboxError
    from splice_build.spec import tree_digest as hashing

    pkg_dir = write_package(tmp_path / "pkgs", tool_returning("1"))
    manifest_path = pkg_dir / "manifest.json"
    good = manifest_path.read_bytes()
    real_hash = hashing.hash_package_file_and_stat

    def hash_then_swap(path: str) -> tuple[str, os.stat_result]:
        hashed = real_hash(path)
        if path == str(manifest_path):
            manifest_path.write_bytes(good.replace(b'"t"', b'"u"'))
        return hashed

    monkeypatch.setattr(hashing, "hash_package_file_and_stat", hash_then_swap)
    with pytest.raises(SandboxError) as info:
        pooled.load(pkg_dir)
    assert info.value.code is ErrorCode.INSTALLED_PACKAGE_MODIFIED
    monkeypatch.undo()
    manifest_path.write_bytes(good)
    assert [t.name for t in pooled.load(pkg_dir).manifest.tools] == ["t"]


def test_package_modified_after_its_process_started_is_refused(
    pooled: SpliceRuntime, project: Path, tmp_path: Path
) -> None:
    (project / "out").mkdir()
    pkg_dir = write_package(tmp_path / "pkgs", WRITES_ON_IMPORT, permissions=OUT)
    pkg = pooled.load(pkg_dir)
    pooled.prewarm(pkg, wait=True)
    [pid] = _pool(pooled).idle_pids()
    entry = pkg_dir / "tools" / "t.mjs"
    entry.write_text(entry.read_text() + "// changed\n")
    result = pooled.execute(pkg, "t", {})
    assert result.error is not None
    assert result.error.code == ErrorCode.INSTALLED_PACKAGE_MODIFIED, result.to_json()
    assert _pool(pooled).stats().hits == 1  # the warm process was taken, then refused
    assert not list((project / "out").iterdir())  # no job reached any process
    assert not _alive(pid)
    again = pooled.execute(pooled.load(pkg_dir), "t", {})  # loaded again: runs the new code
    assert again.ok, again.to_json()


def test_bounded_and_expiring(project: Path, tmp_path: Path) -> None:
    runtime = SpliceRuntime(
        project_root=project, env={}, pool=WarmPool(max_size=2, idle_seconds=0.5)
    )
    try:
        pkgs = [
            runtime.load(write_package(tmp_path / "pkgs", tool_returning("1"), name=f"p{i}"))
            for i in range(4)
        ]
        for pkg in pkgs:
            runtime.prewarm(pkg, wait=True)
        pool = _pool(runtime)
        assert len(pool.idle_pids()) <= 2
        assert wait_until_gone(str(tmp_path / "pkgs")) == []
        stats = pool.stats()
        assert stats.evicted >= 2 and stats.expired >= 1 and stats.idle == 0
    finally:
        runtime.close()


def test_close_ends_every_warm_process(project: Path, tmp_path: Path) -> None:
    runtime = SpliceRuntime(project_root=project, env={}, pool=WarmPool())
    for i in range(3):
        pkg = runtime.load(write_package(tmp_path / "pkgs", tool_returning("1"), name=f"p{i}"))
        runtime.prewarm(pkg, wait=True)
    assert len(sandbox_pids(str(tmp_path / "pkgs"))) == 3
    runtime.close()
    assert sandbox_pids(str(tmp_path / "pkgs")) == []
    pkg = runtime.load(tmp_path / "pkgs" / "p0")  # a closed pool still runs calls (cold)
    assert runtime.execute(pkg, "t", {}).ok


def test_a_dead_warm_process_is_not_handed_out(pooled: SpliceRuntime, tmp_path: Path) -> None:
    pkg = pooled.load(write_package(tmp_path / "pkgs", tool_returning("process.pid")))
    pooled.prewarm(pkg, wait=True)
    [pid] = _pool(pooled).idle_pids()
    os.kill(pid, signal.SIGKILL)
    wait_until_dead(pid)
    result = pooled.execute(pkg, "t", {})
    assert result.ok and result.output != pid
    assert _pool(pooled).stats().discarded == 1


def test_a_process_is_only_handed_to_its_own_key(project: Path, tmp_path: Path) -> None:
    """Same package, another project: other --allow-fs-* flags, so never the same process."""
    other_project = tmp_path / "other"
    other_project.mkdir()
    pool = WarmPool()
    first = SpliceRuntime(project_root=project, env={}, pool=pool)
    second = SpliceRuntime(project_root=other_project, env={}, pool=pool)
    try:
        pkg_dir = write_package(tmp_path / "pkgs", tool_returning("process.pid"), permissions=OUT)
        first.prewarm(first.load(pkg_dir), wait=True)
        [waiting] = pool.idle_pids()
        result = second.execute(second.load(pkg_dir), "t", {})
        assert result.ok and result.output != waiting
        assert waiting in pool.idle_pids()
        assert first._pool_key(first.load(pkg_dir)) != second._pool_key(second.load(pkg_dir))
        assert isinstance(first._pool_key(first.load(pkg_dir)), PoolKey)
    finally:
        pool.close()


@pytest.mark.parametrize("ending", ["exit", "SIGTERM", "SIGKILL"])
def test_no_orphans_when_the_parent_ends(project: Path, tmp_path: Path, ending: str) -> None:
    (project / "out").mkdir()
    packages = [
        write_package(tmp_path / "pkgs", tool_returning("1"), name=f"p{i}") for i in range(3)
    ]
    hang = write_package(
        tmp_path / "pkgs",
        "import fs from 'node:fs'; export default (i, ctx) => {"
        " fs.writeFileSync(ctx.paths.project + '/out/pid', String(process.pid)); for (;;) {} };",
        permissions=OUT,
        timeout_ms=60000,
        name="hang",
    )
    parent = start_pool_parent(project, packages, mode=ending, hang=hang)
    assert len(sandbox_pids(str(tmp_path / "pkgs"))) >= 4  # 3 warm + the running call
    if ending == "exit":
        assert parent.stdin is not None
        parent.stdin.close()  # lets the parent return normally
        parent.wait(timeout=30)
    else:
        parent.send_signal(getattr(signal, ending))
        parent.wait(timeout=30)
    assert wait_until_gone(str(tmp_path / "pkgs")) == []


@pytest.mark.slow
def test_two_hundred_calls_leave_nothing_behind(project: Path, tmp_path: Path) -> None:
    """Every call has its own process, and none of them leaves a process or an open file in
    the parent. The property is per call, not a count: the open files are allowed 2 more
    than before in all, so a call that leaked one (a pipe, a pidfd) in 3 calls of the 200
    already fails, as a leak in every call would; the processes are checked by name, each
    one. (It was a thousand calls: the same checks, 50 s of CI time.)"""
    fds_before = len(os.listdir("/proc/self/fd"))
    runtime = SpliceRuntime(project_root=project, env={}, pool=WarmPool(), isolation="in-process")
    # One process per call: (pid, start time) pairs, since a busy machine reuses pids.
    identity = "[process.pid, performance.timeOrigin]"
    pkg = runtime.load(write_package(tmp_path / "pkgs", tool_returning(identity)))
    seen: set[tuple[int, float]] = set()
    lock = threading.Lock()

    def caller() -> None:
        for _ in range(50):
            result = runtime.execute(pkg, "t", {})
            assert result.ok, result.to_json()
            with lock:
                seen.add(tuple(result.output))

    threads = [threading.Thread(target=caller) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 200
    runtime.close()
    assert wait_until_gone(str(tmp_path / "pkgs")) == []
    assert len(os.listdir("/proc/self/fd")) <= fds_before + 2


def test_a_burst_leaves_no_backlog_of_starts(project: Path, tmp_path: Path) -> None:
    """After 16 calls at once the pool starts at most two more processes (one queued, one in
    flight) and never holds more than its size (docs/mcp.md#admission-control)."""
    pool = WarmPool(max_size=4)
    runtime = SpliceRuntime(project_root=project, env={}, pool=pool, isolation="in-process")
    try:
        pkg = runtime.load(write_package(tmp_path / "pkgs", tool_returning("1")))
        sizes: list[int] = []
        together = threading.Barrier(16)

        def call() -> None:
            together.wait()
            assert runtime.execute(pkg, "t", {}).ok
            stats = pool.stats()
            sizes.append(stats.idle + stats.starting)

        threads = [threading.Thread(target=call) for _ in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        after_calls = pool.stats()
        for _ in range(1000):  # let the starts already asked for finish
            settled = pool.stats()
            if settled.starting == 0:
                break
            threading.Event().wait(0.02)
        assert settled.starting == 0, settled
        assert max(sizes) <= pool.max_size
        assert settled.started - after_calls.started <= 2
        assert settled.idle <= 2
    finally:
        runtime.close()


def test_a_start_that_fails_unexpectedly_leaves_the_pool_serving(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool's thread let only OSError pass: any other error of a start ended the thread
    with that start marked in flight, so ``prewarm(wait=True)`` (every call of a reusing
    runtime without a spare process) waited for ever, and nothing started or expired again."""
    from splice_build.runtime import sandbox

    runtime = SpliceRuntime(project_root=project, env={}, pool=WarmPool())
    try:
        pkg = runtime.load(write_package(tmp_path / "pkgs", tool_returning("1")))
        real_start = sandbox.start

        def failing_start(spec: object) -> object:
            if threading.current_thread().name == "splice-warm-pool":
                raise RuntimeError("an error no start was expected to raise")
            return real_start(spec)  # type: ignore[arg-type]

        monkeypatch.setattr(sandbox, "start", failing_start)
        waiter = threading.Thread(target=runtime.prewarm, args=(pkg,), kwargs={"wait": True})
        waiter.start()
        waiter.join(timeout=30)
        assert not waiter.is_alive(), "prewarm(wait=True) never returned"
        monkeypatch.setattr(sandbox, "start", real_start)
        runtime.prewarm(pkg, wait=True)  # the thread is still there and starts this one
        assert len(_pool(runtime).idle_pids()) == 1
    finally:
        runtime.close()


def test_pools_made_and_ended_leave_no_exit_hook_behind() -> None:
    """A long-lived host that makes pools (a ``Splice(reuse=True)`` per session, a project
    switched at its path) keeps nothing of those it closed or dropped: each pool registered
    an ``atexit`` hook of its own, never removed, so the hooks grew by one per pool for the
    life of the process. One hook now closes whichever pools are still open at exit."""
    import atexit
    import gc

    from splice_build.runtime import pool as pool_module

    hooks = atexit._ncallbacks()  # type: ignore[attr-defined]
    for _ in range(100):
        WarmPool().close()
    for _ in range(100):
        WarmPool()  # dropped without close(): collected (no thread was ever started)
    gc.collect()
    assert atexit._ncallbacks() == hooks  # type: ignore[attr-defined]
    still_open = WarmPool()
    assert still_open in pool_module._OPEN  # the exit hook closes it
    still_open.close()
    assert still_open not in pool_module._OPEN


def _ended(pid: int) -> bool:
    """Whether ``pid``'s process ends (the pool's thread closes it), waiting up to 10 s."""
    for _ in range(1000):
        if not _alive(pid):
            return True
        threading.Event().wait(0.01)
    return False


def test_processes_of_a_changed_or_removed_package_are_ended(
    pooled: SpliceRuntime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm process of a package that was updated (other files, so another key) or
    removed was kept until it had been idle 120 s, 8 of them at most, for no call to take.
    Now the next call of the package ends it, and the pool's look at the package
    directories ends the process of a package that is gone."""
    from splice_build.runtime import pool as pool_module

    monkeypatch.setattr(pool_module, "CHECK_SECONDS", 0.05, raising=False)
    pkg_dir = write_package(tmp_path / "pkgs", tool_returning("1"))
    pooled.prewarm(pooled.load(pkg_dir), wait=True)
    [old] = _pool(pooled).idle_pids()
    entry = pkg_dir / "tools" / "t.mjs"
    entry.write_text(entry.read_text() + "// updated\n")
    updated = pooled.load(pkg_dir)
    pooled.prewarm(updated, wait=True)  # as a call of the new version does first
    assert _ended(old)
    [new] = _pool(pooled).idle_pids()
    pkg_dir.rename(tmp_path / "removed")
    assert _ended(new)
    stats = _pool(pooled).stats()
    assert (stats.stale, stats.idle, stats.expired, stats.evicted) == (2, 0, 0, 0)
