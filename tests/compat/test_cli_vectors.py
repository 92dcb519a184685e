"""The `splice` command line as the TypeScript CLI's tests use it (tests/compat/cli.json): the
real binary for exit codes and messages, and the run command's input coercion."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from splice_build.cli.commands.run import build_input
from splice_build.errors import SpliceError
from testing.cli import run_splice
from testing.compat import load, params
from testing.packages import write_package
from testing.skill_runner import skill_dir

VECTORS = load("cli")


def _argv(argv: list[str], cwd: Path) -> list[str]:
    values = {"{offline}": VECTORS["offline"], "{example}": str(skill_dir("example"))}
    out = []
    for word in argv:
        for key, value in values.items():
            word = word.replace(key, value)
        out.append(word.replace("{cwd}", str(cwd)))
    return out


def _check(case: dict[str, Any], cwd: Path) -> None:
    done = run_splice(*_argv(case["argv"], cwd), cwd=cwd / case.get("cwd", ""), env=case.get("env"))
    if "code" in case:
        assert done.code == case["code"], done
    if "stdout" in case:
        assert done.stdout.strip() == case["stdout"]
    patterns = case.get("here") or [*case.get("stdoutMatch", ()), *case.get("stderrMatch", ())]
    shown = done.stdout + done.stderr
    for pattern in patterns:
        assert re.search(pattern, shown, re.MULTILINE), (pattern, shown)


@pytest.mark.parametrize("argv", params(VECTORS["usage"]))
def test_usage_errors_exit_2(argv: list[str], tmp_path: Path) -> None:
    done = run_splice(*_argv(argv, tmp_path), cwd=tmp_path)
    assert done.code == 2, done
    assert done.stderr.strip(), "a usage error says why"


@pytest.mark.parametrize("case", params(VECTORS["runs"], label="argv"))
def test_runs(case: dict[str, Any], tmp_path: Path) -> None:
    _check(case, tmp_path)


@pytest.mark.parametrize("section", ["init", "config"])
def test_sequences(section: str, tmp_path: Path) -> None:
    for case in VECTORS[section]:
        _check(case, tmp_path)


@pytest.mark.parametrize("case", params(VECTORS["runInput"]["coerce"]))
def test_run_input_coercion(case: list[Any]) -> None:
    raw, schema, expected = case
    properties = {"v": schema} if schema is not None else {}
    value = build_input(None, [f"v={raw}"], {"type": "object", "properties": properties})
    assert value == {"v": expected}
    assert type(value["v"]) is type(expected)


@pytest.mark.parametrize("case", params(VECTORS["runInput"]["build"]))
def test_run_input_building(case: dict[str, Any]) -> None:
    schema = VECTORS["runInput"]["schema"]
    if "expected" in case:
        assert build_input(case.get("input"), case["pairs"], schema) == case["expected"]
        return
    with pytest.raises(SpliceError) as caught:
        build_input(case.get("input"), case["pairs"], schema)
    assert caught.value.exit_code == 2
    assert re.search(case.get("here", case["errorMatch"]), caught.value.message)


@pytest.mark.parametrize("case", params(VECTORS["pack"]["cases"], label="name"))
def test_pack(case: dict[str, Any], tmp_path: Path) -> None:
    package = write_package(tmp_path / "pkg", files=case.get("add"))
    for relative in case.get("remove", ()):
        (package / relative).unlink()
    for link, target in case.get("link", {}).items():
        (package / link).symlink_to(package / target)
    runs = [
        run_splice("--json", "pack", str(package), "--out", str(tmp_path / f"{n}.tar.gz"))
        for n in range(2 if case.get("twice") else 1)
    ]
    done = runs[0]
    assert done.code == case["code"], done
    if case["code"] == 0:
        assert done.json()["files"] == case["files"]
        assert len({run.json()["integrity"] for run in runs}) == 1
        return
    error = done.json()["error"]
    assert error["code"] == case["error"]
    if "messageMatch" in case:
        assert re.search(case["messageMatch"], error["message"])
    if "detailsMatch" in case:
        assert any(re.search(case["detailsMatch"], d) for d in error.get("details", ()))
