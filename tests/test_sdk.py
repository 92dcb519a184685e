"""The SDK: ``Splice.init`` makes a project as ``splice init`` does; every argument of a wrong
kind is a coded error; threads share one runtime, which ``close()`` ends."""

from __future__ import annotations

import gc
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from splice_build.errors import ErrorCode, SpliceError
from splice_build.runtime.pool import WarmPool
from splice_build.sdk import Splice
from splice_build.spec.reuse import ReusePolicy
from testing.isolation import needs_os_layer


def test_init_creates_only_splice_json_and_opens_the_project(tmp_path: Path) -> None:
    splice = Splice.init(tmp_path / "new" / "project", registry="local")
    root = tmp_path / "new" / "project"
    assert splice.project_root == root
    assert [p.name for p in root.iterdir()] == ["splice.json"]
    saved = json.loads((root / "splice.json").read_text(encoding="utf-8"))
    assert saved == {"specVersion": 1, "registry": "local", "packages": {}}
    assert splice.registry_url == "http://127.0.0.1:8787"
    assert splice.list() == []


def test_init_leaves_an_existing_project_alone(tmp_path: Path) -> None:
    existing = '{"specVersion": 1, "packages": {"@acme/x": "^1.0.0"}}\n'
    (tmp_path / "splice.json").write_text(existing, encoding="utf-8")
    splice = Splice.init(tmp_path, registry="local")
    assert (tmp_path / "splice.json").read_text(encoding="utf-8") == existing
    assert splice.project_root == tmp_path


@pytest.mark.parametrize("registry", ["ftp://example.invalid", 1, ["http://127.0.0.1:1"]])
def test_init_refuses_a_bad_registry_and_writes_nothing(tmp_path: Path, registry: object) -> None:
    with pytest.raises(SpliceError) as caught:
        Splice.init(tmp_path / "p", registry=registry)  # type: ignore[arg-type]
    assert caught.value.code is ErrorCode.INVALID_CONFIG
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize(
    ("options", "refusal"),
    [
        ({"hints": "x"}, ErrorCode.USAGE),
        ({"pool": 3}, ErrorCode.USAGE),
        ({"env": {"A": 1}}, ErrorCode.USAGE),
        ({"reuse": "yes"}, ErrorCode.USAGE),
        ({"on_progress": 1}, ErrorCode.USAGE),
        ({"broker": 1}, ErrorCode.USAGE),
        ({"home": 1}, ErrorCode.USAGE),
        ({"hint": "sdk"}, TypeError),
    ],
)
def test_init_checks_every_option_before_it_writes(
    tmp_path: Path, options: dict[str, object], refusal: object
) -> None:
    """A bad option of ``Splice()`` given to ``init`` was found only once the directory and its
    splice.json had been made: the caller's next try with the option corrected took an
    existing project, which a bad ``registry`` had never left behind."""
    with pytest.raises((SpliceError, TypeError)) as caught:
        Splice.init(tmp_path / "p", **options)  # type: ignore[arg-type]
    if isinstance(refusal, ErrorCode):
        assert isinstance(caught.value, SpliceError) and caught.value.code is refusal
    else:
        assert type(caught.value) is refusal
    assert not (tmp_path / "p").exists()


@pytest.mark.node
def test_run_refuses_an_input_that_is_not_an_object_as_a_result(tmp_path: Path) -> None:
    """A caller's input goes to the tool's schema as it is: a list of pairs is not turned into
    an object, and a string, None or a number is an INVALID_INPUT result, not a TypeError."""
    splice = Splice.init(tmp_path / "project")
    splice.add(["@splice/example"])
    for given, kind in (
        ([["name", "Ada"]], "array"),
        ("ab", "string"),
        (None, "null"),
        (5, "number"),
    ):
        result = splice.run("example.hello", given)  # type: ignore[arg-type]
        assert not result.ok
        assert result.error is not None
        assert result.error.code is ErrorCode.INVALID_INPUT
        assert result.error.details == (f"input: expected object, got {kind}",)
    assert splice.run("example.hello", {"name": "Ada"}).output == {"message": "Hello, Ada."}


