"""Helpers for tests of project files and user state: fixtures on disk and racing writers.

``churn`` is the body of a real second process: run it with :func:`start_churn` to make two
processes fight over ``splice.json`` and ``splice.lock`` under the project lock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from splice_build.errors import ProjectError

REPO_ROOT = Path(__file__).resolve().parent.parent
INTEGRITY = "sha256-" + "ab" * 32
FILES_DIGEST = "sha256-" + "cd" * 32
KEY_ID = "ed25519:0123456789abcdef"


def assert_problems_bounded(refused: ProjectError, more: int) -> None:
    """``refused`` shows the first 20 problems, each cut at 500 characters, then how many
    ``more`` (project_file.shown_problems), and a message of one of them."""
    from splice_build.errors import ErrorCode

    assert refused.code is ErrorCode.INVALID_PROJECT
    details = refused.details
    assert len(details) == 21 and details[-1] == f"and {more} more"
    assert all(len(d) == 501 and d.endswith("…") for d in details[:-1])
    assert len(refused.message) < 600


def write_json(path: Path, value: object) -> Path:
    """Write ``value`` as 2-space JSON (a plain write: for fixtures, not for the code under test)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
    return path


def lock_entry_json(package_id: str = "@acme/tool", version: str = "1.0.0", **extra: Any) -> dict:
    """A valid raw ``splice.lock`` entry (as the TypeScript Splice writes it).

    Keyword arguments override fields; an override of ``None`` removes the field.
    """
    namespace, name = package_id[1:].split("/")
    entry: dict[str, Any] = {
        "version": version,
        "integrity": INTEGRITY,
        "size": 1234,
        "files": FILES_DIGEST,
        "registry": "http://127.0.0.1:8787",
        "resolved": f"http://127.0.0.1:8787/packages/{namespace}/{name}/{version}/download",
        "permissions": {"fs": {"read": [], "write": []}, "network": [], "env": []},
    }
    entry.update(extra)
    return {k: v for k, v in entry.items() if v is not None}


def make_project(
    root: Path,
    packages: dict[str, str] | None = None,
    *,
    registry: str | None = None,
    lock: dict[str, dict] | None = None,
) -> Path:
    """Create a project directory with ``splice.json`` (and ``splice.lock`` if ``lock``)."""
    document: dict[str, Any] = {"specVersion": 1}
    if registry is not None:
        document["registry"] = registry
    document["packages"] = packages or {}
    write_json(root / "splice.json", document)
    if lock is not None:
        write_json(root / "splice.lock", {"lockfileVersion": 1, "packages": lock})
    return root


def churn(root: str, tag: str, cycles: int, go_file: str) -> None:
    """Add ``cycles`` packages ``@churn/<tag>-<i>`` to both project files, one locked
    read-modify-write cycle each; print how often the lock was found busy.

    Waits for ``go_file`` to exist first, so two processes start racing at the same moment.
    """
    from splice_build.project.layout import ProjectLayout
    from splice_build.project.lockfile import LockEntry, load_lockfile, save_lockfile
    from splice_build.project.locking import lock
    from splice_build.project.project_file import load_project_file, save_project_file

    project = Path(root)
    layout = ProjectLayout(project)
    blocked = 0

    def on_blocked() -> None:
        nonlocal blocked
        blocked += 1

    Path(f"{go_file}.{tag}.ready").touch()
    while not os.path.exists(go_file):
        time.sleep(0.001)
    for i in range(cycles):
        package_id = f"@churn/{tag}-{i}"
        with lock(layout.state_lock, on_blocked):
            pf = load_project_file(project)
            save_project_file(project, pf.with_package(package_id, "^1.0.0"))
            entry = LockEntry(
                "1.0.0", INTEGRITY, f"http://r/packages/churn/{tag}-{i}/1.0.0/download"
            )
            save_lockfile(project, load_lockfile(project).with_entry(package_id, entry))
    print(json.dumps({"blocked": blocked}))


def start_churn(root: Path, tag: str, cycles: int, go_file: Path) -> subprocess.Popen[str]:
    """Start :func:`churn` in a new Python process."""
    code = "import sys; from testing.projects import churn; churn(*sys.argv[1:3], int(sys.argv[3]), sys.argv[4])"
    return subprocess.Popen(
        [sys.executable, "-c", code, str(root), tag, str(cycles), str(go_file)],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )


def run_python(code: str, *args: str, umask: int | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (the repository importable), ``args`` in sys.argv[1:]."""
    prefix = f"import os; os.umask({umask:#o}); " if umask is not None else ""
    return subprocess.run(
        [sys.executable, "-c", prefix + code, *args],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
