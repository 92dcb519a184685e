"""Opt-in reuse (docs/runtime.md#opt-in-reuse), in real sandboxes: a process serves
successive calls of one package under one grant, in order; never two packages, never two
grants, never two calls at once; recycled after N calls, idle time, memory, any failure or
timeout; discarded when the package's files or grant change.

Processes are told apart by a token each module draws when it is first imported (with the
OS layer every tool is PID 1 of its own namespace, so a pid says nothing).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode
from splice_build.runtime import LoadedPackage, SpliceRuntime
from splice_build.runtime.host_files import host_entry
from splice_build.runtime.reuse import ReusePool, _quiet, _resident_bytes
from splice_build.spec.reuse import ReusePolicy
from testing.hostile_packages import write_package
from testing.pool import wait_until_gone

pytestmark = pytest.mark.node

# Module state: a token per process, a call counter, and whatever the input asks for.
STATEFUL = """
import crypto from 'node:crypto';
const token = crypto.randomUUID();
let calls = 0;
let busy = false;
export default async (input) => {
  if (busy) throw new Error('CONCURRENT: two calls in one process');
  busy = true;
  try {
    calls += 1;
    if (input.remember !== undefined) globalThis.remembered = input.remember;
    if (input.fail) throw new Error('asked to fail');
    if (input.hang) for (;;) {}
    if (input.burn) { const end = Date.now() + input.burn; while (Date.now() < end) {} }
    if (input.burnCpu) {  // CPU time, whatever the machine's load makes of the wall time
      const start = process.cpuUsage();
      const used = () => { const u = process.cpuUsage(start); return (u.user + u.system) / 1000; };
      while (used() < input.burnCpu) {}
    }
    if (input.hold) globalThis.held = Buffer.alloc(input.hold * 1024 * 1024, 1);
    if (input.sleep) await new Promise((resolve) => setTimeout(resolve, input.sleep));
    return { token, calls, remembered: globalThis.remembered ?? null };
  } finally {
    busy = false;
  }
};
"""


@pytest.fixture
def make_reusing(project: Path) -> Iterator[Callable[..., SpliceRuntime]]:
    runtimes: list[SpliceRuntime] = []

    def make(isolation: str = "auto", **policy: float) -> SpliceRuntime:
        runtime = SpliceRuntime(
            project_root=project,
            env={},
            reuse=ReusePolicy(**policy),  # type: ignore[arg-type]
            isolation=isolation,
        )
        runtimes.append(runtime)
        return runtime

    yield make
    for runtime in runtimes:
        runtime.close()


def _pool(runtime: SpliceRuntime) -> ReusePool:
    assert runtime._reuse is not None
    return runtime._reuse


def _package(tmp_path: Path, name: str = "stateful", **options: object) -> Path:
    return write_package(tmp_path / "pkgs", STATEFUL, name=name, **options)  # type: ignore[arg-type]


def _gone(pid: int) -> bool:
    """The process ended and was reaped (an ended sandbox is always reaped by ``close``)."""
    return not Path(f"/proc/{pid}").exists()


def _call(runtime: SpliceRuntime, pkg: LoadedPackage, **input: object) -> dict[str, object]:
    result = runtime.execute(pkg, "t", input)
    assert result.ok, result.to_json()
    assert isinstance(result.output, dict)
    return result.output


def test_one_process_serves_successive_calls(make_reusing, tmp_path: Path) -> None:
    runtime = make_reusing()
    pkg = runtime.load(_package(tmp_path))
    outputs, pids = [], []
    for _ in range(8):
        outputs.append(_call(runtime, pkg))
        pids.append(tuple(_pool(runtime).idle_pids()))
    assert len({o["token"] for o in outputs}) == 1
    assert [o["calls"] for o in outputs] == list(range(1, 9))
    assert len(set(pids)) == 1 and len(pids[0]) == 1  # one pid served all 8
    assert _pool(runtime).stats().reused == 7


def test_the_default_is_a_fresh_process_per_call(project: Path, tmp_path: Path) -> None:
    from splice_build.runtime.pool import WarmPool

    with SpliceRuntime(project_root=project, env={}, pool=WarmPool()) as runtime:
        pkg = runtime.load(_package(tmp_path))
        outputs = [_call(runtime, pkg) for _ in range(3)]
    assert len({o["token"] for o in outputs}) == 3
    assert {o["calls"] for o in outputs} == {1}


def test_two_packages_never_share_a_process_or_its_state(make_reusing, tmp_path: Path) -> None:
    runtime = make_reusing()
    first = runtime.load(_package(tmp_path, "first"))
    second = runtime.load(_package(tmp_path, "second"))
    a1 = _call(runtime, first, remember="first's secret")
    b1 = _call(runtime, second)
    a2 = _call(runtime, first)
    b2 = _call(runtime, second)
    assert a1["token"] == a2["token"] != b1["token"] == b2["token"]
    # State kept between calls is the package's own: visible to its next call only.
    assert a2["remembered"] == "first's secret"
    assert b1["remembered"] is None and b2["remembered"] is None


def test_a_changed_grant_discards_the_process(make_reusing, tmp_path: Path, project: Path) -> None:
    runtime = make_reusing()
    pkg_dir = _package(tmp_path)
    before = _call(runtime, runtime.load(pkg_dir))
    [old] = _pool(runtime).idle_pids()
    manifest = json.loads((pkg_dir / "manifest.json").read_text())
    manifest["permissions"] = {"fs": {"read": [], "write": ["out"]}}
    (pkg_dir / "manifest.json").write_text(json.dumps(manifest))
    after = _call(runtime, runtime.load(pkg_dir))
    assert after["token"] != before["token"] and after["calls"] == 1
    assert _pool(runtime).stats().discarded == 1
    assert _gone(old)


def test_changed_files_refuse_the_call_and_discard_the_process(
    make_reusing, tmp_path: Path
) -> None:
    runtime = make_reusing()
    pkg_dir = _package(tmp_path)
    pkg = runtime.load(pkg_dir)
    first = _call(runtime, pkg)
    [old] = _pool(runtime).idle_pids()
    entry = pkg_dir / "tools" / "t.mjs"
    entry.write_text(entry.read_text() + "\n// changed\n")
    refused = runtime.execute(pkg, "t", {})  # the from-bytes check before the call
    assert refused.error is not None
    assert refused.error.code == ErrorCode.INSTALLED_PACKAGE_MODIFIED
    assert _gone(old)
    again = _call(runtime, runtime.load(pkg_dir))
    assert again["token"] != first["token"]


def test_recycled_after_max_calls(make_reusing, tmp_path: Path) -> None:
    runtime = make_reusing(max_calls=3)
    pkg = runtime.load(_package(tmp_path))
    tokens = [_call(runtime, pkg)["token"] for _ in range(7)]
    assert tokens[0] == tokens[1] == tokens[2] != tokens[3]
    assert tokens[3] == tokens[4] == tokens[5] != tokens[6]
    assert _pool(runtime).stats().recycled == 2


def test_recycled_after_idle_time(make_reusing, tmp_path: Path) -> None:
    runtime = make_reusing(idle_seconds=0.3)
    pkg = runtime.load(_package(tmp_path))
    first = _call(runtime, pkg)
    [old] = _pool(runtime).idle_pids()
    deadline = time.monotonic() + 10
    while not _gone(old) and time.monotonic() < deadline:  # the reaper ends it
        time.sleep(0.05)
    assert _gone(old) and _pool(runtime).idle_pids() == []
    assert _call(runtime, pkg)["token"] != first["token"]


def test_a_kept_process_of_a_removed_package_is_ended(
    make_reusing, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warm pool's look at its processes' package directories (pool.py) is the reaper's
    too: a kept process of a package removed since (``splice remove`` beside a
    ``splice mcp --reuse``) stayed, stopped, until it had been idle ``idleSeconds`` (here an
    hour, the most a project may set), for no call to take. A package still there keeps its
    process."""
    from splice_build.runtime import reuse as reuse_module

    monkeypatch.setattr(reuse_module, "CHECK_SECONDS", 0.05, raising=False)
    runtime = make_reusing(idle_seconds=3600)
    removed, kept = _package(tmp_path), _package(tmp_path, name="other")
    _call(runtime, runtime.load(removed))
    [old] = _pool(runtime).idle_pids()
    _call(runtime, runtime.load(kept))
    removed.rename(tmp_path / "gone")
    for _ in range(1000):  # the reaper ends it within a look or two; a bound for the old code
        if _gone(old):
            break
        threading.Event().wait(0.01)
    assert _gone(old)
    assert len(_pool(runtime).idle_pids()) == 1 and _pool(runtime).stats().discarded == 1