class _RaisingItems(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        raise RuntimeError("items")

    values = items  # type: ignore[assignment]


class _RaisingList(list):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        raise RuntimeError("iter")


class _Pairs(Mapping[str, str]):
    """A mapping whose iteration yields what ``dict()`` cannot take (``how``)."""

    def __init__(self, how: str) -> None:
        self.how = how

    def __getitem__(self, key: str) -> str:
        if self.how == "missing":
            raise KeyError(key)
        return "x"

    def __iter__(self) -> Any:
        return {"unhashable": iter([["name"]]), "missing": iter(["name"])}.get(self.how, 5)

    def __len__(self) -> int:
        return 1


def test_run_answers_an_input_whose_own_code_raises_with_an_invalid_input_result(
    tmp_path: Path,
) -> None:
    """A mapping that raises while it is copied (TypeError, KeyError), and a dict or list
    subclass that raises when its items are read (the depth count and the JSON encoder read
    them), came out of ``run`` as that exception; each is now an INVALID_INPUT result naming
    types only, and no process is started."""
    splice = Splice.init(tmp_path / "project")
    splice.add(["@splice/example"])
    for given, why in (
        (_Pairs("not an iterator"), "the _Pairs raised TypeError"),
        (_Pairs("unhashable"), "the _Pairs raised TypeError"),
        (_Pairs("missing"), "the _Pairs raised KeyError"),
        ({"name": _RaisingItems(a=1)}, "a value in it raised RuntimeError when read"),
        ({"name": _RaisingList([1])}, "a value in it raised RuntimeError when read"),
    ):
        result = splice.run("example.hello", given)  # type: ignore[arg-type]
        assert result.error is not None and result.isolation is None
        assert result.error.code is ErrorCode.INVALID_INPUT
        assert result.error.message.endswith(why)


class _Hostile:
    """An argument whose every conversion raises: a message must never call them."""

    def __str__(self) -> str:
        raise AssertionError("__str__ was called")

    __repr__ = __format__ = __str__  # type: ignore[assignment]

    def __hash__(self) -> int:
        raise AssertionError("__hash__ was called")


class _HostileText(str):
    """A name as a ``str`` subclass whose own conversions raise: a message must use the text."""

    def __str__(self) -> str:
        raise AssertionError("__str__ was called")

    def __format__(self, spec: str) -> str:
        raise AssertionError("__format__ was called")

    __repr__ = __str__


class _NumberPath:
    def __fspath__(self) -> object:
        return 5


_HUGE = "x" * 5000
_CALLS: dict[str, Callable[[Path, Any], object]] = {
    "Splice(project)": lambda root, v: Splice(v),
    "Splice(env)": lambda root, v: Splice(root, env=v),
    "Splice(home)": lambda root, v: Splice(root, home=v),
    "Splice(reuse)": lambda root, v: Splice(root, reuse=v),
    # a ReusePolicy's fields (runtime.md#opt-in-reuse): a ValueError or TypeError before
    "ReusePolicy": lambda root, v: Splice(root, reuse=ReusePolicy(**v)),
    "Splice(on_progress)": lambda root, v: Splice(root, on_progress=v),
    "Splice(broker)": lambda root, v: Splice(root, broker=v),
    "Splice(pool)": lambda root, v: Splice(root, pool=v),
    # a WarmPool's settings: "5" seconds killed the pool's thread, NaN kept processes for ever
    "WarmPool": lambda root, v: Splice(root, pool=WarmPool(**v)),
    "Splice.init": lambda root, v: Splice.init(v),
    "add": lambda root, v: Splice(root).add(v),
    "install(frozen)": lambda root, v: Splice(root).install(frozen=v),
    "remove": lambda root, v: Splice(root).remove(v),
    "outdated": lambda root, v: Splice(root).outdated(v),
    "update": lambda root, v: Splice(root).update(v),
    "check": lambda root, v: Splice(root).check(v),
    "tools": lambda root, v: Splice(root).tools(v),
    "load": lambda root, v: Splice(root).load(v),
    "verify": lambda root, v: Splice(root).verify(v),
    "resolve_tool": lambda root, v: Splice(root).resolve_tool(v),
    "run": lambda root, v: Splice(root).run(v, {}),
    "run_resolved": lambda root, v: Splice(root).run_resolved(v, "hello", {}),
}
_CASES = [
    # the constructor and init: a path is str or os.PathLike of str, env maps str to str
    *[("Splice(project)", v, "USAGE") for v in (b"p", 5, ["p"], _NumberPath(), "p\0q")],
    ("Splice(project)", "/" + _HUGE, "NOT_A_PROJECT"),
    # a lone surrogate no file name or environment can carry (a bare UnicodeEncodeError before)
    *[(c, "p\ud800", "USAGE") for c in ("Splice(project)", "Splice.init", "Splice(home)")],
    *[("Splice(env)", v, "USAGE") for v in ({"SPLICE_HOME": "/h\ud800"}, {"A\udfff": "1"})],
    *[("Splice.init", v, "USAGE") for v in (None, b"p", 5, _NumberPath(), "p\0q", _HUGE)],
    *[("Splice(home)", v, "USAGE") for v in (b"h", 5, "h\0")],
    *[("Splice(env)", v, "USAGE") for v in ("A=1", [("A", "1")], {"A": 1}, {1: "a"}, {"A": "\0"})],
    *[("Splice(reuse)", v, "USAGE") for v in (None, "yes", 1, _Hostile())],
    *[
        ("ReusePolicy", {field: v}, "USAGE")
        for field in ("max_calls", "idle_seconds", "max_memory_mb", "max_idle", "max_cpu_seconds")
        for v in (0, "1", True, _Hostile())
    ],
    ("Splice(on_progress)", "print", "USAGE"),
    # a broker answers call(request); a pool is a WarmPool (both failed only at the first call)
    *[("Splice(broker)", v, "USAGE") for v in (True, 0, "broker", _Hostile())],
    *[("Splice(pool)", v, "USAGE") for v in (True, "pool", 5, _Hostile())],
    *[
        ("WarmPool", {"idle_seconds": v}, "USAGE")
        for v in ("5", -1, 0, math.nan, math.inf, 10**400, True, _Hostile())
    ],
    *[("WarmPool", {"max_size": v}, "USAGE") for v in (0, "8", 1.5, True, _Hostile())],
    *[("install(frozen)", v, "USAGE") for v in ("no", 1, None)],
    # lists of names: one string is not a list of one-letter names; a bad item is its own code
    *[
        (m, v, "USAGE")
        for m in ("add", "remove", "outdated", "update")
        for v in (None, 5, "@a/b", b"@a/b", _Hostile())
    ],
    *[(m, [_Hostile()], "INVALID_NAME") for m in ("remove", "outdated", "update")],
    ("add", [_Hostile()], "INVALID_REF"),
    # one name
    *[
        (m, v, "INVALID_NAME")
        for m in ("check", "tools", "load")
        for v in (["@a/b"], {"@a/b"}, _Hostile())
    ],
    ("verify", _Hostile(), "INVALID_REF"),
    *[(m, v, "NOT_INSTALLED") for m in ("resolve_tool", "run") for v in (_Hostile(), ["x.y"])],
    *[(m, _HostileText("x.y"), "NOT_INSTALLED") for m in ("resolve_tool", "run")],
    *[(m, _HostileText("x"), "NOT_INSTALLED") for m in ("check", "tools", "load")],
    # what resolve_tool returned, not a name (an AttributeError before)
    *[("run_resolved", v, "USAGE") for v in ("@splice/example", None, _Hostile())],
]


@pytest.mark.parametrize(
    ("call", "value", "code"),
    _CASES,
    ids=[f"{c}-{type(v).__name__}-{n}" for n, (c, v, _) in enumerate(_CASES)],
)
def test_every_argument_of_a_wrong_kind_is_a_coded_error_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str, value: object, code: str
) -> None:
    """An embedding program's argument of any type is a SpliceError with a stable code (never a
    TypeError, or a hostile ``__str__``/``__hash__`` run to build a message), and nothing is
    written: not the project, not a directory named after the argument."""
    root = tmp_path / "project"
    Splice.init(root)
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(SpliceError) as caught:
        _CALLS[call](root, value)
    assert str(caught.value.code) == code, caught.value
    assert sorted(tmp_path.rglob("*")) == before


_MEGA = 1 << 20


@pytest.mark.parametrize(
    ("call", "value", "code"),
    [
        ("add", [f"@acme/x@^{'9' * _MEGA}"], "INVALID_RANGE"),
        ("verify", f"@acme/x@{'9' * _MEGA}", "INVALID_RANGE"),
        ("outdated", ["@acme/" + "a" * _MEGA], "INVALID_NAME"),
        ("check", "@acme/" + "a" * _MEGA, "INVALID_NAME"),
        ("run", "x" * _MEGA, "NOT_INSTALLED"),
        ("resolve_tool", "x" * _MEGA + ".y", "INVALID_REF"),
        # a version or range the registry (the embedded one) has nothing for
        ("add", [f"@splice/example@1.0.0-{'a' * _MEGA}"], "NO_MATCHING_VERSION"),
        ("verify", f"@splice/example@1.0.0-{'a' * _MEGA}", "PACKAGE_NOT_FOUND"),
    ],
    ids=["add", "verify", "outdated", "check", "run", "resolve_tool", "add-v", "verify-v"],
)
def test_a_huge_argument_is_quoted_cut_in_its_error(
    tmp_path: Path, call: str, value: object, code: str
) -> None:
    """A refused name, range or tool reference is quoted in the message: a caller's string of
    a megabyte was copied whole into the error (twice for a reference's range), and so into
    every log of it. It is cut at 256 characters, with its length."""
    root = tmp_path / "project"
    Splice.init(root)
    with pytest.raises(SpliceError) as caught:
        _CALLS[call](root, value)
    assert str(caught.value.code) == code
    assert len(json.dumps(caught.value.to_dict())) < 2000, caught.value.message[:100]
    assert " characters)" in caught.value.message


def test_a_nul_in_the_project_path_does_not_open_a_parent_project(tmp_path: Path) -> None:
    """``Path`` takes a NUL, every lookup of it fails, and the walk up would have opened the
    project above it: the argument is refused instead."""
    Splice.init(tmp_path)
    with pytest.raises(SpliceError) as caught:
        Splice(tmp_path / "sub\0dir")
    assert caught.value.code is ErrorCode.USAGE


def _children() -> set[int]:
    """The live (not zombie) direct children of this process."""
    me, found = os.getpid(), set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me and fields[0] != "Z":
                found.add(int(entry))
    return found


