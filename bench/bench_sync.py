"""`splice sync` on a generated monorepo: 50 projects × 10 packages (20 distinct, skill-sized).

Each package is shaped like an official skill (manifest, SKILL.md, a tool and eight ~3 KB
modules: 11 files, ~30 KB), published into a temporary embedded registry. Whole-process
timings of the real binary:

- cold: fresh projects and an empty artifact cache (each artifact downloaded once);
- no-op: everything in place; compared with a Python process that walks every installed
  package and SHA-256s each file (target ≤ 1.5 ×), and with a bare ``python -c pass``;
- one project changed: one ``splice.json`` range toggled between two versions (both cached).

Issue #22's shape, 30 projects × 3 packages, adds no-op rows against the same walk-and-hash
baseline measured right before them (target ≤ 1.0 ×): ``splice sync``, ``splice sync
--check``, one project's ``splice install``, and ``splice sync`` with every project's stat
cache deleted before each run (every file hashed from bytes, the cost before the stat cache).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from bench.common import Row, median, precompile, ratio_row, splice_argv, time_command

PROJECTS, PER_PROJECT, DISTINCT = 50, 10, 20
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


def _without_stat_cache(root: Path, env: dict[str, str], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        for cache in glob.glob(str(root / "packages" / "*" / ".splice" / "statcache.json")):
            os.unlink(cache)
        samples += time_command(splice_argv("sync"), repeat=1, warmup=0, env=env, cwd=root)
    return samples


def _small(base: Path, ids: list[str], env: dict[str, str], repeat: int) -> list[Row]:
    """Issue #22's no-op rows over 30 × 3, each against the walk measured in this run."""
    from testing.workspaces import make_workspace

    root = base / "small"
    make_workspace(root, SMALL_PROJECTS, ids, SMALL_PER_PROJECT)
    for _ in range(2):  # the second run records the files the first one installed
        time_command(splice_argv("sync"), repeat=1, warmup=0, env=env, cwd=root)
    installed = sorted(glob.glob(str(root / "packages" / "*" / ".splice" / "packages")))
    walk = time_command([sys.executable, "-c", _WALK, *installed], repeat=repeat, env=env)
    noop = time_command(splice_argv("sync"), repeat=repeat, env=env, cwd=root)
    check = time_command(splice_argv("sync", "--check"), repeat=repeat, env=env, cwd=root)
    one = root / "packages" / "p00"
    one_walk = time_command(
        [sys.executable, "-c", _WALK, str(one / ".splice" / "packages")], repeat=repeat, env=env
    )
    install = time_command(splice_argv("install"), repeat=repeat, env=env, cwd=one)
    hashed = _without_stat_cache(root, env, repeat)
    files = sum(len(files) for top in installed for _, _, files in os.walk(top))
    shape = f"{SMALL_PROJECTS}×{SMALL_PER_PROJECT}, {files} files"
    baseline = "python walk + sha256 of the installed files"
    return [
        ratio_row(f"no-op splice sync ({shape})", noop, baseline, walk, target="<= 1.0x"),
        ratio_row(f"no-op splice sync --check ({shape})", check, baseline, walk),
        ratio_row(f"no-op splice sync, no stat cache ({shape})", hashed, baseline, walk),
        ratio_row(
            f"no-op splice install, one project of {SMALL_PER_PROJECT}", install, baseline, one_walk
        ),
    ]


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
        noop = time_command(splice_argv("sync"), repeat=repeat, env=env, cwd=root)
        noop_j2 = time_command(splice_argv("sync", "-j", "2"), repeat=repeat, env=env, cwd=root)
        walk = time_command([sys.executable, "-c", _WALK, *installed], repeat=repeat, env=env)
        bare = time_command([sys.executable, "-c", "pass"], repeat=repeat, env=env)
        changed = []
        for _ in range(repeat):
            _toggle(first)
            changed += time_command(splice_argv("sync"), repeat=1, warmup=0, env=env, cwd=root)
        files = sum(len(files) for top in installed for _, _, files in os.walk(top))
        small = _small(base, ids, env, repeat)
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
    ]