def test_a_kept_process_of_a_package_removed_during_its_first_call_is_ended(
    make_reusing, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reaper compared its processes' package directories with the one found when each
    was first given back, after its first call: a package removed during that call
    (``splice remove`` beside a running call of ``splice mcp --reuse``) was found gone then
    and now alike, so its process stayed, stopped, until it had been idle ``idleSeconds``.
    The directory is the one the process was started for."""
    from splice_build.runtime import reuse as reuse_module

    monkeypatch.setattr(reuse_module, "CHECK_SECONDS", 0.05, raising=False)
    runtime = make_reusing(idle_seconds=3600)
    removed = _package(tmp_path)
    real_give_back = ReusePool.give_back
    given_back: list[int] = []

    def give_back(pool: ReusePool, lease: reuse_module.Lease) -> None:
        if removed.exists():
            removed.rename(tmp_path / "gone")  # removed while its first call ran
        given_back.append(lease.process.pid)  # the reaper may end it before the call returns
        real_give_back(pool, lease)

    monkeypatch.setattr(ReusePool, "give_back", give_back)
    _call(runtime, runtime.load(removed))
    [old] = given_back
    for _ in range(1000):  # the reaper ends it within a look or two; a bound for the old code
        if _gone(old):
            break
        threading.Event().wait(0.01)
    assert _gone(old) and _pool(runtime).stats().discarded == 1


@pytest.mark.parametrize(
    ("input", "code"),
    [({"fail": True}, ErrorCode.TOOL_ERROR), ({"hang": True}, ErrorCode.TIMEOUT)],
    ids=["failure", "timeout"],
)
def test_recycled_after_a_failure_or_timeout(
    make_reusing, tmp_path: Path, input: dict[str, object], code: ErrorCode
) -> None:
    runtime = make_reusing()
    pkg = runtime.load(_package(tmp_path, timeout_ms=3000))
    first = _call(runtime, pkg)
    result = runtime.execute(pkg, "t", input)
    assert result.error is not None and result.error.code == code
    assert _pool(runtime).idle_pids() == []
    after = _call(runtime, pkg)
    assert after["token"] != first["token"] and after["calls"] == 1


def test_recycled_over_the_memory_threshold(make_reusing, tmp_path: Path) -> None:
    runtime = make_reusing(max_memory_mb=128)
    pkg = runtime.load(_package(tmp_path))
    first = _call(runtime, pkg)
    assert _pool(runtime).idle_pids()  # an idle Node is well under 128 MiB
    assert _call(runtime, pkg, hold=160)["token"] == first["token"]
    assert _pool(runtime).idle_pids() == [] and _pool(runtime).stats().recycled == 1
    assert _call(runtime, pkg)["token"] != first["token"]


def test_recycled_once_its_cpu_time_would_not_leave_a_full_call(
    make_reusing, tmp_path: Path
) -> None:
    """The kernel's CPU limit counts a process's whole life: a process that used more than
    the budget (here 0.5 s; by default the limit minus the longest call) is not kept, so no
    later call is killed by what earlier calls used."""
    runtime = make_reusing(max_cpu_seconds=0.5)
    pkg = runtime.load(_package(tmp_path))
    light = _call(runtime, pkg)
    assert _pool(runtime).stats().idle == 1
    [kept] = _pool(runtime).idle_pids()
    heavy = _call(runtime, pkg, burnCpu=700)
    assert heavy["token"] == light["token"]  # served by the kept process, which is then done
    assert _pool(runtime).stats().idle == 0 and _pool(runtime).stats().recycled == 1
    assert _gone(kept)
    assert _call(runtime, pkg)["token"] != light["token"]


def test_concurrent_calls_never_share_a_process(make_reusing, tmp_path: Path) -> None:
    runtime = make_reusing()
    pkg = runtime.load(_package(tmp_path))
    outputs: list[dict[str, object]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def calls() -> None:
        try:
            for _ in range(5):
                output = _call(runtime, pkg, sleep=30)  # CONCURRENT if another call is inside
                with lock:
                    outputs.append(output)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=calls) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(outputs) == 20
    # Every process counted its own calls, one after another.
    by_token: dict[object, list[object]] = {}
    for output in outputs:
        by_token.setdefault(output["token"], []).append(output["calls"])
    assert all(sorted(c) == list(range(1, len(c) + 1)) for c in by_token.values())  # type: ignore[type-var]
    assert len(by_token) < 20  # and processes were reused


def test_a_process_started_in_a_callers_thread_is_not_kept_for_others(
    make_reusing, tmp_path: Path
) -> None:
    """With no process from the pool's thread (here the pool is closed; under load another
    caller may take the one it started), a call starts its own in its thread. That process
    dies with the thread (PR_SET_PDEATHSIG), so it serves that call only: kept for reuse, it
    was killed under another thread's call when the first thread ended."""
    runtime = make_reusing()
    pkg = runtime.load(_package(tmp_path))
    assert runtime._pool is not None
    runtime._pool.close()
    first: list[dict[str, object]] = []
    release = threading.Event()

    def first_call() -> None:
        first.append(_call(runtime, pkg))
        release.wait(60)

    thread = threading.Thread(target=first_call)
    thread.start()
    while not first and thread.is_alive():
        time.sleep(0.01)
    assert first, "the first call failed"
    ender = threading.Timer(0.3, release.set)  # the first thread ends during the next call
    ender.start()
    try:
        second = _call(runtime, pkg, sleep=1500)
    finally:
        release.set()
        thread.join()
    assert second["token"] != first[0]["token"] and second["calls"] == 1