@pytest.mark.node
def test_first_calls_from_many_threads_share_one_runtime_and_close_ends_every_process(
    tmp_path: Path,
) -> None:
    """Threads making their first ``run`` at once share one runtime (one warm pool, one
    reuse pool): ``close()`` then ends every process they started. Each thread used to make
    a runtime of its own, and the processes of all but the last outlived ``close()``."""
    Splice.init(tmp_path / "project").add(["@splice/example"])
    before = _children()
    start = threading.Barrier(8)
    results: list[bool] = []

    with Splice(tmp_path / "project", reuse=True, broker=False) as splice:

        def call(n: int) -> None:
            start.wait()
            results.append(splice.run("example.hello", {"name": f"t{n}"}).ok)

        threads = [threading.Thread(target=call, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert results == [True] * 8
    assert _children() - before == set()


def test_add_refuses_one_package_named_with_two_ranges_and_writes_nothing(tmp_path: Path) -> None:
    """``add(["@a/b@1.0.0", "@a/b@^2.0.0"])`` let the last range win silently."""
    splice = Splice.init(tmp_path / "project")
    before = sorted((tmp_path / "project").rglob("*"))
    with pytest.raises(SpliceError) as caught:
        splice.add(["@splice/example@0.1.1", " @splice/example@^0.1.0"])
    assert caught.value.code is ErrorCode.USAGE
    assert caught.value.details == ("@splice/example: 0.1.1, ^0.1.0",)
    assert sorted((tmp_path / "project").rglob("*")) == before
    assert [r.name for r in splice.add(["@splice/example", "@splice/example"])] == [
        "@splice/example"
    ]


def _state(pid: int) -> str:
    """``/proc/<pid>/stat``'s state letter, ``-`` when the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return "-"


@pytest.mark.node
def test_a_forked_child_never_touches_the_parents_processes(tmp_path: Path) -> None:
    """A child of ``fork`` (multiprocessing, a daemonizing server) inherits the SDK with the
    parent's warm and kept processes. Its first call found them "exited" (``waitpid`` fails:
    they are not its children) and killed them, its ``close()`` (or exit) killed the rest,
    and its second call waited for ever for the pool's thread, which the child does not have
    (or for the SDK's lock, when another thread held it at the fork). Now the child starts and
    ends processes of its own; the parent's stay as they were."""
    Splice.init(tmp_path / "project").add(["@splice/example"])
    with Splice(tmp_path / "project", reuse=True, broker=False) as splice:
        assert splice.run("example.hello", {"name": "parent"}).ok
        runtime = splice._runtime_instance
        assert runtime is not None and runtime._pool is not None and runtime._reuse is not None
        runtime._pool.prewarm(next(iter(runtime._reuse._idle)), wait=True)
        parents = runtime._pool.idle_pids() + runtime._reuse.idle_pids()
        assert len(parents) == 2
        read, write = os.pipe()
        held, release = threading.Event(), threading.Event()

        def first_call_in_progress() -> None:  # another thread inside _runtime() at the fork
            with splice._runtime_lock:
                held.set()
                release.wait()

        holder = threading.Thread(target=first_call_in_progress)
        holder.start()
        held.wait()
        child = os.fork()
        if child == 0:  # pragma: no cover (the child's report is checked below)
            status = 1
            try:
                signal.alarm(30)  # the old code's second call never returned
                oks = [splice.run("example.hello", {"name": f"c{n}"}).ok for n in range(2)]
                mine = runtime._pool.idle_pids() + runtime._reuse.idle_pids()
                splice.close()
                os.write(write, json.dumps([oks, mine]).encode())
                status = 0
            finally:
                os._exit(status)
        release.set()
        holder.join()
        os.close(write)
        with os.fdopen(read, "rb") as report:
            answer = report.read()
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        oks, mine = json.loads(answer)
        assert oks == [True, True]
        assert mine and not set(mine) & set(parents)
        assert [_state(pid) for pid in parents] == ["S", "T"]  # waiting warm; kept, stopped
        assert splice.run("example.hello", {"name": "parent again"}).ok
        assert runtime._reuse.stats().reused == 1  # the kept process served it


def test_a_child_forked_during_another_threads_change_makes_its_own(tmp_path: Path) -> None:
    """A program forks (``multiprocessing``'s default start method on Linux) while another
    of its threads adds or installs: the graph's run lock (and the in-flight count's
    condition) that thread held were copied held into the child, where no thread would ever
    release them, and the child's first ``add`` waited for ever (6 forks of 6 hung, real SDK,
    the other thread adding in another project). The child's runs now have their own."""
    from splice_build.tasks import graph, loader

    held, release = threading.Event(), threading.Event()

    def change_in_progress() -> None:
        with graph._IN_PROCESS, loader.IN_FLIGHT._changed:
            held.set()
            release.wait()

    other = threading.Thread(target=change_in_progress)
    other.start()
    held.wait()
    try:
        child = os.fork()
        if child == 0:  # pragma: no cover (its exit status is checked below)
            status = 1
            try:
                signal.alarm(30)  # the old code never returned
                Splice.init(tmp_path / "child").add(["@splice/example"])
                status = 0
            finally:
                os._exit(status)
    finally:
        release.set()
        other.join()
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert [p["name"] for p in Splice(tmp_path / "child").list()] == ["@splice/example"]


def test_a_child_forked_during_the_first_capability_call_has_a_broker(tmp_path: Path) -> None:
    """The default broker is built on the first capability call, under a lock held through
    about 50 ms of imports. A program forking then (another thread's tool making its first
    ``ctx.capability`` call) copied the lock held into the child: every capability call of
    the child's tools waited for it, to the tool's timeout. The child's is a new lock."""
    import splice_build.broker.broker  # noqa: F401 (imported once here, not in the child)

    splice = Splice.init(tmp_path / "project")
    broker: Any = splice._broker
    with broker._lock:  # another thread's first call, building the broker
        child = os.fork()
        if child == 0:  # pragma: no cover (its exit status is checked below)
            status = 1
            try:
                signal.alarm(30)  # the old code never returned
                answer = broker.call({"capability": "no.such", "args": {}})
                status = 0 if answer["status"] == "ERROR" else 2
            finally:
                os._exit(status)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_every_call_on_a_removed_project_is_not_a_project_and_makes_nothing(
    tmp_path: Path,
) -> None:
    """A project removed while its ``Splice`` lives: ``run``, ``check``, ``load`` and
    ``resolve_tool`` answered NOT_INSTALLED ("no installed package provides"), ``tools`` and
    ``installed`` an empty list, and ``remove`` made the removed directory again to hold
    ``.splice/state.lock``. Every call is NOT_A_PROJECT now, and nothing is made."""
    root = tmp_path / "project"
    splice = Splice.init(root)
    splice.add(["@splice/example"])
    shutil.rmtree(root)
    calls: dict[str, Callable[[], object]] = {
        "run": lambda: splice.run("example.hello", {"name": "Ada"}),
        "resolve_tool": lambda: splice.resolve_tool("splice_example_hello"),
        "check": lambda: splice.check("@splice/example"),
        "load": lambda: splice.load("@splice/example"),
        "tools": splice.tools,
        "installed": splice.installed,
        "list": splice.list,
        "add": lambda: splice.add(["@splice/example"]),
        "install": splice.install,
        "remove": lambda: splice.remove(["@splice/example"]),
        "outdated": splice.outdated,
        "update": splice.update,
        "verify": lambda: splice.verify("@splice/example"),
    }
    codes = {}
    for name, call in calls.items():
        with pytest.raises(SpliceError) as caught:
            call()
        codes[name] = str(caught.value.code)
    assert codes == dict.fromkeys(calls, "NOT_A_PROJECT")
    assert not root.exists()


_IMPORT_DURING_A_FORK = """
import json, os, sys, threading
from splice_build.runtime import SpliceRuntime
from splice_build.skills import skills_root

assert "concurrent.futures.thread" not in sys.modules
failures = []
sys.unraisablehook = lambda hook: failures.append(repr(hook.exc_value))


def import_during_fork():  # another thread of the program, importing as a call forks
    import concurrent.futures.thread


os.register_at_fork(before=import_during_fork)
stop = threading.Event()
other = threading.Thread(target=stop.wait)
other.start()
runtime = SpliceRuntime(project_root=sys.argv[1])
ok = runtime.execute(runtime.load(skills_root() / "example"), "hello", {"name": "x"}).ok
stop.set()
other.join()
print(json.dumps([ok, failures]))
"""


@pytest.mark.node
def test_a_module_imported_while_a_call_forks_keeps_its_fork_lock_balanced(
    tmp_path: Path,
) -> None:
    """CPython runs the fork hooks registered when a fork begins before it and those
    registered when it ends after it: ``concurrent.futures.thread``, imported by an asyncio
    program's first ``to_thread`` while another thread's call forked its sandbox, had its
    lock released without having taken it (``RuntimeError: release unlocked lock`` in the
    program's ``to_thread``, about one run in three). A start now imports it first whenever
    other threads run; the import here happens inside the fork, deterministically."""
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_DURING_A_FORK, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert json.loads(done.stdout) == [True, []], done.stderr


def _pool_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name in ("splice-warm-pool", "splice-reuse")]


@pytest.mark.node
def test_a_splice_dropped_without_close_ends_its_processes_and_threads(tmp_path: Path) -> None:
    """A program making a ``Splice(reuse=True)`` per request and never closing it kept, for
    each one, the pool's thread for ever and its warm and kept processes until they expired
    (10 objects: 20 threads, 20 processes, 100 descriptors): the pools' threads hold the
    pools, so nothing was ever collected. The runtime now closes them when it is collected.
    ``close()`` twice is harmless, and a call after it runs in a process of its own."""
    Splice.init(tmp_path / "project").add(["@splice/example"])
    children, threads = _children(), _pool_threads()
    splice = Splice(tmp_path / "project", reuse=True, broker=False)
    assert splice.run("example.hello", {"name": "dropped"}).ok
    assert _children() - children and _pool_threads() != threads
    del splice
    gc.collect()
    assert _children() - children == set()
    assert _pool_threads() == threads
    closed = Splice(tmp_path / "project", reuse=True, broker=False)
    assert closed.run("example.hello", {"name": "before"}).ok
    closed.close()
    closed.close()
    assert closed.run("example.hello", {"name": "after"}).ok
    assert _children() - children == set()


@pytest.mark.node
def test_a_splice_closed_before_its_first_call_keeps_no_process(tmp_path: Path) -> None:
    """``close()`` before any call (a server shut down before its first request came, then
    answering a late one) closed nothing, as no runtime was made yet, and the first call
    made one keeping its processes: a ``reuse=True`` object kept 2 processes after close and
    a call, a ``pool=`` one 1. docs/sdk.md: a call after ``close()`` keeps none."""
    Splice.init(tmp_path / "project").add(["@splice/example"])
    children = _children()
    for options in ({"reuse": True}, {"pool": WarmPool()}):
        splice = Splice(tmp_path / "project", broker=False, **options)  # type: ignore[arg-type]
        splice.close()
        assert splice.run("example.hello", {"name": "late"}).ok
        assert _children() - children == set(), options
        splice.close()


def test_a_relative_home_is_the_one_named_when_the_splice_was_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Splice(project, home="relhome")`` kept the relative path: after the program's
    ``os.chdir`` its artifact cache, credentials and signing keys were read and written in
    another directory's ``relhome``."""
    (tmp_path / "made here").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "made here")
    splice = Splice.init(tmp_path / "project", home="relhome")
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert splice.home.path == tmp_path / "made here" / "relhome"
    splice.home.write_config({})
    assert not (tmp_path / "elsewhere" / "relhome").exists()


