"""``python -m bench.kill_walk [case…]``: kill a real ``splice`` command just before each of
its file-system changes, every one, and check five invariants after each kill; one line per
problem, exit status 1 when there is any.

The walk in CI (tests/faults/test_killed_walk.py) kills ``add``, ``update``, ``remove``,
``install`` and ``sync`` of one package with no permissions and checks what a recovering
``install`` leaves, within CI's time. This one takes 15–25 minutes on two cores and asks
more of every step (docs/lifecycle.md#crash-safety):

1. the same command, run again, succeeds (a ``remove`` whose removal was committed answers
   as a second ``remove`` does) and leaves the project and ``SPLICE_HOME`` byte for byte as
   an uninterrupted run does (the caches aside: stat cache, graph databases, lock files);
2. ``splice --json verify`` of the killed state answers a JSON document, never a traceback;
3. each member's ``splice.json`` and ``splice.lock`` are the old file or the new one, byte
   for byte (or absent where the old one was);
4. no temp file, staging copy or backup is left after the re-run, in the project or the home;
5. ``splice --json run`` of the killed state runs the copy its ``splice.lock`` pins (every
   tool here answers its version) or refuses with an error code.

The cases add permissions (a consent record written at the commit point), two packages in
one transaction, a workspace of two members (one with a pulled lock, one a fresh clone)
and a ``splice run`` that records a write grant. Each runs on two lanes (testing/lanes.py),
each lane's project set up where its steps run it (the consent record is keyed by the
project's real path). The kills are those of testing/kill_at.py, with the changes named
relative to a directory's descriptor counted too (CI's walks leave those out for time).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from testing.cli import Completed, run_splice
from testing.kill_at import kill_env
from testing.lanes import each_lane, each_step

Setup = Callable[[Path, dict[str, str]], None]

# Files rewritten by every run (or naming inodes): not part of the end state compared.
_CACHES = frozenset(
    {
        "graph.sqlite3",
        "sync.sqlite3",
        "state.lock",
        "statcache.json",
        "walks.json",
        "workspace.json",
        "write-grants.json",
        "write-grants.json.lock",
    }
)


def _tool(version: str) -> str:
    return f'export default function hello(input) {{\n  return {{ message: "v{version}" }};\n}}\n'


def _publish(store: Path, work: Path) -> None:
    """``@acme/ver`` and ``@acme/grow`` 1.0.0 and 1.1.0; each tool answers its version, and
    ``grow`` 1.1.0 asks to write ``out`` beside reading ``docs``."""
    from testing.registry_fixtures import publish

    for version in ("1.0.0", "1.1.0"):
        files = {"tools/hello.js": _tool(version)}
        publish(store, work, name="ver", version=version, files=files)
        fs = {"read": ["docs"], "write": ["out"] if version == "1.1.0" else []}
        publish(store, work, name="grow", version=version, files=files, permissions={"fs": fs})


def _splice(project: Path, env: dict[str, str], *args: str) -> None:
    done = run_splice(*args, cwd=project, env=env)
    if done.code != 0:
        raise RuntimeError(f"set-up `splice {' '.join(args)}` failed: {done.stderr}")


def _steps(*commands: Sequence[str]) -> Setup:
    """A set-up running ``commands`` in the project, in order."""

    def setup(project: Path, env: dict[str, str]) -> None:
        for command in commands:
            _splice(project, env, *command)

    return setup


def _then_remove(setup: Setup, *relative: str, home: bool = False) -> Setup:
    """``setup``, then delete ``relative`` in the project (and ``SPLICE_HOME``)."""

    def done(project: Path, env: dict[str, str]) -> None:
        setup(project, env)
        for name in relative:
            shutil.rmtree(project / name)
        if home:
            shutil.rmtree(env["SPLICE_HOME"])

    return done


def _workspace(project: Path, env: dict[str, str]) -> None:
    """Members ``a`` (its lock pulled to ``ver`` 1.1.0 over an installed 1.0.0) and ``b`` (a
    fresh clone: its lock alone)."""
    (project / "splice.json").unlink()
    (project / "pyproject.toml").write_text('[tool.splice.workspace]\nmembers = ["a", "b"]\n')
    a, b = project / "a", project / "b"
    for member in (a, b):
        member.mkdir()
        _splice(member, env, "init")
    _splice(a, env, "add", "@acme/ver@1.0.0")
    installed = project / "installed-1.0.0"
    shutil.copytree(a / ".splice", installed, symlinks=True)
    _splice(a, env, "add", "@acme/ver@1.1.0")
    shutil.rmtree(a / ".splice")
    installed.rename(a / ".splice")
    _splice(b, env, "add", "@acme/ver@1.1.0", "@acme/grow@1.0.0", "--accept-permissions")
    shutil.rmtree(b / ".splice")


@dataclass(frozen=True)
class Case:
    setup: Setup
    command: tuple[str, ...]
    members: tuple[str, ...] = (".",)
    runs: tuple[str, ...] = ("ver.hello",)  # the tools step 5 runs in each member


ACCEPT = "--accept-permissions"
CASES = {
    "add": Case(_steps(), ("add", "@acme/ver@1.0.0")),
    "update": Case(_steps(("add", "@acme/ver@1.0.0"), ("add", "@acme/ver@^1.0.0")), ("update",)),
    "remove": Case(_steps(("add", "@acme/ver@1.0.0")), ("remove", "@acme/ver")),
    "restore": Case(
        _then_remove(_steps(("add", "@acme/ver@1.1.0")), ".splice/packages"), ("install",)
    ),
    "clone": Case(
        _then_remove(_steps(("add", "@acme/ver@1.1.0")), ".splice", home=True),
        ("install", "--frozen"),
    ),
    "add-two": Case(
        _steps(), ("add", "@acme/ver@1.0.0", "@acme/grow@1.1.0", ACCEPT), runs=("grow.hello",)
    ),
    "update-perm": Case(
        _steps(("add", "@acme/grow@1.0.0", ACCEPT), ("add", "@acme/grow@^1.0.0", ACCEPT)),
        ("update", ACCEPT),
        runs=("grow.hello",),
    ),
    "sync": Case(_workspace, ("sync",), members=("a", "b")),
    "run-grant": Case(
        _steps(("add", "@acme/grow@1.1.0", ACCEPT)),
        ("run", "grow.hello", "name=x"),
        runs=("grow.hello",),
    ),
}


def _snapshot(root: Path) -> dict[str, bytes]:
    if not root.exists():
        return {}
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in _CACHES
    }


def _litter(*roots: Path) -> list[str]:
    return sorted(
        str(p)
        for root in roots
        if root.exists()
        for p in root.rglob("*")
        if p.name.endswith((".tmp", ".part", "-previous"))
        or (p.name == "tmp" and p.parent.name == ".splice")
    )


def _state_files(project: Path, members: Sequence[str]) -> dict[str, bytes | None]:
    found = {}
    for member in members:
        for name in ("splice.json", "splice.lock"):
            path = project / member / name
            found[f"{member}/{name}"] = path.read_bytes() if path.exists() else None
    return found


def _copy(source: Path, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    if source.exists():
        shutil.copytree(source, target, symlinks=True)


@dataclass(frozen=True)
class Lane:
    """A lane's directories: its project and home, their copies as set up and as killed, its
    kill hook's, and its step log."""

    project: Path
    home: Path
    template: Path
    template_home: Path
    killed: Path
    killed_home: Path
    hook: Path
    log: Path

    @classmethod
    def at(cls, root: Path) -> Lane:
        names = ("p", "home", "template", "template-home", "killed", "killed-home", "hook")
        return cls(*(root / name for name in names), root / "steps.log")


