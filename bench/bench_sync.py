"""`splice sync` on a generated monorepo: 50 projects × 10 packages (20 distinct, skill-sized).

Each package is shaped like an official skill (manifest, SKILL.md, a tool and eight ~3 KB
modules: 11 files, ~30 KB), published into a temporary embedded registry. Whole-process
timings of the real binary:

- cold: fresh projects and an empty artifact cache (each artifact downloaded once);
- no-op: everything in place; compared with a Python process that walks every installed
  package and SHA-256s each file (target ≤ 1.5 ×), and with a bare ``python -c pass``;
- one project changed: one ``splice.json`` range toggled between two versions (both cached).

- first sync of a big workspace: 150 and 600 members with no packages, in a home that already
  holds 2,500 consent records (one per project ever installed), wall and CPU; four times the
  members should cost about four times as much (600 members before review/bigsync: 15.7 s,
  4.6 s of CPU, each record's write listing the consent directory twice and every state file
  fsynced; after: 6.3 s, 1.6 s).

Issue #22's shape, 30 projects × 3 packages, adds no-op rows against the same walk-and-hash
baseline measured right before them (target ≤ 1.0 ×): ``splice sync``, ``splice sync
--check``, one project's ``splice install``, and ``splice sync`` with every project's stat
cache deleted before each run (every file hashed from bytes). ``SPLICE_BENCH_BEFORE=<older
checkout>`` adds the same rows for that checkout, timed in the same rounds on a copy of the
same workspace (see ``_small``).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from bench.common import (
    Row,
    median,
    precompile,
    ratio_row,
    splice_argv,
    time_command,
    time_in_rounds,
)

PROJECTS, PER_PROJECT, DISTINCT = 50, 10, 20
BIG_MEMBERS, KNOWN_PROJECTS = (150, 600), 2500
SMALL_PROJECTS, SMALL_PER_PROJECT = 30, 3  # issue #22

_WALK = """
import hashlib, os, sys
for top in sys.argv[1:]:
    for root, dirs, files in os.walk(top):
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                hashlib.sha256(f.read()).hexdigest()
"""


def _cold(base: Path, ids: list[str], env: dict[str, str], repeat: int) -> list[float]:
    from testing.workspaces import make_workspace

    samples = []
    for i in range(repeat):
        root = base / f"cold{i}"
        make_workspace(root, PROJECTS, ids, PER_PROJECT)
        shutil.rmtree(Path(env["SPLICE_HOME"]) / "cache", ignore_errors=True)
        samples += time_command(splice_argv("sync"), repeat=1, warmup=0, env=env, cwd=root)
    return samples


def _toggle(project: Path) -> None:
    spec = project / "splice.json"
    data = json.loads(spec.read_text())
    pkg = "@acme/pkg00"
    data["packages"][pkg] = "1.1.0" if data["packages"][pkg] != "1.1.0" else "1.0.0"
    spec.write_text(json.dumps(data, indent=2) + "\n")


def _wall_and_cpu(argv: list[str], cwd: Path | None, env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (user + system) of one whole-process run.

    CPU time is what a loaded shared machine distorts least (waiting for a core is not
    counted), so the rows give both."""
    import resource
    import subprocess
    import time

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        argv,
        cwd=cwd,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _before_copy(root: Path, env: dict[str, str], before: str) -> Path:
    """A copy of the workspace ``root`` for the older checkout, synced twice by it.

    Each side keeps its own state files (an older checkout rewrites a stat cache of a newer
    version as its own, and the other way round), so neither pays for the other's."""
    precompile(Path(before))
    copy = root.with_name(root.name + "-before")
    shutil.copytree(root, copy, symlinks=True)
    old_env = {**env, "PYTHONPATH": before}
    for _ in range(2):  # the copies have new inodes: hashed once, then recorded
        time_command(splice_argv("sync"), repeat=1, warmup=0, env=old_env, cwd=copy)
    return copy