def test_a_removed_working_directory_is_a_coded_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host whose working directory was removed (a temporary directory cleaned up, a
    release directory replaced): ``Splice()``, a relative ``project``, ``home``,
    ``Splice.init`` directory or ``SPLICE_HOME`` raised a bare ``FileNotFoundError`` from
    ``os.path.abspath``. No project is found from a working directory that is gone
    (NOT_A_PROJECT); a relative path argument names nothing (USAGE), nor does such a
    ``SPLICE_HOME`` (INVALID_CONFIG, as its other faults). A project named by its absolute
    path still opens."""
    Splice.init(tmp_path / "project")
    (tmp_path / "gone").mkdir()
    monkeypatch.chdir(tmp_path / "gone")
    (tmp_path / "gone").rmdir()
    codes = {}
    for name, call in {
        "Splice()": lambda: Splice(),
        "project": lambda: Splice("project"),
        "home": lambda: Splice(tmp_path / "project", home="home"),
        "init": lambda: Splice.init("new"),
        "SPLICE_HOME": lambda: Splice(tmp_path / "project", env={"SPLICE_HOME": "home"}),
    }.items():
        with pytest.raises(SpliceError) as caught:
            call()
        codes[name] = str(caught.value.code)
    assert codes == {
        "Splice()": "NOT_A_PROJECT",
        "project": "USAGE",
        "home": "USAGE",
        "init": "USAGE",
        "SPLICE_HOME": "INVALID_CONFIG",
    }
    assert Splice(tmp_path / "project").list() == []


@pytest.mark.node
def test_a_project_path_switched_to_another_project_runs_in_the_new_one(tmp_path: Path) -> None:
    """``Splice("deploy/current")`` where ``current`` is a link switched to a new release of
    the project while the object lives: the package checked and run was the new release's,
    but its grant (``workspace``) was resolved against the first release, where the runtime
    had been rooted at the first call, so the tool wrote into the old project."""
    Splice.init(tmp_path / "rel1").add(["@splice/files"], accept_permissions=True)
    shutil.copytree(tmp_path / "rel1", tmp_path / "rel2", symlinks=True)
    current = tmp_path / "current"
    current.symlink_to("rel1")
    with Splice(current, broker=False) as splice:
        assert splice.run("files.write", {"path": "one.txt", "content": "1"}).ok
        current.unlink()
        current.symlink_to("rel2")
        assert splice.run("files.write", {"path": "two.txt", "content": "2"}).ok
    assert [p.name for p in (tmp_path / "rel1" / "workspace").iterdir()] == ["one.txt"]
    assert [p.name for p in (tmp_path / "rel2" / "workspace").iterdir()] == ["two.txt"]


def test_a_change_asked_from_a_callback_of_a_change_is_state_locked(tmp_path: Path) -> None:
    """A progress callback making another change (``add``, ``install``, ``remove``, through
    this ``Splice`` or another of the same project) waited for ever: the graph's in-process
    lock and the project's lock file were held by that very thread. Each is now STATE_LOCKED
    at once, and the change in progress completes."""
    root = tmp_path / "project"
    Splice.init(root)
    inner: dict[str, str] = {}
    others = {
        "add": lambda s: s.add(["@splice/json"]),
        "install": lambda s: s.install(),
        "remove": lambda s: s.remove(["@splice/example"]),
        "remove, another Splice": lambda s: Splice(root).remove(["@splice/example"]),
    }

    def progress(step: str, message: str) -> None:
        for name, change in others.items():
            if name not in inner:
                try:
                    change(splice)
                except SpliceError as exc:
                    inner[name] = str(exc.code)

    def hung(signum: int, frame: object) -> None:
        raise TimeoutError("the change from the callback waited for itself")

    splice = Splice(root, on_progress=progress)
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)  # the old code never returned
    try:
        assert [r.name for r in splice.add(["@splice/example"])] == ["@splice/example"]
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert inner == dict.fromkeys(others, "STATE_LOCKED")
    assert [row["status"] for row in splice.list()] == ["ok"]


def test_update_of_a_damaged_copy_is_updated_not_up_to_date(tmp_path: Path) -> None:
    """``update`` reinstalls the locked version when its installed copy no longer matches the
    lock; that is ``updated`` (``from`` = ``to``), as TS's ``updatePackages`` reports any
    install. It said ``up-to-date``, the status of a package left as it was."""
    from testing.crafted_registry import crafted_registry
    from testing.registry_fixtures import new_project

    project = new_project(tmp_path / "p")
    with crafted_registry(tmp_path / "work") as registry:
        registry.add_version("@acme/greeter", "1.0.0")
        registry.list_versions("@acme/greeter", ["1.0.0"])
        splice = Splice(project, registry=registry.url)
        splice.add(["@acme/greeter"])
        tool = project / ".splice/packages/@acme/greeter/tools/hello.js"
        tool.write_text("export default () => 'changed';\n", encoding="utf-8")
        (row,) = splice.update()
        assert (row["from"], row["to"], row["status"]) == ("1.0.0", "1.0.0", "updated")
        assert "changed" not in tool.read_text(encoding="utf-8")


def test_update_takes_the_install_options_by_name(tmp_path: Path) -> None:
    """A wrong signature is Python's ``TypeError`` naming the public method, as for ``add``
    and ``install`` (``update(foo=1)`` named a private class, ``InstallOptions.__init__``);
    a wrong value of a known option is ``USAGE``. Nothing is asked of a registry."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "splice.json").write_text('{"specVersion": 1, "packages": {}}\n', encoding="utf-8")
    splice = Splice(project)
    for method in (splice.add, splice.install, splice.update):
        with pytest.raises(TypeError) as caught:
            method(foo=1)  # type: ignore[operator]
        assert str(caught.value).startswith(f"Splice.{method.__name__}() got an unexpected")
    with pytest.raises(SpliceError) as refused:
        splice.update(require_signed="no")  # type: ignore[arg-type]
    assert refused.value.code is ErrorCode.USAGE