@dataclass(frozen=True)
class Reference:
    """An uninterrupted run: the state files before and after, the end state, and the exit
    status of the command run once more after it."""

    before: dict[str, bytes | None]
    after: dict[str, bytes | None]
    project: dict[str, bytes]
    home: dict[str, bytes]
    again: int


def _error_code(done: Completed) -> bool:
    """``done`` answered a JSON document (an error with its code, or verify's checks)."""
    try:
        document = json.loads(done.stdout)
    except ValueError:
        return False
    return isinstance(document, dict) and (
        "checks" in document or isinstance(document.get("error", {}).get("code"), str)
    )


def _ran_what_is_pinned(done: Completed, project: Path) -> bool:
    lock = project / "splice.lock"
    pinned = json.loads(lock.read_text())["packages"] if lock.exists() else {}
    answer = json.loads(done.stdout)
    version = pinned.get(answer["package"], {}).get("version")
    return answer["output"]["message"] == f"v{version}"


def _walk(case: Case, base: Path, env: dict[str, str]) -> tuple[int, list[str]]:
    lanes = [Lane.at(base / f"lane{n}") for n in range(2)]
    references: dict[int, Reference] = {}

    def log(n: int) -> list[str]:
        lane = lanes[n]
        lane_env = {**env, "SPLICE_HOME": str(lane.home)}
        lane.project.mkdir(parents=True)
        _splice(lane.project, lane_env, "init")
        case.setup(lane.project, lane_env)
        _copy(lane.project, lane.template)
        _copy(lane.home, lane.template_home)
        before = _state_files(lane.project, case.members)
        logger = kill_env(lane.hook, [lane.project, lane.home], log=lane.log, descriptors=True)
        logged = run_splice(*case.command, cwd=lane.project, env={**lane_env, **logger})
        if logged.code != 0:
            raise RuntimeError(f"`splice {' '.join(case.command)}` failed: {logged.stderr}")
        after = _state_files(lane.project, case.members)
        project, home = _snapshot(lane.project), _snapshot(lane.home)
        again = run_splice(*case.command, cwd=lane.project, env=lane_env).code
        references[n] = Reference(before, after, project, home, again)
        return lane.log.read_text().splitlines()

    logs = each_lane(log)

    def one_step(step: int, n: int) -> list[str]:
        lane, reference = lanes[n], references[n]
        lane_env = {**env, "SPLICE_HOME": str(lane.home)}
        at = f"step {step} ({logs[n][step - 1].split(' ', 1)[1]})"
        problems = []
        _copy(lane.template, lane.project)
        _copy(lane.template_home, lane.home)
        killer = kill_env(lane.hook, [lane.project, lane.home], count=step, descriptors=True)
        killed = run_splice(*case.command, cwd=lane.project, env={**lane_env, **killer})
        if killed.code != -signal.SIGKILL:
            return [f"{at}: not killed ({killed.code}): {killed.stderr[-300:]}"]
        for name, now in _state_files(lane.project, case.members).items():
            if now not in (reference.before[name], reference.after[name]):
                problems.append(f"{at}: {name} is neither the old file nor the new one")
        _copy(lane.project, lane.killed)
        _copy(lane.home, lane.killed_home)
        for member in case.members:
            where = lane.project / member
            for tool in case.runs:
                ran = run_splice("--json", "run", tool, "name=x", cwd=where, env=lane_env)
                if "Traceback" in ran.stderr or (ran.code != 0 and not _error_code(ran)):
                    problems.append(f"{at}: run {tool} in {member}: {ran.stderr[-300:]}")
                elif ran.code == 0 and not _ran_what_is_pinned(ran, where):
                    problems.append(f"{at}: run {tool} in {member} ran another copy")
            _copy(lane.killed, lane.project)
            _copy(lane.killed_home, lane.home)
            package = "@acme/" + case.runs[0].partition(".")[0]
            verified = run_splice("--json", "verify", package, cwd=where, env=lane_env)
            if "Traceback" in verified.stderr or not _error_code(verified):
                problems.append(f"{at}: verify in {member}: {verified.stderr[-300:]}")
        _copy(lane.killed, lane.project)
        _copy(lane.killed_home, lane.home)
        again = run_splice(*case.command, cwd=lane.project, env=lane_env)
        if again.code not in (0, reference.again):
            return [*problems, f"{at}: the command again: {again.stderr[-300:]}"]
        if _snapshot(lane.project) != reference.project:
            problems.append(f"{at}: the project differs from an uninterrupted run's")
        if _snapshot(lane.home) != reference.home:
            problems.append(f"{at}: SPLICE_HOME differs from an uninterrupted run's")
        problems += [f"{at}: left {path}" for path in _litter(lane.project, lane.home)]
        return problems

    found = each_step(len(logs[0]), one_step)
    return len(logs[0]), [problem for problems in found for problem in problems]


def main(argv: list[str] | None = None) -> int:
    from testing.registry_server import registry_server

    parser = argparse.ArgumentParser(prog="python -m bench.kill_walk")
    parser.add_argument("cases", nargs="*", help=f"any of: {', '.join(CASES)} (default: all)")
    args = parser.parse_args(argv)
    cases = args.cases or list(CASES)
    if unknown := set(cases) - set(CASES):
        parser.error(f"unknown cases: {', '.join(sorted(unknown))}")
    failed = False
    with tempfile.TemporaryDirectory(prefix="kill-walk-") as scratch:
        base = Path(scratch)
        server_home = {"HOME": str(base / "server"), "SPLICE_HOME": str(base / "server" / "h")}
        _publish(base / "store", base / "packages")
        with registry_server(base / "store", admin=False, env=server_home) as server:
            env = {"SPLICE_REGISTRY": server.url, "HOME": str(base / "user")}
            for name in cases:
                steps, problems = _walk(CASES[name], base / name, env)
                print(f"{name}: {steps} steps, {len(problems)} problems", flush=True)
                for problem in problems:
                    print(f"  {problem}", flush=True)
                failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.pop("SPLICE_HOME", None)
    sys.exit(main())