def test_a_kept_process_stays_stopped_through_the_check_before_its_job(
    make_reusing, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The from-bytes check of the package before a call runs while the kept process is
    still stopped: work an earlier call left running gets no time outside a call's deadline
    (and none at all when the check refuses the call and ends the process)."""
    from splice_build.runtime import runtime as runtime_module

    runtime = make_reusing()
    pkg = runtime.load(_package(tmp_path))
    _call(runtime, pkg)
    [[lease]] = _pool(runtime)._idle.values()
    assert lease.node_pid is not None
    seen: list[str] = []
    check_bound = runtime_module._check_bound

    def spy(*args: object) -> None:
        # Node's own state: in the group stop, which no thread of it leaves before SIGCONT.
        seen.append(Path(f"/proc/{lease.node_pid}/stat").read_text().rpartition(")")[2].split()[0])
        check_bound(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(runtime_module, "_check_bound", spy)
    assert _call(runtime, pkg)["calls"] == 2
    assert seen == ["T"]


def test_a_process_a_call_starts_itself_serves_one_job(make_reusing, tmp_path: Path) -> None:
    """A call that had to start its own process (never kept, above) gets a one-job host: a
    reuse host waited for a next job after its result, and held every such call for the
    session's exit grace (0.5 s) with the tool's leftover work still running."""
    runtime = make_reusing()
    pkg = runtime.load(_package(tmp_path))
    pool = runtime._pool
    assert pool is not None
    pool.close()
    started: list[list[str]] = []
    start_cold = pool.start_cold

    def spy(key):  # type: ignore[no-untyped-def]
        process = start_cold(key)
        started.append([str(arg) for arg in process.popen.args])
        return process

    pool.start_cold = spy  # type: ignore[method-assign]
    assert _call(runtime, pkg)["calls"] == 1
    [argv] = started
    assert "reuse" not in argv[argv.index(str(host_entry())) :]


def test_close_ends_every_reused_process(make_reusing, tmp_path: Path) -> None:
    runtime = make_reusing()
    pkg = runtime.load(_package(tmp_path))
    _call(runtime, pkg)
    runtime.close()
    assert wait_until_gone(str(tmp_path / "pkgs")) == []


def test_a_call_close_cuts_short_answers_interrupted(make_reusing, tmp_path: Path) -> None:
    """``close()`` while another thread's call runs in a kept process ends that process (it
    dies with the pool's thread). The call answered ``TOOL_CRASHED`` ("exit code -9"), as if
    the tool had crashed; it is the caller's ``close()``, so ``INTERRUPTED``."""
    runtime = make_reusing()
    pkg = runtime.load(_package(tmp_path))
    _call(runtime, pkg)
    assert _pool(runtime).idle_pids()
    results = []
    caller = threading.Thread(
        target=lambda: results.append(runtime.execute(pkg, "t", {"sleep": 20_000}))
    )
    caller.start()
    deadline = time.monotonic() + 30
    while _pool(runtime).idle_pids() and time.monotonic() < deadline:
        time.sleep(0.01)  # the call took the kept process
    runtime.close()
    caller.join(30)
    [result] = results
    assert result.error is not None and result.error.code is ErrorCode.INTERRUPTED
    assert "close()" in result.error.message


def test_a_changed_variable_value_is_not_served_by_the_old_process(
    project: Path, tmp_path: Path
) -> None:
    """The host installs the declared variables once, for its first job: a process holding
    other values is not reused."""
    env = {"REUSE_TEST_VALUE": "first"}
    body = "import c from 'node:crypto'; const t = c.randomUUID(); export default () => [t, process.env.REUSE_TEST_VALUE];"
    pkg_dir = write_package(tmp_path / "pkgs", body, permissions={"env": ["REUSE_TEST_VALUE"]})
    with SpliceRuntime(project_root=project, env=env, reuse=ReusePolicy()) as runtime:
        pkg = runtime.load(pkg_dir)
        first = runtime.execute(pkg, "t", {}).output
        again = runtime.execute(pkg, "t", {}).output
        env["REUSE_TEST_VALUE"] = "second"
        changed = runtime.execute(pkg, "t", {}).output
    assert first[1] == again[1] == "first" and first[0] == again[0]
    assert changed[1] == "second" and changed[0] != first[0]


LIST_GRANT = """
import c from 'node:crypto';
import fs from 'node:fs';
const token = c.randomUUID();
export default (i, ctx) => {
  const notes = ctx.paths.project + '/' + i.grant + '/notes.txt';
  if (i.open) { fs.writeFileSync(notes, 'mine'); globalThis.kept = fs.openSync(notes, 'r'); }
  const held = globalThis.kept === undefined ? null : fs.readFileSync(globalThis.kept, 'utf8');
  return { token, held, seen: fs.readdirSync(ctx.paths.project + '/' + i.grant) };
};
"""


@pytest.mark.parametrize(
    ("isolation", "grant"), [("auto", "ws"), ("in-process", "ws"), ("auto", "ws/docs")]
)
def test_a_grant_renamed_away_is_not_served_by_the_old_process(
    make_reusing, tmp_path: Path, project: Path, isolation: str, grant: str
) -> None:
    """The user moves a granted directory aside (with what it holds) and makes a new, empty
    one at its path: the grant names another directory now, so the process of the old one is
    not reused. It would go on reading what is moved out of the grant: with the file view
    through the bind of ws/ (ws/docs, granted inside it, is not bound itself), and through a
    descriptor its first call opened there, with a file view or without."""
    runtime = make_reusing(isolation)
    permissions = {"write": ["ws"], "read": [grant] if grant != "ws" else []}
    pkg = runtime.load(
        write_package(tmp_path / "pkgs", LIST_GRANT, permissions={"fs": permissions})
    )
    (project / grant).mkdir(parents=True, exist_ok=True)
    before = _call(runtime, pkg, open=True, grant=grant)
    [old] = _pool(runtime).idle_pids()
    (project / grant).rename(tmp_path / "private")
    (tmp_path / "private" / "notes.txt").write_text("moved out of the grant", encoding="utf-8")
    (project / grant).mkdir()
    after = _call(runtime, pkg, grant=grant)
    assert before["held"] == "mine"
    assert after == {"token": after["token"], "held": None, "seen": []}
    assert after["token"] != before["token"]
    assert _pool(runtime).stats().discarded == 1
    assert _gone(old)


def test_the_project_setting_and_its_errors(tmp_path: Path) -> None:
    from splice_build.errors import SpliceError
    from splice_build.project.project_file import load_project_file

    root = tmp_path / "p"
    root.mkdir()
    config = root / "splice.json"
    config.write_text('{"specVersion": 1, "packages": {}, "reuse": {"maxCalls": 7}}')
    project = load_project_file(root)
    assert project.reuse_policy() == ReusePolicy(max_calls=7)
    assert project.to_json()["reuse"] == {"maxCalls": 7}
    for bad, named in (
        ({"maxCalls": 0}, "reuse.maxCalls"),
        ({"idleSeconds": "long"}, "reuse.idleSeconds"),
        ({"maxMemoryMb": 1.5}, "reuse.maxMemoryMb"),
        ({"calls": 3}, 'reuse.calls: unknown limit (did you mean "maxCalls"?)'),
        ({"x": 3}, "reuse.x: unknown limit\n"),
        ({"maxcalls": 3}, 'reuse.maxcalls: unknown limit (did you mean "maxCalls"?)'),
        ({"idleSecond": 3}, 'reuse.idleSecond: unknown limit (did you mean "idleSeconds"?)'),
        ("yes", "reuse:"),
    ):
        config.write_text(json.dumps({"specVersion": 1, "packages": {}, "reuse": bad}))
        with pytest.raises(SpliceError) as caught:
            load_project_file(root)
        assert caught.value.code == ErrorCode.INVALID_PROJECT
        assert named in caught.value.message + "\n"
    config.write_text('{"specVersion": 1, "packages": {}, "reuse": false}')
    assert load_project_file(root).reuse_policy() is None


# A tool that answers for itself: writes a result frame to the host's message pipe, or
# returns what the parent refuses after the frame (a wrong shape, too large).
SELF_ANSWERING = """
import crypto from 'node:crypto';
import fs from 'node:fs';
const token = crypto.randomUUID();
export default async (input) => {
  if (input.forge !== undefined) {
    const frame = { type: 'result', ok: true, output: { token, forged: true } };
    if (input.forge !== null) frame.job = input.forge;
    fs.writeSync(Number(process.argv[3]), JSON.stringify(frame) + '\\n');
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  if (input.bad) return 5;
  if (input.big) return { token, blob: 'x'.repeat(1100000) };
  return { token };
};
"""


def _self_answering(tmp_path: Path) -> Path:
    return write_package(
        tmp_path / "pkgs", SELF_ANSWERING, name="answers", output_schema={"type": "object"}
    )


@pytest.mark.parametrize(
    ("input", "code"),
    [({"bad": True}, ErrorCode.INVALID_OUTPUT), ({"big": True}, ErrorCode.OUTPUT_TOO_LARGE)],
)
def test_recycled_after_an_output_the_parent_refuses(
    make_reusing, tmp_path: Path, input: dict[str, object], code: ErrorCode
) -> None:
    """The host reported success, but the output fails the parent's checks: not a clean
    success, so the process is not served again."""
    runtime = make_reusing()
    pkg = runtime.load(_self_answering(tmp_path))
    first = _call(runtime, pkg)
    result = runtime.execute(pkg, "t", input)
    assert result.error is not None and result.error.code == code, result.to_json()
    assert _pool(runtime).idle_pids() == []
    assert _call(runtime, pkg)["token"] != first["token"]


@pytest.mark.parametrize("reuse", [True, False])
@pytest.mark.parametrize("job", [None, "0" * 32, "not hex"])
def test_a_result_the_tool_writes_itself_is_refused(
    make_reusing, project: Path, tmp_path: Path, reuse: bool, job: str | None
) -> None:
    """A result frame the tool writes to the pipe cannot carry its job's id (host.mjs keeps
    it out of reach): the call fails and its process ends, so a forged result can neither
    end a call early nor shift the next caller's result (PROTOCOL.md)."""
    runtime = make_reusing() if reuse else SpliceRuntime(project_root=project, env={})
    try:
        pkg = runtime.load(_self_answering(tmp_path))
        first = _call(runtime, pkg)
        forged = runtime.execute(pkg, "t", {"forge": job})
        assert forged.error is not None, forged.to_json()
        assert forged.error.code == ErrorCode.INVALID_OUTPUT, forged.to_json()
        if reuse:
            assert _pool(runtime).idle_pids() == []
        after = _call(runtime, pkg)
        assert after.get("forged") is None and after["token"] != first["token"]
    finally:
        runtime.close()


# A tool that leaves work running after its result. Its capability call (unanswered: no
# broker) makes the host read its pipe asynchronously, so its event loop would turn between
# calls; ``burn`` keeps two of the four threads of the thread pool busy, which needs no event
# loop at all (the other two still serve the host's reads).
LEAVES_WORK = """
import crypto from 'node:crypto';
import fs from 'node:fs';
const token = crypto.randomUUID();
export default async (input, ctx) => {
  await ctx.capability('web.search', { query: 'x' }).catch(() => null);
  const later = (what) => setTimeout(what, 100);
  if (input.after === 'frame') {
    later(() => fs.writeSync(Number(process.argv[3]), '{"type":"capability","id":7,"name":"x","args":{}}\\n'));
  }
  if (input.after === 'throw') later(() => { throw new Error('late failure'); });
  if (input.after === 'grow') later(() => { globalThis.big = Buffer.alloc(200 * 1024 * 1024, 1); });
  if (input.after === 'log') later(() => console.error('late log of an earlier call'));
  if (input.after === 'write') {
    setInterval(() => fs.appendFileSync(ctx.paths.project + '/ws/ticks', 'tick\\n'), 5);
  }
  if (input.after === 'burn') {
    for (let i = 0; i < 2; i += 1) crypto.pbkdf2('pw', 'salt', 1e9, 64, 'sha512', () => {});
  }
  return { token };
};
"""


def _thread_states(pid: int) -> list[str]:
    """The state letter of every thread of ``pid`` (``T``: stopped)."""
    states = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        states.append((task / "stat").read_text().rpartition(")")[2].split()[0])
    return states


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])