def _waiting_package(tmp_path: Path, code: str, capabilities: Sequence[str] = ()) -> Splice:
    """A project with @acme/greeter installed, its ``hello`` tool ``code`` (a 60 s timeout, a
    write grant on ``out``, and ``capabilities``)."""
    from testing.registry_fixtures import embedded_store, publish

    tool = {
        "name": "hello",
        "description": "Waits.",
        "entry": "tools/hello.js",
        "timeoutMs": 60_000,
        "input": {"type": "object"},
    }
    publish(
        embedded_store(Path(os.environ["SPLICE_HOME"])),
        tmp_path / "work",
        permissions={
            "fs": {"read": [], "write": ["out"]},
            "network": [],
            "env": [],
            "capabilities": list(capabilities),
        },
        files={"tools/hello.js": code},
        manifest={"tools": [tool]},
    )
    splice = Splice.init(tmp_path / "project", registry="embedded", broker=False)
    splice.add(["@acme/greeter"], accept_permissions=True)
    return splice


@pytest.mark.node
def test_the_isolation_setting_is_read_from_the_home_the_splice_was_given(
    tmp_path: Path,
) -> None:
    """``Splice(home=...)`` read the registry and credentials from that home but the
    ``isolation`` setting from ``SPLICE_HOME``'s ``config.json``: a host giving its own home
    with ``"require-os"`` ran tools without the OS layer where it was missing instead of
    being refused. A value there that is no mode is now INVALID_CONFIG before any tool runs,
    and ``"in-process"`` there is the layer that runs."""
    from splice_build.project.home import SpliceHome

    given = SpliceHome(tmp_path / "given-home")
    Splice.init(tmp_path / "project", home=given.path).add(["@splice/example"])
    given.write_config({"isolation": "no-such-mode"})
    with pytest.raises(SpliceError) as refused:
        Splice(tmp_path / "project", home=given.path).run("example.hello", {"name": "Ada"})
    assert refused.value.code is ErrorCode.INVALID_CONFIG
    assert refused.value.message.startswith(str(given.config_file))
    given.write_config({"isolation": "in-process"})
    result = Splice(tmp_path / "project", home=given.path).run("example.hello", {"name": "Ada"})
    assert result.isolation is not None and result.isolation.to_json()["layer"] == "in-process"


_DAEMON = """
import json, os, signal, sys, time
from pathlib import Path
from splice_build.sdk import Splice

class Broker:  # answers 3 MiB once the tool is busy, so the answer fills the pipe
    def call(self, request):
        while not Path(sys.argv[1], "out", "busy").exists():
            time.sleep(0.005)
        return {"status": "LIVE", "capability": "web.search", "data": {"blob": "x" * 3145728}}

signal.signal(signal.SIGPIPE, signal.SIG_DFL)
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # before the first call's isolation probe
for fd in (0, 1, 2):
    os.close(fd)
splice = Splice(sys.argv[1], home=sys.argv[2], broker=Broker())
results = [splice.run("greeter.hello", {}).to_json()]
child = os.fork()
if child == 0:
    sys.exit(0)  # a normal exit: atexit handlers run
while os.path.exists(f"/proc/{child}"):  # no waitpid: the kernel reaps it (SIG_IGN)
    time.sleep(0.005)
results.append(splice.run("greeter.hello", {}).to_json())
results.append(splice.run("greeter.hello", {"busy": True}).to_json())
results.append(splice.run("greeter.hello", {"never": True}).to_json())
with open(sys.argv[3], "w", encoding="utf-8") as f:
    json.dump([(r["ok"], r.get("output"), r.get("error", {}).get("code")) for r in results], f)
    f.write("\\n" + results[-1]["error"]["message"])
"""

_BUSY_OR_HELLO = """import { writeFileSync } from "node:fs";
export default function hello(input, ctx) {
  if (input.never) return new Promise(() => {});  // Node exits 13: nothing can settle it
  if (!input.busy) return { message: "Hello." };
  ctx.capability("web.search", { query: "q" }).catch(() => {});
  writeFileSync(`${ctx.paths.project}/out/busy`, "");
  for (const start = Date.now(); Date.now() - start < 300; );  // the host reads nothing
  return { message: "returned" };  // the host exits: the rest of the answer has no reader
}
"""


