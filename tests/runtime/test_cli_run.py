"""`splice run --dir` through the real console script, plus input coercion and lean imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from splice_build.cli.commands.run import build_input
from splice_build.skills import skills_root
from testing.cli import run_splice
from testing.hostile_packages import write_package

EXAMPLE = str(skills_root() / "example")


@pytest.mark.node
def test_success_prints_output_json(tmp_path: Path) -> None:
    done = run_splice(
        "run", "--dir", EXAMPLE, "example.hello", "name=Dim", "excited=true", cwd=tmp_path
    )
    assert done.code == 0, done.stderr
    assert done.stdout == '{\n  "message": "Hello, Dim!"\n}\n'


@pytest.mark.node
def test_json_envelope_and_failure(tmp_path: Path) -> None:
    ok = run_splice(
        "--json", "run", "--dir", EXAMPLE, "@splice/example.stats", "text=a bb", cwd=tmp_path
    )
    assert ok.code == 0
    assert ok.json()["output"]["longestWord"] == "bb"
    bad = run_splice("run", "--dir", EXAMPLE, "example.hello", "name=", cwd=tmp_path)
    assert bad.code == 1
    assert bad.stderr.splitlines()[:2] == [
        "error: Invalid input for @splice/example.hello (INVALID_INPUT)",
        "  - input.name: must be at least 1 characters",
    ]
    env = run_splice("--json", "run", "--dir", EXAMPLE, "example.nope", cwd=tmp_path)
    assert env.code == 1 and env.json()["error"]["code"] == "TOOL_NOT_FOUND"


@pytest.mark.node
def test_logs_go_to_stderr_with_prefix(tmp_path: Path) -> None:
    pkg = write_package(
        tmp_path,
        "export default (i, ctx) => { console.log('a'); ctx.log('b'); return 1; };",
        name="logger",
    )
    done = run_splice("run", "--dir", str(pkg), "logger.t", cwd=tmp_path)
    assert done.code == 0
    assert done.stdout == "1\n"
    assert "[@test/logger.t] a\n[@test/logger.t] b" in done.stderr


def test_without_dir_outside_a_project_is_not_a_project(tmp_path: Path) -> None:
    done = run_splice("run", "example.hello", cwd=tmp_path)
    assert done.code == 1
    assert "No splice.json found" in done.stderr


def test_coercion_by_schema_type() -> None:
    schema = {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "n": {"type": "number"},
            "i": {"type": "integer"},
            "b": {"type": "boolean"},
            "u": {},
        },
    }
    value = build_input(
        '{"s": "from-input", "keep": 1}',
        ["s=12", "n=1.5", "i=0x10", "b=true", "u=[1,2]", "x=plain"],
        schema,
    )
    assert value == {"s": "12", "keep": 1, "n": 1.5, "i": 16, "b": True, "u": [1, 2], "x": "plain"}
    assert build_input(
        None,
        ["n=abc", "b=yes", "n2="],
        {
            "properties": {
                "n": {"type": "number"},
                "b": {"type": "boolean"},
                "n2": {"type": "number"},
            }
        },
    ) == {"n": "abc", "b": "yes", "n2": ""}  # a blank number stays text, as in TS


def test_run_imports_stay_lean() -> None:
    code = (
        "import sys\n"
        "from splice_build.cli.commands import run\n"
        "import splice_build.runtime.runtime\n"
        "bad = [m for m in ('requests', 'starlette', 'uvicorn', 'doit') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_splice_node_must_be_24(tmp_path: Path) -> None:
    from splice_build.errors import ErrorCode, SandboxError
    from splice_build.runtime.node import find_node

    fake = tmp_path / "node"
    fake.write_text("#!/bin/sh\necho v20.11.0\n")
    fake.chmod(0o755)
    with pytest.raises(SandboxError) as info:
        find_node({"SPLICE_NODE": str(fake)})
    assert info.value.code == ErrorCode.TOOL_CRASHED
    assert find_node({}).version[0] >= 24
    assert find_node({}).version_text.count(".") == 2