@pytest.mark.parametrize("after", ["frame", "throw", "grow", "log", "write", "burn"])
def test_work_left_running_does_nothing_while_its_process_waits(
    make_reusing, tmp_path: Path, project: Path, after: str
) -> None:
    """A waiting process is stopped, every thread of it: work a call left running (a timer
    that writes a frame, fails, grows, logs or writes in the grant; thread-pool jobs) uses no
    CPU and touches nothing after its call's result (it burned CPU for as long as the process
    waited, and wrote in a grant the user may have moved aside since). It runs again only
    inside the next call of the same package and grant, which the process still serves; a
    late result of the earlier call is refused there, never delivered."""
    runtime = make_reusing(max_memory_mb=128)
    permissions = {"capabilities": ["web.search"], "fs": {"write": ["ws"]}}
    package = write_package(tmp_path / "pkgs", LEAVES_WORK, name="leaves", permissions=permissions)
    pkg = runtime.load(package)
    first = _call(runtime, pkg, after=after)
    [[lease]] = _pool(runtime)._idle.values()
    assert lease.node_pid is not None
    # The stop is sent as the process is kept; each thread enters it at its next return to
    # user space (waited for here, bounded, not timed).
    deadline = time.monotonic() + 10
    while set(_thread_states(lease.node_pid)) != {"T"} and time.monotonic() < deadline:
        time.sleep(0.001)
    assert set(_thread_states(lease.node_pid)) == {"T"}
    ticks, cpu = (project / "ws" / "ticks").exists(), _cpu_ticks(lease.node_pid)
    time.sleep(0.3)  # the work is due: it would have run by now
    assert _cpu_ticks(lease.node_pid) == cpu and (project / "ws" / "ticks").exists() == ticks
    # Alive, silent and within its limits: the next call takes it.
    assert lease.process.popen.poll() is None and _quiet(lease.process)
    assert _resident_bytes(lease.node_pid) < 128 * 1024 * 1024
    result = runtime.execute(pkg, "t", {})
    if result.ok:
        assert isinstance(result.output, dict) and result.output["token"] == first["token"]
    else:  # the late failure: its result names the earlier job (or fails this one)
        assert result.error is not None
        assert result.error.code in (ErrorCode.INVALID_OUTPUT, ErrorCode.TOOL_ERROR)
        assert after == "throw" and _pool(runtime).idle_pids() == []


