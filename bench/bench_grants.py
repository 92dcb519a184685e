"""What the grant checks cost in a large git repository and a monorepo (spec/project_state.py,
project_below.py, git_links.py, linked_state.py).

Two places a user works in, each built once:

- ``repo``: a project that is a git repository whose index lists 50,000 files and three
  submodules (``vendor/sub*``, not checked out), with ``src/`` holding 20,000 of those
  files on disk (2,111 directories); ``@acme/greeter`` installed, granted ``fs.read`` and
  ``fs.write`` of ``src``;
- ``monorepo``: a workspace of ``MEMBERS`` members below one git repository (the same
  index), each member with ``@acme/greeter`` granted its own ``src`` (``MEMBER_FILES``
  files each).

Each command is timed in both and in a ``small`` project (``@acme/greeter`` granted an
empty ``src``, no repository), the baseline measured in the same rounds: cold ``splice
run`` of the installed tool, no-op ``splice sync``, ``splice sync --check`` and ``splice
install``, the server CPU of one ``tools/call`` of ``splice mcp`` (fresh process per call,
and ``--reuse``) and one ``Splice.run`` of the SDK in a process of its own. Whole-process
rows give the CPU time (user + system of the process and its children), which a shared
machine distorts least. ``SPLICE_BENCH_BEFORE=<older checkout>`` times each command of the
large places with that checkout first on ``PYTHONPATH`` too, in the same rounds, on places
and a SPLICE_HOME of its own built alike.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.bench_mcp import _server_cpu_ms, _StdioClient
from bench.bench_sync import _wall_and_cpu
from bench.common import REPO, Row, median, precompile

SRC_FILES, INDEX_FILES, SUBMODULES = 20_000, 50_000, 3
MEMBERS, MEMBER_FILES = 10, 500
GRANT = {"fs": {"read": ["src"], "write": ["src"]}, "network": [], "env": []}
TOOL = "acme_greeter_hello"
_SDK = """
import sys, time
from pathlib import Path
from splice_build.sdk import Splice
calls = int(sys.argv[1])
with Splice(Path.cwd()) as splice:
    splice.run("greeter.hello", {"name": "x"})
    cpu = time.process_time()
    for _ in range(calls):
        assert splice.run("greeter.hello", {"name": "x"}).ok
    print((time.process_time() - cpu) / calls)
"""


def _files(top: Path, count: int) -> list[str]:
    """``count`` small files below ``top``, ten a directory, ten directories a level."""
    made: list[str] = []
    for number in range((count + 9) // 10):
        parts, n = [], number
        while True:
            parts.append(f"d{n % 10}")
            n //= 10
            if n == 0:
                break
        directory = top.joinpath(*parts)
        directory.mkdir(parents=True, exist_ok=True)
        for f in range(min(10, count - len(made))):
            (directory / f"f{f}.py").write_bytes(b"x\n")
            made.append(str(directory / f"f{f}.py"))
    return made


def _git_index(root: Path, files: list[str]) -> None:
    """A repository at ``root`` whose index lists ``files`` and more up to ``INDEX_FILES``,
    and ``SUBMODULES`` submodules."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], input=b"x\n", cwd=root, capture_output=True
    ).stdout.decode()
    names = [os.path.relpath(f, root) for f in files]
    names += [f"lib/m{i // 100}/f{i % 100}.py" for i in range(INDEX_FILES - len(names))]
    lines = [f"100644 {blob.strip()}\t{name}" for name in names]
    lines += [f"160000 {'1' * 40}\tvendor/sub{i}" for i in range(SUBMODULES)]
    info = ("\n".join(lines) + "\n").encode()
    subprocess.run(["git", "update-index", "--index-info"], input=info, cwd=root, check=True)


def _places(base: Path, env: dict[str, str]) -> dict[str, Path]:
    """The small project, the large repository and the monorepo, each installed."""
    from testing.registry_fixtures import embedded_store, publish
    from testing.workspaces import make_workspace

    publish(embedded_store(Path(env["SPLICE_HOME"])), base / "work", permissions=GRANT)
    small, repo, mono = base / "small", base / "repo", base / "mono"
    (small / "src").mkdir(parents=True)
    _git_index(repo, _files(repo / "src", SRC_FILES))
    members = make_workspace(mono, MEMBERS, ["@acme/greeter"], 0)
    _git_index(mono, [f for m in members for f in _files(m / "src", MEMBER_FILES)])
    for project in (small, repo, *members):
        if not (project / "splice.json").exists():
            _cli(env, project, "init")
        _cli(env, project, "add", "@acme/greeter", "--accept-permissions")
    _cli(env, mono, "sync")
    # listings are remembered only once their directories are older than RECENT_NS
    time.sleep(2.5)
    return {"small": small, "repo": repo, "monorepo": members[0]}