@pytest.mark.node
def test_a_daemon_with_its_own_process_state_runs_tools_and_survives_them(
    tmp_path: Path,
) -> None:
    """A daemon embedding the SDK, each of its states once in one process:

    - its 0, 1 and 2 closed: the job pipe was made as 0 and 1, which the child's /dev/null
      stdin and log pipe replaced before exec, and every call was TOOL_CRASHED; the
      sandbox's pipes are numbered above 2 now;
    - without a file view (here in-process), a child of ``fork`` that exited normally
      removed the parent's empty working directory (its copy of the parent's ``atexit``),
      and every later call of the parent was TOOL_CRASHED; each process makes its own;
    - SIGPIPE at SIG_DFL: a tool whose host exited while a 3 MiB capability answer was
      still being written to it killed the program (exit 141); that write is EPIPE now,
      and the call ends as the tool did;
    - SIGCHLD ignored (the kernel reaps its children): the isolation probe's ``waitpid``
      raised ECHILD and every call was TOOL_CRASHED ("No child processes"); a probe's
      answer comes from its pipe now, and a tool that ends without a result is TOOL_CRASHED
      saying its exit status is unknown (Popen's made-up 0 was reported)."""
    from splice_build.project.home import SpliceHome
    from testing.projects import run_python

    splice = _waiting_package(tmp_path, _BUSY_OR_HELLO, capabilities=["web.search"])
    home = SpliceHome(Path(os.environ["SPLICE_HOME"]))  # the one the package was added with
    home.write_config({"isolation": "in-process"})
    answer = tmp_path / "answer.json"
    done = run_python(_DAEMON, str(splice.project_root), str(home.path), str(answer))
    assert done.returncode == 0
    hello = [True, {"message": "Hello."}, None]
    codes, message = answer.read_text(encoding="utf-8").split("\n")
    assert json.loads(codes) == [
        hello,
        hello,
        [True, {"message": "returned"}, None],
        [False, None, "TOOL_CRASHED"],
    ]
    assert "exit status is unknown: this program ignores SIGCHLD" in message


_WAITS_FOR_RELEASE = """import { existsSync, writeFileSync } from "node:fs";
export default async function hello(input, ctx) {
  const out = `${ctx.paths.project}/out`;
  writeFileSync(`${out}/started`, "");
  while (!existsSync(`${out}/release`)) await new Promise((wake) => setTimeout(wake, 5));
  return { released: true };
}
"""


def _status(pid: int) -> dict[str, str]:
    """``/proc/<pid>/status`` by field ({} once the process is gone or a zombie)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    except OSError:
        return {}
    fields = dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)
    return {} if fields.get("State", "").startswith("Z") else fields


@pytest.mark.node
@needs_os_layer()
def test_host_signals_never_run_in_the_sandbox_and_a_cancelled_run_async_ends_it(
    tmp_path: Path,
) -> None:
    """Two ways a long-lived host lost hold of a running tool (one package, two calls).

    With the OS layer the started process (C1) is a copy of the program, never exec'd, that
    waits for Node in the new namespaces. A signal the program handles in Python (a host's
    SIGUSR1, SIGHUP or SIGTERM handler; ``pkill -f`` matches C1's command line) ran that
    handler in C1, inside the sandbox's mount view with its user namespace's capabilities,
    and ended the call (here ``os._exit(42)``: TOOL_CRASHED, exit code 42). C1 now blocks
    every signal: the signal stays pending and the call succeeds.

    An asyncio program cancelling the task that awaits a call (a user's stop, a ``wait_for``
    timeout): with ``await asyncio.to_thread(splice.run, ...)`` the tool went on running in
    its sandbox, grants and network included, until its own timeout (60 s here), and
    ``asyncio.run`` waited for it at its end. ``run_async`` ends the process: when
    ``CancelledError`` reaches the program no child of it is left."""
    import asyncio

    splice = _waiting_package(tmp_path, _WAITS_FOR_RELEASE)
    out, host = tmp_path / "project" / "out", os.getpid()

    def handler(signum: int, frame: object) -> None:
        if os.getpid() != host:
            os._exit(42)

    def poke() -> None:
        while not (out / "started").exists():
            threading.Event().wait(0.005)
        (waiter,) = [p for p in _children() if _status(p).get("Name") == "splice-ns-wait"]
        os.kill(waiter, signal.SIGUSR1)
        usr1 = 1 << (signal.SIGUSR1 - 1)
        while (fields := _status(waiter)) and not int(fields["ShdPnd"], 16) & usr1:
            threading.Event().wait(0.005)
        (out / "release").write_text("", encoding="utf-8")

    previous = signal.signal(signal.SIGUSR1, handler)
    poker = threading.Thread(target=poke)
    poker.start()
    try:
        result = splice.run("greeter.hello", {})  # from the main thread, whose handlers run
    finally:
        poker.join()
        signal.signal(signal.SIGUSR1, previous)
    assert result.error is None
    assert result.output == {"released": True}

    (out / "started").unlink()
    (out / "release").unlink()
    before = _children()

    async def main() -> tuple[bool, set[int], set[int]]:
        call = asyncio.ensure_future(splice.run_async("greeter.hello", {}))
        while not (out / "started").exists() and not call.done():
            await asyncio.sleep(0.01)
        running = call.done(), _children() - before
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        return *running, _children() - before

    done, running, left = asyncio.run(main())
    assert not done and running
    assert left == set()


# Set: the fork hook ``_thread_in_child`` starts a thread in every child of ``fork``, as
# OpenTelemetry's and Logfire's batch processors do. Registered once, inert while clear.
_HOOK_THREADS = threading.Event()
_HOOKED: list[bool] = []


def _thread_in_child() -> None:
    if _HOOK_THREADS.is_set():
        threading.Thread(target=threading.Event().wait, daemon=True).start()


@pytest.mark.node
@needs_os_layer()
def test_a_program_whose_fork_hooks_start_threads_keeps_the_os_layer(tmp_path: Path) -> None:
    """Python runs a program's ``os.register_at_fork`` hooks in the sandbox's first child
    and in the isolation probe's; a hook that starts a thread (a telemetry exporter's worker)
    made that child multi-threaded, and ``unshare`` of a user namespace refused it (EINVAL):
    the probe reported the namespaces as refused by the kernel and every call ran without
    the OS layer ("layer": "in-process", "network": "host", no file view). Such a child now
    forks once more with libc alone: the probe passes, the call runs with the OS layer, and
    no process is left after it."""
    from splice_build.runtime.isolation import support

    Splice.init(tmp_path / "project").add(["@splice/example"])
    if not _HOOKED:
        os.register_at_fork(after_in_child=_thread_in_child)
        _HOOKED.append(True)
    before = _children()
    _HOOK_THREADS.set()
    try:
        support.detect.cache_clear()
        probed = support.detect()
        result = Splice(tmp_path / "project").run("example.hello", {"name": "Ada"})
    finally:
        _HOOK_THREADS.clear()
        support.detect.cache_clear()
    assert (probed.namespaces, probed.namespaces_reason) == (True, None)
    assert result.error is None and result.isolation is not None
    assert result.isolation.to_json()["layer"] == "os"
    assert _children() - before == set()


def _descriptors_past(count: int) -> bool:
    """Whether the hard RLIMIT_NOFILE lets this process hold ``count`` descriptors."""
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return hard == resource.RLIM_INFINITY or hard >= count


@pytest.mark.node
@needs_os_layer()
@pytest.mark.skipif(
    not _descriptors_past(1100), reason="RLIMIT_NOFILE's hard limit allows no descriptor past 1023"
)
def test_the_hosts_process_state_never_fails_a_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long-lived program's process state, one call under each:

    - more than 1,023 descriptors open (a server holding a thousand sockets, its
      RLIMIT_NOFILE raised): the sandbox's pidfds were numbered past what ``select`` takes,
      every call raised ``ValueError: filedescriptor out of range in select()`` out of
      ``run`` and left its pipes and pidfds open (6 descriptors a call); the waits poll now;
    - ``os.umask(0o777)``: the file view, built in a copy of the program between fork and
      exec, made its mount points mode 000 and Node, without capabilities, could not load
      its libraries (TOOL_CRASHED, exit code 127); they are made under umask 022 now;
    - a soft RLIMIT_NOFILE barely above the descriptors the program holds (``ulimit -n
      64``): the view ran out of descriptors, skipped the mount points it could not open
      and Node was missing from it (TOOL_CRASHED, "No such file or directory"); the view's
      process raises its soft limit to the hard one first;
    - a ``select`` module monkey-patched by a green-thread library (eventlet deletes
      ``select.poll`` and ``epoll``; its ``select.select`` is its own): the check of a kept
      process before it served again called ``select.poll`` and raised AttributeError out of
      ``run``, the kept process lost from the pool; Splice waits with ``select`` there.

    The program's umask and limits are left as they were."""
    import resource
    import select

    Splice.init(tmp_path / "project").add(["@splice/example"])
    splice = Splice(tmp_path / "project", broker=False)
    limits = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(limits[0], 1100), limits[1]))
    held = [os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)]
    try:
        while held[-1] < 1030:
            held.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
        before = len(os.listdir("/proc/self/fd"))
        results = [splice.run("example.hello", {"name": "descriptors"})]
        leaked = len(os.listdir("/proc/self/fd")) - before
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, limits)
    umask = os.umask(0o777)
    try:
        results.append(splice.run("example.hello", {"name": "umask"}))
    finally:
        assert os.umask(umask) == 0o777
    soft = _limit_leaving_free(24)  # the call's own pipes fit; the view needs about 60
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, limits[1]))
    try:
        results.append(splice.run("example.hello", {"name": "limit"}))
    finally:
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == soft
        resource.setrlimit(resource.RLIMIT_NOFILE, limits)
    real, seen = select.select, []

    def green_select(*args: Any) -> Any:
        seen.append(len(args[0]))
        return real(*args)

    before = _children()
    with Splice(tmp_path / "project", reuse=True, broker=False) as reusing:
        monkeypatch.delattr(select, "poll")
        monkeypatch.delattr(select, "epoll")
        monkeypatch.setattr(select, "select", green_select)
        results += [reusing.run("example.hello", {"name": f"green {n}"}) for n in range(2)]
        runtime = reusing._runtime_instance
        assert runtime is not None and runtime._reuse is not None
        reused = runtime._reuse.stats().reused
    assert leaked == 0
    assert [(r.error, r.output) for r in results] == [
        (None, {"message": "Hello, descriptors."}),
        (None, {"message": "Hello, umask."}),
        (None, {"message": "Hello, limit."}),
        (None, {"message": "Hello, green 0."}),
        (None, {"message": "Hello, green 1."}),
    ]
    assert reused == 1 and seen
    assert _children() - before == set()