def _noop_rounds(root: Path, env: dict[str, str], repeat: int) -> tuple[list[float], list[float]]:
    """No-op ``splice sync`` samples, and those of ``SPLICE_BENCH_BEFORE`` taken in turn."""
    before = os.environ.get("SPLICE_BENCH_BEFORE")
    commands = {"now": (splice_argv("sync"), root, env)}
    if before:
        old_env = {**env, "PYTHONPATH": before}
        commands["old"] = (splice_argv("sync"), _before_copy(root, env, before), old_env)
    taken = time_in_rounds(commands, repeat)
    return taken["now"], taken.get("old", [])


def _first_big_syncs(base: Path) -> list[Row]:
    """First ``splice sync`` of ``BIG_MEMBERS`` empty members each, wall and CPU, in a home
    whose consent directory already holds ``KNOWN_PROJECTS`` records."""
    home = base / "big-home"
    (home / "consent").mkdir(mode=0o700, parents=True)
    home.chmod(0o700)
    for i in range(KNOWN_PROJECTS):
        (home / "consent" / f"{i:064x}.json").write_text("{}\n")
    taken: dict[int, tuple[float, float]] = {}
    for members in BIG_MEMBERS:
        root = base / f"big{members}"
        root.mkdir()
        (root / "pyproject.toml").write_text(
            '[tool.splice.workspace]\nmembers = ["packages/*"]\n', encoding="utf-8"
        )
        for i in range(members):
            member = root / "packages" / f"m{i:05d}"
            member.mkdir(parents=True)
            (member / "splice.json").write_text('{"specVersion":1,"packages":{}}\n')
        taken[members] = _wall_and_cpu(splice_argv("sync"), root, {"SPLICE_HOME": str(home)})
    few, many = BIG_MEMBERS
    target = f"<= {1.1 * many / few:.1f}x"
    return [
        Row(
            f"first splice sync, {many} members ({unit})",
            taken[many][i] * 1000,
            "ms",
            f"{few} members",
            taken[few][i] * 1000,
            target,
        )
        for i, unit in enumerate(("wall", "CPU"))
    ]


def _drop_stat_caches(root: Path) -> None:
    for cache in glob.glob(str(root / "packages" / "*" / ".splice" / "statcache.json")):
        os.unlink(cache)


def _small(base: Path, ids: list[str], env: dict[str, str], repeat: int) -> list[Row]:
    """Issue #22's no-op rows over 30 × 3, each against the walk measured in this run.

    The commands are timed in rounds (one sample of each per round), so that a shared
    machine's load drifts over all of them alike. With ``SPLICE_BENCH_BEFORE`` set to an older
    checkout, the same binary is also timed with that checkout first on ``PYTHONPATH``:
    before and after in one run, on a copy of the same workspace (``_before_copy``).
    """
    from testing.workspaces import make_workspace

    root = base / "small"
    make_workspace(root, SMALL_PROJECTS, ids, SMALL_PER_PROJECT)
    for _ in range(2):  # the second run records the files the first one installed
        time_command(splice_argv("sync"), repeat=1, warmup=0, env=env, cwd=root)
    installed = sorted(glob.glob(str(root / "packages" / "*" / ".splice" / "packages")))
    one = root / "packages" / "p00"
    commands: dict[str, tuple[list[str], Path | None, dict[str, str]]] = {
        "walk": ([sys.executable, "-c", _WALK, *installed], None, env),
        "one walk": ([sys.executable, "-c", _WALK, str(one / ".splice" / "packages")], None, env),
        "sync": (splice_argv("sync"), root, env),
        "check": (splice_argv("sync", "--check"), root, env),
        "install": (splice_argv("install"), one, env),
    }
    before = os.environ.get("SPLICE_BENCH_BEFORE")
    if before:
        copy = _before_copy(root, env, before)
        old = {**env, "PYTHONPATH": before}
        commands["sync before"] = (splice_argv("sync"), copy, old)
        commands["check before"] = (splice_argv("sync", "--check"), copy, old)
        commands["install before"] = (splice_argv("install"), copy / "packages" / "p00", old)
    names = [*commands, "hashed"]
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(repeat + 1):  # round 0 warms up
        taken = {
            name: _wall_and_cpu(argv, cwd, run_env)
            for name, (argv, cwd, run_env) in commands.items()
        }
        _drop_stat_caches(root)  # every file hashed from bytes, then recorded again
        taken["hashed"] = _wall_and_cpu(splice_argv("sync"), root, env)
        if round_:
            for name, (seconds, cpu_seconds) in taken.items():
                wall[name].append(seconds)
                cpu[name].append(cpu_seconds)
    files = sum(len(files) for top in installed for _, _, files in os.walk(top))
    shape = f"{SMALL_PROJECTS}×{SMALL_PER_PROJECT}, {files} files"
    baseline = "python walk + sha256 of the installed files"
    rows = []
    for clock, samples in (("", wall), (", CPU", cpu)):
        walk, one_walk = samples["walk"], samples["one walk"]
        for suffix in ("", " before") if before else ("",):
            label = f"{clock}{' (before)' if suffix else ''}"
            rows += [
                ratio_row(
                    f"no-op splice sync ({shape}){label}",
                    samples["sync" + suffix],
                    baseline,
                    walk,
                    target="<= 1.0x",
                ),
                ratio_row(
                    f"no-op splice sync --check ({shape}){label}",
                    samples["check" + suffix],
                    baseline,
                    walk,
                ),
                ratio_row(
                    f"no-op splice install, one project of {SMALL_PER_PROJECT}{label}",
                    samples["install" + suffix],
                    baseline,
                    one_walk,
                ),
            ]
        rows.append(
            ratio_row(
                f"no-op splice sync, no stat cache ({shape}){clock}",
                samples["hashed"],
                baseline,
                walk,
            )
        )
    return rows