def _cli(env: dict[str, str], cwd: Path, *args: str) -> None:
    argv = [sys.executable, "-m", "splice_build", *args]
    subprocess.run(argv, cwd=cwd, env=env, check=True, capture_output=True)


def _mcp_cpu(env: dict[str, str], project: Path, calls: int, *options: str) -> float:
    """The server's own CPU per ``tools/call`` (after one untimed call), in seconds."""
    argv = [sys.executable, "-m", "splice_build", "mcp", *options]
    client = _StdioClient(argv, env=env, cwd=project)
    try:
        client.call("initialize", {"protocolVersion": "2025-11-25"})
        hello = {"name": TOOL, "arguments": {"name": "x"}}
        client.call("tools/call", hello)
        before = _server_cpu_ms(client._process.pid)
        for _ in range(calls):
            client.call("tools/call", hello)
        return (_server_cpu_ms(client._process.pid) - before) / calls / 1000
    finally:
        client.close()


def _sdk_cpu(env: dict[str, str], project: Path, calls: int) -> float:
    done = subprocess.run(
        [sys.executable, "-c", _SDK, str(calls)],
        cwd=project,
        env=env,
        capture_output=True,
        check=True,
        text=True,
    )
    return float(done.stdout.split()[-1])


def _commands(calls: int) -> dict[str, Callable[[dict[str, str], Path], float]]:
    """Each measured command: its CPU seconds in a place, with an environment."""

    def whole(*args: str) -> Callable[[dict[str, str], Path], float]:
        argv = [sys.executable, "-m", "splice_build", *args]
        return lambda env, cwd: _wall_and_cpu(argv, cwd, env)[1]

    return {
        "cold splice run (installed)": whole("run", "greeter.hello", "name=x"),
        "no-op splice sync": whole("sync"),
        "splice sync --check": whole("sync", "--check"),
        "no-op splice install": whole("install"),
        "splice mcp, server CPU per call": lambda env, cwd: _mcp_cpu(env, cwd, calls),
        "splice mcp --reuse, server CPU per call": lambda env, cwd: _mcp_cpu(
            env, cwd, calls, "--reuse"
        ),
        "Splice.run, CPU per call": lambda env, cwd: _sdk_cpu(env, cwd, calls),
    }


def run(quick: bool = False) -> list[Row]:
    precompile()
    rounds, calls = (3, 5) if quick else (9, 20)
    trees = {"this tree": str(REPO)}
    if os.environ.get("SPLICE_BENCH_BEFORE"):
        trees["before"] = os.environ["SPLICE_BENCH_BEFORE"]
        precompile(Path(trees["before"]))
    with tempfile.TemporaryDirectory(prefix="bench-grants-") as tmp:
        # Each tree has its places and SPLICE_HOME of its own: an older tree rewrites a
        # record of a newer version (.splice/walks.json) as its own, and the other way round.
        setups = {}
        for number, (label, tree) in enumerate(trees.items()):
            base = Path(tmp) / str(number)
            env = {**os.environ, "HOME": str(base), "SPLICE_HOME": str(base / "home")}
            env["PYTHONPATH"] = tree
            places = _places(base, env)
            if label != "this tree":
                del places["small"]
            setups[label] = (env, places)
        samples: dict[tuple[str, str, str], list[float]] = {}
        for index in range(rounds + 1):
            for name, command in _commands(calls).items():
                order = list(trees) if index % 2 == 0 else list(reversed(trees))
                for label in order:
                    env, places = setups[label]
                    for place, project in places.items():
                        taken = command(env, project)
                        if index:  # round 0 warms every cache and records every walk
                            samples.setdefault((name, place, label), []).append(taken)
    rows = []
    small = {name: median(samples[name, "small", "this tree"]) * 1000 for name in _commands(0)}
    for name in _commands(0):
        for place in ("repo", "monorepo"):
            mine = median(samples[name, place, "this tree"]) * 1000
            rows.append(Row(f"{name}, {place}", mine, "ms", "small project", small[name]))
            if "before" in trees:
                old = median(samples[name, place, "before"]) * 1000
                rows.append(Row(f"{name}, {place}: this tree", mine, "ms", "before", old))
    return rows