@pytest.mark.node
def test_a_keyboard_interrupt_anywhere_in_a_start_ends_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """^C in a program running ``run`` from its main thread (a notebook's interrupt, a REPL)
    raises KeyboardInterrupt between any two statements. Landing after the sandbox process
    was created and before the code that ends it on any exception (taking its pidfds,
    re-hashing the package, watching the call's cancellation), it left Node and its waiter
    running for ever, waiting for a job on a pipe whose write end the program kept open
    (8 descriptors and two processes a time); landing after its pipes were made and before
    the process was (the fork hooks' imports), it left their 6 ends open. Each such point is
    walked here: the interrupt goes on, and no process or descriptor is left."""
    from splice_build import cancel
    from splice_build.runtime import runtime, sandbox

    Splice.init(tmp_path / "project").add(["@splice/example"])
    splice = Splice(tmp_path / "project", broker=False)
    assert splice.run("example.hello", {"name": "Ada"}).error is None
    children, descriptors = _children(), len(os.listdir("/proc/self/fd"))
    left = {}
    for owner, name in (
        (sandbox, "settle_fork_hooks"),
        (sandbox, "_leader_pidfd"),
        (runtime, "_check_bound"),
        (cancel.Cancellation, "watch"),
    ):

        def interrupted(*args: object) -> None:
            raise KeyboardInterrupt

        with monkeypatch.context() as patched:
            patched.setattr(owner, name, interrupted)
            with pytest.raises(KeyboardInterrupt):
                splice.run("example.hello", {"name": "Ada"})
        left[name] = (_children() - children, len(os.listdir("/proc/self/fd")) - descriptors)
    points = ["settle_fork_hooks", "_leader_pidfd", "_check_bound", "watch"]
    assert left == dict.fromkeys(points, (set(), 0))


def _limit_leaving_free(free: int) -> int:
    """The soft RLIMIT_NOFILE under which this process can open exactly ``free`` more
    descriptors (a new one takes the lowest free number, which must be below the limit)."""
    taken = {int(fd) for fd in os.listdir("/proc/self/fd")}
    limit = 0
    while free:
        free -= limit not in taken
        limit += 1
    return limit


@pytest.mark.node
def test_permissions_not_accepted_names_the_sdks_argument(tmp_path: Path) -> None:
    """The refusal's hint named only the CLI's ``--accept-permissions``, which an SDK call
    cannot take."""
    splice = Splice.init(tmp_path / "project")
    with pytest.raises(SpliceError) as refused:
        splice.add(["@splice/files"])
    assert refused.value.code is ErrorCode.PERMISSIONS_NOT_ACCEPTED
    assert "accept_permissions=True" in (refused.value.hint or "")
    # the CLI (hints="cli") names its flag alone: it said the SDK's argument too
    with pytest.raises(SpliceError) as told_the_cli:
        Splice(tmp_path / "project", hints="cli").add(["@splice/files"])
    assert told_the_cli.value.hint == "Review them, then re-run with --accept-permissions."


def test_an_errors_hint_names_the_sdk_call_beside_the_command(tmp_path: Path) -> None:
    """Hints name the command to run next (`splice install`), which a program calling the
    SDK has no use for; the CLI and the MCP server keep them as written (hints="cli")."""
    with pytest.raises(SpliceError) as missing:
        Splice(tmp_path)
    assert missing.value.code is ErrorCode.NOT_A_PROJECT
    assert missing.value.hint == 'Run `splice init` (Python SDK: `Splice.init(".")`) to create one.'
    with pytest.raises(SpliceError) as as_written:
        Splice(tmp_path, hints="cli")
    assert as_written.value.hint == "Run `splice init` to create one."
    splice = Splice.init(tmp_path / "project")
    splice.add(["@splice/example"])
    (splice.layout.root / ".splice/packages/@splice/example/splice.package.json").write_text("{}")
    with pytest.raises(SpliceError) as modified:
        splice.run("example.hello", {})
    assert modified.value.code is ErrorCode.INSTALLED_PACKAGE_MODIFIED
    # Told once, though resolve_tool's error passes through run as well.
    assert modified.value.hint == (
        "Run `splice install` (Python SDK: `Splice.install()`) to restore the verified copy."
    )
    with pytest.raises(SpliceError) as usage:
        Splice(tmp_path / "project", hints="people")  # type: ignore[arg-type]
    assert usage.value.code is ErrorCode.USAGE


