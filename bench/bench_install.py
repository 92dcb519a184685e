"""No-op `splice install` on a project with 20 packages vs a bare walk-and-SHA-256 of the same files.

The 20 packages are generated and published into a temporary embedded registry, installed
once, then `splice install` (whole process: it re-verifies every installed file from bytes) is
timed against a Python process that only walks ``.splice/packages`` and hashes every file.
Target: ≤ 1.5 ×. ``SPLICE_BENCH_BEFORE=<older checkout>`` adds the same row for that checkout.
The whole-process commands are timed in interleaved rounds.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from bench.common import Row, precompile, ratio_row, splice_argv, time_callable, time_in_rounds

PACKAGES = 20


def _walk_and_hash(directory: Path) -> None:
    import hashlib

    for root, _dirs, files in os.walk(directory):
        for name in files:
            with open(os.path.join(root, name), "rb") as handle:
                hashlib.sha256(handle.read()).hexdigest()


_WALK = """
import hashlib, os, sys
for root, dirs, files in os.walk(sys.argv[1]):
    for name in files:
        with open(os.path.join(root, name), "rb") as f:
            hashlib.sha256(f.read()).hexdigest()
"""


def installed_project(
    base: Path, files: dict[str, str] | None = None
) -> tuple[Path, dict[str, str]]:
    """``PACKAGES`` packages published into an embedded registry under ``base`` (``files``:
    each package's files, else the fixture's own) and added to a new project; the project and
    the environment (``SPLICE_HOME``, also set in ``os.environ``) its commands run with."""
    from splice_build.sdk import Splice
    from testing.registry_fixtures import embedded_store, new_project, publish

    env = {"SPLICE_HOME": str(base / "home")}
    os.environ.update(env)
    extra = {} if files is None else {"files": files}
    ids = []
    for i in range(PACKAGES):
        publish(embedded_store(base / "home"), base / "work", name=f"pkg{i:02d}", **extra)
        ids.append(f"@acme/pkg{i:02d}")
    project = new_project(base / "p")
    Splice(project, env={**os.environ, **env}).add(ids)
    return project, env


def before_copy(project: Path) -> Path | None:
    """``SPLICE_BENCH_BEFORE=<older checkout>``: a copy of the project for that checkout's
    runs (each side keeps its own stat cache), its bytecode compiled."""
    before = os.environ.get("SPLICE_BENCH_BEFORE")
    if not before:
        return None
    import shutil

    precompile(Path(before))
    copy = project.with_name(project.name + "-before")
    shutil.copytree(project, copy, symlinks=True)
    return copy


def run(quick: bool = False) -> list[Row]:
    from splice_build.sdk import Splice

    precompile()
    repeat = 3 if quick else 10
    with tempfile.TemporaryDirectory() as tmp:
        project, env = installed_project(Path(tmp))
        splice = Splice(project, env={**os.environ, **env})
        sdk = time_callable(splice.install, repeat=repeat)
        bare = time_callable(
            lambda: _walk_and_hash(project / ".splice" / "packages"), repeat=repeat
        )
        commands = {
            "noop": (splice_argv("install"), project, env),
            "walk": (
                [sys.executable, "-c", _WALK, str(project / ".splice" / "packages")],
                None,
                env,
            ),
        }
        copy = before_copy(project)
        if copy is not None:
            old = {**env, "PYTHONPATH": os.environ["SPLICE_BENCH_BEFORE"]}
            commands["before"] = (splice_argv("install"), copy, old)
        taken = time_in_rounds(commands, 2 * repeat)
        noop, walk, before = taken["noop"], taken["walk"], taken.get("before", [])
    return [
        ratio_row(
            f"no-op splice install ({PACKAGES} packages)",
            noop,
            "python walk + sha256 of the installed files",
            walk,
            target="<= 1.5x",
        ),
        *(
            [
                ratio_row(
                    f"no-op splice install ({PACKAGES} packages) (before)",
                    before,
                    "python walk + sha256 of the installed files",
                    walk,
                )
            ]
            if before
            else []
        ),
        ratio_row(
            f"no-op Splice.install() in process ({PACKAGES} packages)",
            sdk,
            "walk + sha256 of the installed files in process",
            bare,
        ),
    ]