def run(quick: bool = False) -> list[Row]:
    from testing.registry_fixtures import embedded_store, publish
    from testing.workspaces import make_workspace, publish_shared, skill_sized_files

    precompile()  # bytecode as installed (PYTHONDONTWRITEBYTECODE would recompile every run)
    repeat = 3 if quick else 10
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = {"SPLICE_HOME": str(base / "home")}
        store = embedded_store(base / "home")
        ids = publish_shared(store, base / "work", DISTINCT, sized=True)
        publish(store, base / "work", name="pkg00", version="1.1.0", files=skill_sized_files(0))
        cold = _cold(base, ids, env, 1 if quick else 3)

        root = base / "ws"
        make_workspace(root, PROJECTS, ids, PER_PROJECT)
        first = root / "packages" / "p00"
        _toggle(first)  # p00 pins pkg00 to 1.0.0, so the toggle switches versions
        time_command(splice_argv("sync"), repeat=1, warmup=0, env=env, cwd=root)
        installed = sorted(glob.glob(str(root / "packages" / "*" / ".splice" / "packages")))
        noop, noop_before = _noop_rounds(root, env, repeat)
        noop_j2 = time_command(splice_argv("sync", "-j", "2"), repeat=repeat, env=env, cwd=root)
        walk = time_command([sys.executable, "-c", _WALK, *installed], repeat=repeat, env=env)
        bare = time_command([sys.executable, "-c", "pass"], repeat=repeat, env=env)
        changed = []
        for _ in range(repeat):
            _toggle(first)
            changed += time_command(splice_argv("sync"), repeat=1, warmup=0, env=env, cwd=root)
        files = sum(len(files) for top in installed for _, _, files in os.walk(top))
        small = _small(base, ids, env, repeat)
        big = _first_big_syncs(base)
    shape = f"{PROJECTS}×{PER_PROJECT}, {files} files"
    return [
        Row(f"cold splice sync ({shape})", median(cold) * 1000, "ms"),
        ratio_row(
            f"no-op splice sync ({shape})",
            noop,
            "python walk + sha256 of the installed files",
            walk,
            target="<= 1.5x",
        ),
        ratio_row(f"no-op splice sync ({shape})", noop, "python -c pass", bare),
        *(
            [
                ratio_row(
                    f"no-op splice sync ({shape}) (before)",
                    noop_before,
                    "python walk + sha256 of the installed files",
                    walk,
                )
            ]
            if noop_before
            else []
        ),
        ratio_row(
            f"no-op splice sync -j 2 ({shape})",
            noop_j2,
            "python walk + sha256 of the installed files",
            walk,
        ),
        ratio_row(
            "one project's range changed: splice sync",
            changed,
            "no-op splice sync",
            noop,
        ),
        *small,
        *big,
    ]