def test_a_name_without_its_at_sign_or_namespace_hints_the_whole_name(tmp_path: Path) -> None:
    """The CLI said "Did you mean @splice/files?"; the SDK's calls gave the message alone."""
    splice = Splice.init(tmp_path / "project")
    for call, hint in (
        (lambda: splice.add(["splice/files@^0.1.0"]), "Did you mean @splice/files?"),
        (lambda: splice.remove(["splice/files"]), "Did you mean @splice/files?"),
        (
            lambda: splice.update(["files"]),
            "Names are @namespace/name: `splice search files` finds it.",
        ),
        (lambda: splice.outdated(["splice/files"]), "Did you mean @splice/files?"),
        (lambda: splice.verify("splice/files@0.1.0"), "Did you mean @splice/files?"),
    ):
        with pytest.raises(SpliceError) as refused:
            call()
        assert (refused.value.code, refused.value.hint) == (ErrorCode.INVALID_NAME, hint)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_init_where_no_directory_can_be_made_is_a_coded_error() -> None:
    # /proc answers ENOENT to a mkdir in it: Splice.init raised FileNotFoundError bare (the
    # CLI's init an INTERNAL_ERROR with a crash report), where every SDK failure is coded.
    with pytest.raises(SpliceError) as refused:
        Splice.init("/proc/splice-project")
    assert refused.value.code is ErrorCode.USAGE
    assert refused.value.message == (
        "project directory /proc/splice-project cannot be created: No such file or directory"
    )


def test_a_range_no_version_matches_hints_the_call_taking_one(tmp_path: Path) -> None:
    """NO_MATCHING_VERSION had no hint (add, sync, info), and verify's not even the versions
    there are; each now names what to type with one of them, the SDK call beside it."""
    splice = Splice.init(tmp_path / "project")
    for call, told in (
        (
            lambda: splice.add(["@splice/example@^9.0.0"]),
            'Splice.add(["@splice/example@<version>"])',
        ),
        (
            lambda: splice.verify("@splice/example@^9.0.0"),
            'Splice.verify("@splice/example@<version>")',
        ),
    ):
        with pytest.raises(SpliceError) as none:
            call()
        assert none.value.code is ErrorCode.NO_MATCHING_VERSION
        assert none.value.details[0].startswith("available: 0.")
        assert f"(Python SDK: `{told}`)" in (none.value.hint or "")


@pytest.mark.parametrize(
    ("hint", "told"),
    [
        (
            "Install another (`splice add @a/b@<version>`) or `splice remove @a/b`.",
            'Install another (`splice add @a/b@<version>` (Python SDK: `Splice.add(["@a/b@<version>"])`))'
            ' or `splice remove @a/b` (Python SDK: `Splice.remove(["@a/b"])`).',
        ),
        (
            "Run `splice add @a/b --accept-permissions` to grant them.",
            'Run `splice add @a/b --accept-permissions` (Python SDK: `Splice.add(["@a/b"], '
            "accept_permissions=True)`) to grant them.",
        ),
        ("Run `splice update`.", "Run `splice update` (Python SDK: `Splice.update()`)."),
        (
            "Review them, then re-run with --accept-permissions.",
            "Review them, then re-run with --accept-permissions (Python SDK: "
            "`accept_permissions=True`).",
        ),
        (
            "`splice sign` it; --allow-signer-change installs it.",
            "`splice sign` it; --allow-signer-change (Python SDK: `allow_signer_change=True`) "
            "installs it.",
        ),
        ("Re-run with --no-such.", "Re-run with --no-such."),
        # No SDK call for these: as written.
        ("`splice info @a/b` shows its versions.", "`splice info @a/b` shows its versions."),
        ("Run `splice install --no-such`.", "Run `splice install --no-such`."),
        ("Run `splice list @a/b`.", "Run `splice list @a/b`."),
    ],
)
def test_the_sdk_call_said_for_each_command(hint: str, told: str) -> None:
    from splice_build.sdk_hints import said_to_the_sdk

    error = SpliceError(ErrorCode.USAGE, "m", hint=hint)
    said_to_the_sdk(error)
    assert error.hint == told


def test_the_package_itself_names_the_sdk() -> None:
    # `from splice_build import Splice` was an ImportError: only splice_build.sdk had it.
    import splice_build
    from splice_build import ErrorCode as Code
    from splice_build import Splice as Sdk
    from splice_build import SpliceError as Error

    assert (Sdk, Error, Code) == (Splice, SpliceError, ErrorCode)
    with pytest.raises(AttributeError):
        splice_build.Nope  # noqa: B018
    # Importing the package (every command does) loads no SDK.
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, splice_build; print('splice_build.sdk' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == "False\n"


def test_tools_load_and_check_take_the_short_name_of_one_installed_package(
    tmp_path: Path,
) -> None:
    # tools("example") and load("example") were INVALID_NAME; the TypeScript SDK takes
    # "@ns/name or unambiguous short name" for both. check("example"), which both call, was
    # INVALID_NAME still.
    splice = Splice.init(tmp_path / "project")
    splice.add(["@splice/example"])
    assert [t["name"] for t in splice.tools("example")] == ["example.hello", "example.stats"]
    assert splice.load("example").id == "@splice/example"
    assert splice.check("example").id == "@splice/example"
    # run() of the package alone named no tool of it: "Run `splice list` …" only
    for package in ("example", "@splice/example"):
        with pytest.raises(SpliceError) as toolless:
            splice.run(package, {})
        assert toolless.value.code is ErrorCode.NOT_INSTALLED
        tools = f"{package}.hello, {package}.stats"
        assert toolless.value.hint == f"{package} is a package: name one of its tools, {tools}."
    with pytest.raises(SpliceError) as missing:
        splice.tools("exampel")
    assert missing.value.code is ErrorCode.NOT_INSTALLED
    assert (missing.value.hint or "").startswith("Did you mean example? ")


def test_a_splices_repr_names_its_project_and_no_secret(tmp_path: Path) -> None:
    # repr was '<splice_build.sdk.Splice object at 0x…>'; env and the registry stay out of it.
    Splice.init(tmp_path)
    splice = Splice(tmp_path, env={"SPLICE_TOKEN": "sekrit"}, registry="http://u:pw@127.0.0.1:1")
    assert repr(splice) == f"Splice(project={str(tmp_path)!r})"


def test_an_sdk_error_is_read_back_from_another_process(tmp_path: Path) -> None:
    # pickle rebuilt an error by calling its class with the message alone, which no
    # SpliceError takes: one raised in a ProcessPoolExecutor worker broke the pool
    # (BrokenProcessPool for that call and every later one).
    import pickle

    from splice_build.errors import UsageError
    from splice_build.registry.service.status import RetryLaterError
    from splice_build.security.net_errors import NetworkDenied

    with pytest.raises(SpliceError) as raised:
        Splice(tmp_path)
    made = [
        raised.value,
        UsageError("u", details=["d"], hint="h"),
        NetworkDenied("m", "not-public", host="h"),
        RetryLaterError(ErrorCode.RATE_LIMITED, "m", retry_after=3),
    ]
    for error in made:
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error) and vars(back) == vars(error)
        assert (back.args, back.to_dict()) == (error.args, error.to_dict())
    assert made[0].code is ErrorCode.NOT_A_PROJECT and "Splice.init" in (made[0].hint or "")