# Starts a 48 MiB write of its grant and answers without waiting for it; with ``listen``, a
# capability call first makes the host read its pipe asynchronously (a request of its own).
LEAVES_A_WRITE = """
import crypto from 'node:crypto';
import fs from 'node:fs';
const token = crypto.randomUUID();
export default async (input, ctx) => {
  if (input.listen) await ctx.capability('web.search', { query: 'x' }).catch(() => null);
  fs.writeFile(ctx.paths.project + '/ws/big', Buffer.alloc(48 * 1024 * 1024, 1), () => {});
  return { token };
};
"""


@pytest.mark.parametrize("listen", [False, True])
def test_a_write_left_in_flight_is_done_when_a_kept_process_answers(
    make_reusing, tmp_path: Path, project: Path, listen: bool
) -> None:
    """A stop holds a thread only once its system call returns: a write the tool left
    un-awaited went on in the kernel while the kept process waited, stopped, after its call
    had returned (a 120 MB one grew the file for ~0.3 s). A kept process answers once its
    file-system requests are done, as a one-job host's exit waits for them: nothing of the
    call touches the grant after its result."""
    runtime = make_reusing()
    permissions = {"fs": {"write": ["ws"]}, "capabilities": ["web.search"]}
    pkg = runtime.load(write_package(tmp_path / "pkgs", LEAVES_A_WRITE, permissions=permissions))
    first = _call(runtime, pkg, listen=listen)
    assert (project / "ws" / "big").stat().st_size == 48 * 1024 * 1024
    assert _pool(runtime).stats().idle == 1  # still kept, and served again
    assert _call(runtime, pkg, listen=listen)["token"] == first["token"]
