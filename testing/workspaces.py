"""Generated monorepos for sync tests and benchmarks: N projects sharing M published packages.

``publish_shared`` publishes ``@acme/pkgNN`` packages into a registry store;
``make_workspace`` writes ``pyproject.toml`` with ``[tool.splice.workspace]`` and one project
per ``packages/pNN`` whose ``splice.json`` takes a rotating window of those packages, so
every package is shared by several projects. ``tree_snapshot`` hashes every file under a
directory (to prove a run changed no byte).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from testing.registry_fixtures import publish

if TYPE_CHECKING:
    from splice_build.tasks.sync import SyncResult


def skill_sized_files(seed: int, count: int = 8, size: int = 3000) -> dict[str, str]:
    """``count`` JavaScript modules of about ``size`` bytes: an official skill's shape."""
    files = {}
    for n in range(count):
        line = (
            f"export const v{seed}_{n} = {hashlib.sha256(f'{seed}/{n}'.encode()).hexdigest()!r};\n"
        )
        files[f"lib/part{n}.js"] = line * max(1, size // len(line))
    return files


def publish_shared(
    store: Path, work: Path, count: int, *, sized: bool = False, version: str = "1.0.0"
) -> list[str]:
    """Publish ``@acme/pkg00`` … and return their ids."""
    ids = []
    for i in range(count):
        files = skill_sized_files(i) if sized else None
        publish(store, work, name=f"pkg{i:02d}", version=version, files=files)
        ids.append(f"@acme/pkg{i:02d}")
    return ids


def make_workspace(
    root: Path, projects: int, ids: Sequence[str], per_project: int, *, registry: str | None = None
) -> list[Path]:
    """A workspace at ``root``; project ``i`` uses ``ids[i % len(ids)]`` and the next ones."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        '[tool.splice.workspace]\nmembers = ["packages/*"]\n', encoding="utf-8"
    )
    dirs = []
    for p in range(projects):
        chosen = [ids[(p + k) % len(ids)] for k in range(per_project)]
        directory = root / "packages" / f"p{p:02d}"
        directory.mkdir(parents=True, exist_ok=True)
        data: dict[str, object] = {"specVersion": 1}
        if registry is not None:
            data["registry"] = registry
        data["packages"] = {package_id: "^1.0.0" for package_id in sorted(chosen)}
        (directory / "splice.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        dirs.append(directory)
    return dirs


def tree_snapshot(root: Path) -> dict[str, str]:
    """``relative path -> sha256`` of every file (and ``-> "dir"`` for every directory)."""
    snapshot = {}
    for directory, subdirs, files in os.walk(root):
        for name in subdirs:
            snapshot[os.path.relpath(os.path.join(directory, name), root)] = "dir"
        for name in files:
            path = os.path.join(directory, name)
            with open(path, "rb") as handle:
                snapshot[os.path.relpath(path, root)] = hashlib.sha256(handle.read()).hexdigest()
    return snapshot


def sync_in_place(root: Path, **options: object) -> SyncResult:
    """``sync_workspace`` of the workspace at ``root`` with this process's environment and
    home, as ``splice sync --root ROOT`` would run it."""
    from splice_build.project.home import SpliceHome
    from splice_build.project.workspace import find_workspace
    from splice_build.tasks.sync import SyncOptions, sync_workspace

    return sync_workspace(
        find_workspace(root, root=root),
        home=SpliceHome.from_env(os.environ),
        env=dict(os.environ),
        options=SyncOptions(**options),  # type: ignore[arg-type]
    )
