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
    with pytest.raises(SandboxError) as missing:  # not "not Node.js 24": nothing is there
        find_node({"SPLICE_NODE": "no-such-node-binary"})
    assert missing.value.code == ErrorCode.TOOL_CRASHED
    assert missing.value.message == "SPLICE_NODE names no file: 'no-such-node-binary'"
    assert missing.value.hint is not None and "not PATH" in missing.value.hint
    for nothing in (tmp_path / "nod", tmp_path):  # a mistyped path, a directory
        with pytest.raises(SandboxError) as missing:
            find_node({"SPLICE_NODE": str(nothing)})
        assert missing.value.message == f"SPLICE_NODE names no file: {str(nothing)!r}"
        assert (
            missing.value.hint == "check the path, or unset SPLICE_NODE to use the bundled Node.js"
        )
    assert find_node({}).version_text.count(".") == 2


def test_a_refusal_before_the_tool_keeps_its_hint(tmp_path: Path) -> None:
    # Found before any process starts, so the result's error is Splice's own, with what to do.
    fake = tmp_path / "node"
    fake.write_text("#!/bin/sh\necho v20.11.0\n")
    fake.chmod(0o755)
    env = {"SPLICE_NODE": str(fake)}
    args = ("run", "--dir", EXAMPLE, "example.hello", "name=Dim")
    plain = run_splice(*args, cwd=tmp_path, env=env)
    assert plain.code == 1
    assert plain.stderr.splitlines() == [
        "error: SPLICE_NODE is not Node.js 24 or newer (TOOL_CRASHED)",
        "hint: unset SPLICE_NODE to use the bundled Node.js",
    ]
    envelope = run_splice("--json", *args, cwd=tmp_path, env=env)
    assert envelope.code == 1
    assert envelope.json()["error"] == {
        "code": "TOOL_CRASHED",
        "message": "SPLICE_NODE is not Node.js 24 or newer",
        "hint": "unset SPLICE_NODE to use the bundled Node.js",
    }


# A package directory that carries its own npm dependency: pack drops node_modules and the
# archive reader refuses it, so `run --dir` must not use it either.
DEPENDENCY_BODIES = {
    "static_bare": "import foo from 'foo'; export default () => foo();",
    "dynamic_bare": "export default async () => (await import('foo')).default();",
    "relative_into_node_modules": (
        "import foo from '../node_modules/foo/index.js'; export default () => foo();"
    ),
    # package.json "imports" maps #dep to the package foo.
    "subpath_import": "import foo from '#dep'; export default () => foo();",
}


@pytest.mark.node
@pytest.mark.parametrize("body", list(DEPENDENCY_BODIES.values()), ids=list(DEPENDENCY_BODIES))
def test_run_dir_never_resolves_from_node_modules_and_matches_the_packed_package(
    tmp_path: Path, body: str
) -> None:
    from splice_build.spec.archive import read_archive

    pkg = write_package(
        tmp_path / "src",
        body,
        name="deps",
        extra_files={
            "node_modules/foo/package.json": '{"name": "foo", "type": "module", "main": "index.js"}',
            "node_modules/foo/index.js": "export default () => 'from node_modules';\n",
            "package.json": '{"type": "module", "imports": {"#dep": "foo"}}',
        },
    )
    unpacked = run_splice("--json", "run", "--dir", str(pkg), "deps.t", cwd=tmp_path)
    archive = tmp_path / "deps.tar.gz"
    packed = run_splice("pack", str(pkg), "--out", str(archive), cwd=tmp_path)
    assert packed.code == 0, packed.stderr
    extracted = tmp_path / "extracted" / "deps"
    for path, content in read_archive(archive.read_bytes()).items():
        assert not path.startswith("node_modules/")
        (extracted / path).parent.mkdir(parents=True, exist_ok=True)
        (extracted / path).write_bytes(content)
    repacked = run_splice("--json", "run", "--dir", str(extracted), "deps.t", cwd=tmp_path)
    assert unpacked.code == repacked.code == 1, (unpacked.stdout, repacked.stdout)
    before, after = unpacked.json()["error"], repacked.json()["error"]
    assert before == after
    assert before["code"] in {"TOOL_LOAD_FAILED", "TOOL_ERROR"}
    assert 'Cannot import "' in before["message"]
    assert "tools cannot use npm dependencies" in before["message"]
