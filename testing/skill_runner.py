"""Run official skills through the REAL runtime: a tmp project, a copy of the package, real Node.

``SkillProject`` is a throw-away project directory (``splice.json``, ``workspace/``) holding a
copy of one package, so tests can plant files next to it (a canary outside ``workspace/``,
links, hard links) without touching the package shipped in the wheel.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from splice_build.runtime import LoadedPackage, SpliceRuntime
from splice_build.skills import skills_root
from splice_build.spec.pack import collect_package_files

#: Concurrent sandbox calls: each costs a Node start, so a small pool keeps big tables fast.
POOL_SIZE = 4


@dataclass(frozen=True)
class SkillProject:
    """A project with one installed copy of a skill, and a runtime rooted at the project."""

    root: Path
    package_dir: Path
    runtime: SpliceRuntime
    package: LoadedPackage

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    def run(self, tool: str, tool_input: Mapping[str, Any]) -> dict[str, Any]:
        """One call in the sandbox; the ToolResult's JSON shape."""
        return self.runtime.execute(self.package, tool, dict(tool_input)).to_json()

    def run_many(self, tool: str, inputs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Many independent calls of one tool, concurrently; results in input order."""
        return self.run_many_tools([(tool, item) for item in inputs])

    def run_many_tools(
        self, calls: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> list[dict[str, Any]]:
        """Independent ``(tool, input)`` calls, concurrently; results in call order."""
        with ThreadPoolExecutor(max_workers=POOL_SIZE) as pool:
            return list(pool.map(lambda call: self.run(*call), calls))


def skill_dir(name: str) -> Path:
    """The shipped package directory of an official skill (``json``, ``files``, …)."""
    return skills_root() / name


def copy_skill(name: str, destination: Path) -> Path:
    """A copy of the official package ``name`` at ``destination`` (for variants built in tests)."""
    shutil.copytree(skill_dir(name), destination)
    return destination


def skill_project(
    name: str,
    tmp_path: Path,
    *,
    package_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> SkillProject:
    """A tmp project containing the skill ``name`` (or the variant at ``package_dir``)."""
    root = tmp_path / "project"
    root.mkdir(parents=True, exist_ok=True)
    (root / "splice.json").write_text(json.dumps({"specVersion": 1, "packages": {}}) + "\n")
    installed = root / ".splice" / "packages" / "@splice" / name
    if package_dir is None:
        copy_skill(name, installed)
    else:
        installed.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(package_dir, installed)
    runtime = SpliceRuntime(project_root=root, env=dict(env or {}))
    return SkillProject(
        root=root.resolve(), package_dir=installed, runtime=runtime, package=runtime.load(installed)
    )


def package_files(name: str) -> dict[str, bytes]:
    """Every file of the shipped package ``name``, as the packer collects them."""
    return collect_package_files(skill_dir(name))


def examples(name: str) -> list[dict[str, Any]]:
    """The ``examples/*.json`` of an official skill, sorted by file name."""
    return [
        json.loads(path.read_text(encoding="utf-8"))
        for path in sorted((skill_dir(name) / "examples").glob("*.json"))
    ]


def error_codes(results: Iterable[Mapping[str, Any]]) -> list[str]:
    """The skill's own code of each failed result (``error.skillCode`` of a TOOL_ERROR, which
    must also start its message), else the runtime code; ``OK`` for a success."""
    codes = []
    for result in results:
        if result["ok"]:
            codes.append("OK")
            continue
        error = result["error"]
        skill_code = error.get("skillCode")
        if skill_code is None:
            codes.append(error["code"])
            continue
        assert error["code"] == "TOOL_ERROR", error
        assert error["message"].startswith(f"{skill_code}: "), error
        codes.append(skill_code)
    return codes


@dataclass(frozen=True)
class Canaries:
    """Files planted outside ``workspace/`` whose bytes must never change or appear in a result."""

    token: str
    files: Mapping[Path, bytes]
    watched: tuple[Path, ...]
    listing: frozenset[Path]

    def assert_untouched(self, *results: Any) -> None:
        for path, data in self.files.items():
            assert path.read_bytes() == data, f"{path} was modified"
        assert _listing(self.watched) == self.listing, (
            "files were created or removed outside workspace/"
        )
        assert self.token not in json.dumps(results, ensure_ascii=False), (
            "outside content leaked into a result"
        )


# What the runtime itself records before a tool with a write grant starts
# (project/grant_record.py), not anything the tool made.
_GRANT_RECORD = {(".splice", "write-grants.json"), (".splice", "write-grants.json.lock")}


def _listing(roots: Iterable[Path]) -> frozenset[Path]:
    found: set[Path] = set()
    for root in roots:
        for path in root.rglob("*"):
            parts = path.relative_to(root).parts
            if "workspace" not in parts[:1] and parts not in _GRANT_RECORD:
                found.add(path)
    return frozenset(found)


def plant_canaries(project: SkillProject, outside: Path) -> Canaries:
    """Secrets next to the workspace (project files, ``.env``) and in a directory outside the project."""
    token = f"CANARY-{uuid.uuid4().hex}"
    planted = {
        project.root / "canary.txt": f"project file {token}\n",
        project.root / ".env": f"API_TOKEN={token}\n",
        outside / "outside.txt": f"outside {token}\n",
        outside / "dir" / "inner.txt": f"inner {token}\n",
    }
    for path, text in planted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    files = {path: path.read_bytes() for path in [*planted, project.root / "splice.json"]}
    watched = (project.root, outside)
    return Canaries(token=token, files=files, watched=watched, listing=_listing(watched))
