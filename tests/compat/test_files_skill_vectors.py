"""@splice/files as the TypeScript skill's tests use it (tests/compat/files_skill.json): the real
tools of our skill, in the real sandbox, on a throw-away project; pure path rules through the
skill's own policy module in Node."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from splice_build.runtime.node import find_node
from testing.compat import load, params
from testing.skill_runner import SkillProject, error_codes, skill_dir, skill_project

VECTORS = load("files_skill")


def _project(tmp_path: Path, *, credentials: bool = False) -> SkillProject:
    project = skill_project("files", tmp_path)
    files = {**VECTORS["workspace"], **(VECTORS["credentialFiles"] if credentials else {})}
    for relative, text in files.items():
        path = project.workspace / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for relative, text in VECTORS["outside"].items():
        (project.root / relative).write_text(text, encoding="utf-8")
    return project


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.is_symlink() and ".splice" not in path.parts
    }


def _check_call(step: dict[str, Any], result: dict[str, Any]) -> None:
    (code,) = error_codes([result])
    assert code == step.get("error", "OK"), result
    if not result["ok"]:
        return
    output = result["output"]
    for key, value in step.get("output", {}).items():
        assert output[key] == value, key
    if step.get("modifiedAt"):
        assert output["modifiedAt"][:4].isdigit() and output["modifiedAt"][10] == "T"
    if "paths" in step:
        assert [entry["path"] for entry in output["entries"]] == step["paths"]
    if "truncated" in step:
        assert output["truncated"] is step["truncated"]
    if "entry" in step:
        entry = next(e for e in output["entries"] if e["path"] == step["entry"]["path"])
        assert entry["type"] == step["entry"]["type"]


def test_single_calls(tmp_path: Path) -> None:
    project = _project(tmp_path)
    before = _snapshot(project.root)
    calls = VECTORS["calls"]
    results = project.run_many_tools([(c["tool"], c["input"]) for c in calls])
    for call, result in zip(calls, results, strict=True):
        _check_call(call, result)
    assert _snapshot(project.root) == before


@pytest.mark.parametrize("case", params(VECTORS["sequences"], label="name"))
def test_sequences(case: dict[str, Any], tmp_path: Path) -> None:
    project = _project(tmp_path, credentials=case.get("credentials", False))
    for step in case["steps"]:
        _check_call(step, project.run(step["tool"], step["input"]))
    for relative, content in case.get("files", {}).items():
        data = (project.workspace / relative).read_bytes()
        expected = bytes.fromhex(content["hex"]) if "hex" in content else content["text"].encode()
        assert data == expected, relative
    for relative in case.get("absent", ()):
        assert not (project.workspace / relative).exists(), relative


def _refused_calls(
    group: dict[str, Any], project: SkillProject
) -> list[tuple[str, dict[str, Any]]]:
    calls = []
    for raw in group["paths"]:
        path = raw.replace("{project}", project.root.as_posix())
        for tool in group["tools"]:
            tool_input = {"path": path}
            if tool == "write":
                tool_input |= {"content": "x", "mode": "overwrite"}
            calls.append((tool, tool_input))
    return calls


@pytest.mark.parametrize("group", params(VECTORS["refused"], label="code"))
def test_refused_paths(group: dict[str, Any], tmp_path: Path) -> None:
    project = _project(tmp_path, credentials=group.get("credentials", False))
    before = _snapshot(project.root)
    calls = _refused_calls(group, project)
    got = error_codes(project.run_many_tools(calls))
    assert list(zip(calls, got, strict=True)) == [(call, group["code"]) for call in calls]
    assert _snapshot(project.root) == before, "nothing inside or outside workspace/ changed"


def _make_link(project: SkillProject, case: dict[str, Any]) -> None:
    link = project.workspace / case["link"]
    target = project.root / case["to"]
    if case["kind"] == "directory":
        target.mkdir(exist_ok=True)
        link.symlink_to(target, target_is_directory=True)
    elif case["kind"] == "file":
        target.write_text("outside", encoding="utf-8")
        link.symlink_to(target)
    else:
        target.write_text("outside data", encoding="utf-8")
        os.link(target, link)


@pytest.mark.parametrize("case", params(VECTORS["links"], label="name"))
def test_links(case: dict[str, Any], tmp_path: Path) -> None:
    project = _project(tmp_path)
    _make_link(project, case)
    kept = {name: (project.root / name).read_bytes() for name in case.get("unchanged", ())}
    for call in case["calls"]:
        _check_call(call, project.run(call["tool"], call["input"]))
    assert {name: (project.root / name).read_bytes() for name in kept} == kept
    if "emptyDirectory" in case:
        assert list((project.root / case["emptyDirectory"]).iterdir()) == []


_POLICY_DRIVER = """
import { checkPath, isSensitiveName } from %s;
import { readFileSync } from "node:fs";
const request = JSON.parse(readFileSync(0, "utf8"));
const sensitive = request.names.map((name) => isSensitiveName(name));
const resolved = request.paths.map(({ path, allowRoot }) => checkPath(path, { allowRoot }));
process.stdout.write(JSON.stringify({ sensitive, resolved }));
"""


def test_policy_module() -> None:
    """Name and path rules straight from the skill's policy module (no file system)."""
    module = (skill_dir("files") / "lib" / "policy.mjs").as_uri()
    request = {
        "names": VECTORS["notSensitive"],
        "paths": [
            {"path": r["path"], "allowRoot": r.get("allowRoot", False)} for r in VECTORS["resolve"]
        ],
    }
    done = subprocess.run(
        [str(find_node({}).path), "--input-type=module", "-e", _POLICY_DRIVER % json.dumps(module)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    answer = json.loads(done.stdout)
    assert answer["sensitive"] == [False] * len(VECTORS["notSensitive"])
    assert answer["resolved"] == [r["segments"] for r in VECTORS["resolve"]]
