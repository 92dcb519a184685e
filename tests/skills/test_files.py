"""@splice/files in the real sandbox: tools, error codes, examples, real links and races.

Every test plants canaries outside ``workspace/`` (project files, ``.env``, a directory outside
the project) and checks at the end that none changed, none was added and none of their content
appears in any result.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from splice_build.runtime.isolation.support import detect
from splice_build.spec.package import validate_package_files
from splice_build.spec.schema_subset import check_schema, validate_value
from testing.isolation import os_layer_missing
from testing.skill_runner import (
    Canaries,
    SkillProject,
    copy_skill,
    error_codes,
    examples,
    package_files,
    plant_canaries,
    skill_project,
)

MiB = 1024 * 1024


@pytest.fixture
def project(tmp_path: Path) -> SkillProject:
    return skill_project("files", tmp_path)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    return tmp_path / "outside"


@pytest.fixture
def canaries(project: SkillProject, outside: Path) -> Iterator[Canaries]:
    planted = plant_canaries(project, outside)
    project.workspace.mkdir(exist_ok=True)
    yield planted
    planted.assert_untouched()


def _ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["ok"], result
    return result["output"]


def _code(result: dict[str, Any]) -> str:
    return error_codes([result])[0]


# --- the package --------------------------------------------------------------------------


def test_package_is_valid_official_skill() -> None:
    manifest = validate_package_files(package_files("files"))
    raw = json.loads(package_files("files")["manifest.json"])
    assert (manifest.id, manifest.version) == ("@splice/files", "0.1.2")
    assert raw["runtime"] == {"type": "node", "minNodeVersion": "22.18.0"}
    assert raw["permissions"] == {
        "fs": {"read": ["workspace"], "write": ["workspace"]},
        "network": [],
        "env": [],
    }
    assert [tool["name"] for tool in raw["tools"]] == ["read", "write", "list"]
    for tool in raw["tools"]:
        assert tool["input"]["additionalProperties"] is False
        assert check_schema(tool["input"]) == [] and check_schema(tool["output"]) == []


def test_examples_match_schemas_and_real_outputs(project: SkillProject, canaries: Canaries) -> None:
    cases = {case["tool"]: case for case in examples("files")}
    assert sorted(cases) == ["list", "read", "write"]
    tools = {
        tool["name"]: tool for tool in json.loads(package_files("files")["manifest.json"])["tools"]
    }
    results = []
    for name in ["write", "read", "list"]:  # the examples build on each other
        case = cases[name]
        assert validate_value(tools[name]["input"], case["input"], "input") == []
        assert validate_value(tools[name]["output"], case["output"], "output") == []
        results.append(project.run(name, case["input"]))
        output = dict(_ok(results[-1]))
        expected = dict(case["output"])
        if name == "read":  # the only value that depends on the clock
            datetime.fromisoformat(output.pop("modifiedAt"))
            expected.pop("modifiedAt")
        assert output == expected
    canaries.assert_untouched(results)


# --- write and read -------------------------------------------------------------------------


def test_write_modes_and_round_trips(project: SkillProject, canaries: Canaries) -> None:
    blob = bytes(range(256)) * 3
    calls: list[tuple[str, dict[str, Any]]] = [
        ("write", {"path": "a.txt", "content": "héllo"}),
        ("write", {"path": "a.txt", "content": "other"}),
        ("write", {"path": "a.txt", "content": "hi", "mode": "overwrite"}),
        ("write", {"path": "a.txt", "content": " there", "mode": "append"}),
        ("write", {"path": "new/over.txt", "content": "x", "mode": "overwrite"}),
        ("write", {"path": "new/app.txt", "content": "y", "mode": "append"}),
        (
            "write",
            {"path": "bin/blob", "content": base64.b64encode(blob).decode(), "encoding": "base64"},
        ),
        ("write", {"path": "empty", "content": ""}),
    ]
    results = [project.run(tool, item) for tool, item in calls]
    assert [_code(r) for r in results] == [
        "OK",
        "ALREADY_EXISTS",
        "OK",
        "OK",
        "OK",
        "OK",
        "OK",
        "OK",
    ]
    assert results[0]["output"] == {"path": "a.txt", "bytes": 6, "size": 6, "created": True}
    assert results[2]["output"] == {"path": "a.txt", "bytes": 2, "size": 2, "created": False}
    assert results[3]["output"] == {"path": "a.txt", "bytes": 6, "size": 8, "created": False}
    assert results[4]["output"]["created"] is results[5]["output"]["created"] is True
    assert (project.workspace / "a.txt").read_text() == "hi there"
    assert (project.workspace / "bin" / "blob").read_bytes() == blob
    reads = project.run_many(
        "read",
        [
            {"path": "a.txt"},
            {"path": "bin/blob", "encoding": "base64"},
            {"path": "empty"},
            {"path": "a.txt", "maxBytes": 8},
        ],
    )
    outputs = [_ok(r) for r in reads]
    assert (outputs[0]["content"], outputs[0]["size"], outputs[0]["encoding"]) == (
        "hi there",
        8,
        "utf8",
    )
    assert base64.b64decode(outputs[1]["content"]) == blob and outputs[1]["size"] == len(blob)
    assert (outputs[2]["content"], outputs[2]["size"]) == ("", 0)
    assert outputs[3]["content"] == "hi there"
    canaries.assert_untouched(results, reads)


def test_write_content_errors(project: SkillProject, canaries: Canaries) -> None:
    inputs = [
        {"path": "b64-1", "content": "abc", "encoding": "base64"},
        {"path": "b64-2", "content": "ab=c", "encoding": "base64"},
        {"path": "b64-3", "content": "YWJj ZA==", "encoding": "base64"},
        {"path": "b64-4", "content": "====", "encoding": "base64"},
        {"path": "big-1", "content": "a" * (MiB + 1)},
        {"path": "big-2", "content": "é" * (MiB // 2 + 1)},
        {
            "path": "big-3",
            "content": base64.b64encode(b"\0" * (MiB + 3)).decode()[:1_400_000],
            "encoding": "base64",
        },
        {"path": "fits", "content": "a" * MiB},
        {"path": "too-many-chars", "content": "a" * 1_400_001},
        {"path": "x", "content": "x", "mode": "replace"},
        {"path": "x"},
    ]
    results = project.run_many("write", inputs)
    expected = ["INVALID_CONTENT"] * 4 + ["CONTENT_TOO_LARGE"] * 3 + ["OK"] + ["INVALID_INPUT"] * 3
    assert error_codes(results) == expected
    assert sorted(p.name for p in project.workspace.iterdir()) == ["fits"]
    canaries.assert_untouched(results)


def test_parent_directories(project: SkillProject, canaries: Canaries) -> None:
    first = [
        project.run("write", {"path": "deep/er/still/file.txt", "content": "1"}),
        project.run("write", {"path": "missing/file.txt", "content": "1", "createDirs": False}),
        project.run("write", {"path": "deep/er/still/file.txt/below", "content": "1"}),
    ]
    assert error_codes(first) == ["OK", "NOT_FOUND", "NOT_A_DIRECTORY"]
    assert not (project.workspace / "missing").exists()
    second = project.run_many(
        "read",
        [
            {"path": "deep/er/still/file.txt/below"},
            {"path": "deep/er"},
            {"path": "nothing.txt"},
            {"path": "deep/nothing/x"},
        ],
    )
    assert error_codes(second) == ["NOT_A_DIRECTORY", "NOT_A_FILE", "NOT_FOUND", "NOT_FOUND"]
    assert project.run("write", {"path": "deep/er", "content": "x", "mode": "overwrite"})["error"][
        "message"
    ].startswith("NOT_A_FILE: ")
    canaries.assert_untouched(first, second)


def test_read_limits(project: SkillProject, canaries: Canaries) -> None:
    (project.workspace / "ten.txt").write_bytes(b"0123456789")
    (project.workspace / "max.bin").write_bytes(b"\1" * 524288)
    (project.workspace / "over.bin").write_bytes(b"\1" * 524289)
    os.mkfifo(project.workspace / "fifo")
    inputs = [
        {"path": "ten.txt", "maxBytes": 10},
        {"path": "ten.txt", "maxBytes": 9},
        {"path": "max.bin", "maxBytes": 524288, "encoding": "base64"},
        {"path": "over.bin", "maxBytes": 524288},
        {"path": "ten.txt", "maxBytes": 0},
        {"path": "ten.txt", "maxBytes": 524289},
        {"path": "fifo"},
    ]
    results = project.run_many("read", inputs)
    assert error_codes(results) == [
        "OK",
        "FILE_TOO_LARGE",
        "OK",
        "FILE_TOO_LARGE",
        "INVALID_INPUT",
        "INVALID_INPUT",
        "NOT_A_FILE",
    ]
    write_fifo = project.run("write", {"path": "fifo", "content": "x", "mode": "append"})
    assert _code(write_fifo) == "NOT_A_FILE"
    canaries.assert_untouched(results, write_fifo)


def test_workspace_is_created_on_first_use(project: SkillProject) -> None:
    assert not project.workspace.exists()
    assert _ok(project.run("list", {})) == {
        "path": ".",
        "entries": [],
        "truncated": False,
        "hidden": 0,
    }
    assert project.workspace.is_dir()


def test_messages_start_with_the_code_and_name_no_absolute_path(
    project: SkillProject, canaries: Canaries
) -> None:
    results = project.run_many(
        "read", [{"path": "../x"}, {"path": "a\\b"}, {"path": ".env"}, {"path": "nope"}]
    )
    for result, code in zip(
        results,
        ["PATH_OUTSIDE_SANDBOX", "INVALID_PATH", "SENSITIVE_PATH", "NOT_FOUND"],
        strict=True,
    ):
        assert result["error"]["code"] == "TOOL_ERROR"
        assert result["error"]["message"].startswith(f"{code}: ")
    assert str(project.root) not in json.dumps(results)
    canaries.assert_untouched(results)


# --- list -----------------------------------------------------------------------------------


def test_list_sorted_breadth_first_with_hidden_credentials(
    project: SkillProject, outside: Path, canaries: Canaries
) -> None:
    ws = project.workspace
    for rel in [
        "b/z.txt",
        "b/a.txt",
        "a/inner/deep.txt",
        "B.txt",
        "é.txt",
        "\U0001f600",
        "\uff01",
        ".hidden",
    ]:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("12345")
    for rel in [".env", "b/id_rsa", "secrets/plan.txt", ".aws/credentials", "b/server.pem"]:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(canaries.token)
    (ws / "link").symlink_to(outside / "dir")
    os.mkfifo(ws / "pipe")
    results = project.run_many(
        "list",
        [
            {"recursive": True},
            {},
            {"path": "b"},
            {"recursive": True, "maxEntries": 3},
            {"path": "b/a.txt"},
            {"path": "none"},
        ],
    )
    full = _ok(results[0])
    assert [(e["path"], e["type"], e["size"]) for e in full["entries"]] == [
        (".hidden", "file", 5),
        ("B.txt", "file", 5),
        ("a", "directory", 0),
        ("b", "directory", 0),
        ("link", "symlink", 0),
        ("pipe", "other", 0),
        ("é.txt", "file", 5),
        ("\U0001f600", "file", 5),  # UTF-16 order: surrogates (D83D) before U+FF01
        ("\uff01", "file", 5),
        ("a/inner", "directory", 0),
        ("b/a.txt", "file", 5),
        ("b/z.txt", "file", 5),
        ("a/inner/deep.txt", "file", 5),
    ]
    assert (full["path"], full["truncated"], full["hidden"]) == (".", False, 5)
    top = _ok(results[1])
    assert len(top["entries"]) == 9 and top["hidden"] == 3
    assert _ok(results[2]) == {
        "path": "b",
        "entries": [
            {"path": "b/a.txt", "type": "file", "size": 5},
            {"path": "b/z.txt", "type": "file", "size": 5},
        ],
        "truncated": False,
        "hidden": 2,
    }
    short = _ok(results[3])
    assert [e["path"] for e in short["entries"]] == [".hidden", "B.txt", "a"] and short[
        "truncated"
    ] is True
    assert error_codes(results[4:]) == ["NOT_A_DIRECTORY", "NOT_FOUND"]
    canaries.assert_untouched(results)


def test_list_depth_is_at_most_16(project: SkillProject, canaries: Canaries) -> None:
    deep = project.workspace.joinpath(*[f"d{i}" for i in range(1, 21)])
    deep.mkdir(parents=True)
    output = _ok(project.run("list", {"recursive": True}))
    depths = [e["path"].count("/") + 1 for e in output["entries"]]
    assert depths == list(range(1, 17))
    canaries.assert_untouched(output)


# --- real links -----------------------------------------------------------------------------


def test_symbolic_links_are_never_followed(
    project: SkillProject, outside: Path, canaries: Canaries
) -> None:
    ws = project.workspace
    (ws / "real.txt").write_text("inside")
    (ws / "to-outside-file").symlink_to(outside / "outside.txt")
    (ws / "to-outside-dir").symlink_to(outside / "dir")
    (ws / "to-project").symlink_to(project.root)
    (ws / "chain-2").symlink_to(outside / "outside.txt")
    (ws / "chain-1").symlink_to(ws / "chain-2")
    (ws / "to-inside").symlink_to(ws / "real.txt")
    (ws / "relative-up").symlink_to("../canary.txt")
    (ws / "dangling").symlink_to(outside / "created-through-link.txt")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read", {"path": "to-outside-file"}),
        ("read", {"path": "to-outside-dir/inner.txt"}),
        ("read", {"path": "to-project/canary.txt"}),
        ("read", {"path": "to-project/.env"}),  # credential rule first: never reaches the link
        ("read", {"path": "chain-1"}),
        ("read", {"path": "to-inside"}),
        ("read", {"path": "relative-up"}),
        ("read", {"path": "dangling"}),
        ("write", {"path": "to-outside-file", "content": "pwned", "mode": "overwrite"}),
        ("write", {"path": "to-outside-file", "content": "pwned", "mode": "append"}),
        ("write", {"path": "to-outside-dir/new.txt", "content": "pwned"}),
        ("write", {"path": "to-outside-dir/sub/new.txt", "content": "pwned"}),
        ("write", {"path": "dangling", "content": "pwned"}),
        ("write", {"path": "dangling", "content": "pwned", "mode": "overwrite"}),
        ("write", {"path": "chain-1", "content": "pwned", "mode": "overwrite"}),
        ("list", {"path": "to-outside-dir"}),
        ("list", {"path": "to-project", "recursive": True}),
        ("list", {"path": "to-outside-dir/."}),
    ]
    results = project.run_many_tools(calls)
    expected = (
        ["PATH_OUTSIDE_SANDBOX"] * 3
        + ["SENSITIVE_PATH"]
        + ["PATH_OUTSIDE_SANDBOX"] * 13
        + ["INVALID_PATH"]
    )
    assert list(zip(calls, error_codes(results), strict=True)) == list(
        zip(calls, expected, strict=True)
    )
    assert not (outside / "created-through-link.txt").exists()
    assert (ws / "real.txt").read_text() == "inside"
    listing = _ok(project.run("list", {"recursive": True}))
    assert {e["path"]: e["type"] for e in listing["entries"]}["to-outside-dir"] == "symlink"
    assert not any(e["path"].startswith("to-outside-dir/") for e in listing["entries"])
    canaries.assert_untouched(results, listing)


def test_workspace_itself_a_link_is_refused(
    project: SkillProject, outside: Path, canaries: Canaries
) -> None:
    project.workspace.rmdir()
    project.workspace.symlink_to(outside / "dir")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read", {"path": "inner.txt"}),
        ("write", {"path": "new.txt", "content": "pwned"}),
        ("list", {}),
    ]
    # The runtime refuses it first: a package run from its directory has no consent for a
    # grant leading out of the project.
    refused = project.run_many_tools(calls)
    assert error_codes(refused) == ["PERMISSIONS_NOT_GRANTED"] * 3
    # Accepted where it leads, as a consent record names it: the skill's own check refuses.
    from splice_build.spec.manifest import Manifest
    from splice_build.spec.tree_digest import tree_digest

    digest = tree_digest(project.package_dir)
    assert digest is not None
    manifest = Manifest.from_json((project.package_dir / "manifest.json").read_bytes())
    accepted = (("workspace", os.path.realpath(outside / "dir")),)
    pkg = project.runtime.load_verified(
        project.package_dir, digest, manifest, accepted_links=accepted
    )
    results = [project.runtime.execute(pkg, tool, args).to_json() for tool, args in calls]
    assert error_codes(results) == ["PATH_OUTSIDE_SANDBOX"] * 3
    canaries.assert_untouched([*refused, *results])


def test_hard_links_are_refused(project: SkillProject, outside: Path, canaries: Canaries) -> None:
    ws = project.workspace
    os.link(outside / "outside.txt", ws / "alias.txt")
    (ws / "twin-a.txt").write_text("inside twin")
    os.link(ws / "twin-a.txt", ws / "twin-b.txt")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read", {"path": "alias.txt"}),
        ("read", {"path": "twin-a.txt"}),
        ("write", {"path": "alias.txt", "content": "pwned", "mode": "overwrite"}),
        ("write", {"path": "alias.txt", "content": "pwned", "mode": "append"}),
        ("write", {"path": "twin-b.txt", "content": "pwned", "mode": "overwrite"}),
        ("write", {"path": "alias.txt", "content": "pwned"}),
    ]
    results = project.run_many_tools(calls)
    assert error_codes(results) == ["HARD_LINK"] * 5 + ["ALREADY_EXISTS"]
    assert (ws / "twin-a.txt").read_text() == "inside twin"
    canaries.assert_untouched(results)


# --- races: the check-then-open window ------------------------------------------------------


def _swapping(swap: Callable[[int], None]) -> tuple[threading.Event, threading.Thread]:
    stop = threading.Event()

    def loop() -> None:
        n = 0
        while not stop.is_set():
            swap(n)
            n += 1

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return stop, thread


def _replace_with(target: Path, make: Callable[[Path], None], n: int) -> None:
    staging = target.with_name(f".staging-{n}")
    make(staging)
    os.replace(staging, target)  # atomic: the target always exists, as a file or as a link


def test_file_swapped_for_a_symlink_never_leaks(
    project: SkillProject, outside: Path, canaries: Canaries
) -> None:
    target = project.workspace / "race.txt"
    target.write_text("inside")

    def swap(n: int) -> None:
        if n % 2:
            _replace_with(target, lambda p: p.write_text("inside"), n)
        else:
            _replace_with(target, lambda p: p.symlink_to(outside / "outside.txt"), n)

    stop, thread = _swapping(swap)
    try:
        results = project.run_many("read", [{"path": "race.txt"}] * 40)
    finally:
        stop.set()
        thread.join()
    for result in results:
        assert (result["ok"] and result["output"]["content"] == "inside") or _code(
            result
        ) == "PATH_OUTSIDE_SANDBOX", result
    canaries.assert_untouched(results)


def test_directory_swapped_for_a_symlink_never_leaks(
    project: SkillProject, outside: Path, canaries: Canaries
) -> None:
    (outside / "dir" / "f.txt").write_text(f"outside {canaries.token}")
    target = project.workspace / "d"
    parked = project.workspace / "parked"
    target.mkdir()
    (target / "f.txt").write_text("inside")

    def swap(n: int) -> None:
        if n % 2:  # back to the real directory
            target.unlink()
            parked.rename(target)
        else:  # the directory becomes a link to a directory outside
            target.rename(parked)
            target.symlink_to(outside / "dir")

    stop, thread = _swapping(swap)
    try:
        results = project.run_many("read", [{"path": "d/f.txt"}] * 40)
    finally:
        stop.set()
        thread.join()
    for result in results:
        ok_inside = result["ok"] and result["output"]["content"] == "inside"
        assert ok_inside or _code(result) in {"PATH_OUTSIDE_SANDBOX", "NOT_FOUND"}, result
    (outside / "dir" / "f.txt").unlink()
    canaries.assert_untouched(results)


# Exchanges two paths atomically (renameat2 RENAME_EXCHANGE) until the stop file appears: the
# directory and the link trade places with no moment where either is missing, in a process of
# its own, so it swaps as fast as the kernel lets it (hundreds of thousands of times a call).
_EXCHANGER = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b, stop = (arg.encode() for arg in sys.argv[1:4])
if libc.renameat2(-100, a, -100, b, 2) != 0:
    sys.exit(f"renameat2: errno {ctypes.get_errno()}")
while not os.path.exists(stop):
    libc.renameat2(-100, a, -100, b, 2)
"""


def test_a_directory_exchanged_with_a_link_reaches_nothing_outside_with_the_file_view(
    project: SkillProject, outside: Path, canaries: Canaries, tmp_path: Path
) -> None:
    """The path checks of @splice/files alone lose this race (docs/skills.md); the OS layer's
    file view must keep every read, listing and write inside workspace/ all the same."""
    if not detect().file_view:
        os_layer_missing(f"no file view here: {detect().file_view_reason}")
    named = outside / "dir" / f"name-{canaries.token}"
    named.write_text("x")
    target = project.workspace / "d"
    target.mkdir()
    (target / "inner.txt").write_text("inside")
    (project.workspace / "alt").symlink_to(outside / "dir")
    stop = tmp_path / "stop"
    argv = [
        sys.executable,
        "-c",
        _EXCHANGER,
        str(target),
        str(project.workspace / "alt"),
        str(stop),
    ]
    exchanger = subprocess.Popen(argv)
    calls: list[tuple[str, dict[str, Any]]] = []
    for n in range(40):
        calls += [
            ("read", {"path": "d/inner.txt"}),
            ("list", {"recursive": True}),
            ("write", {"path": f"d/new-{n}.txt", "content": "pwned"}),
            ("write", {"path": f"d/sub-{n}/x.txt", "content": "pwned"}),
        ]
    try:
        results = project.run_many_tools(calls)
    finally:
        stop.touch()
        assert exchanger.wait(timeout=60) == 0
    if (project.workspace / "d").is_symlink():
        (project.workspace / "d").unlink()
    for (tool, _), result in zip(calls, results, strict=True):
        assert result["isolation"]["fileView"] == "minimal", result
        if tool == "read" and result["ok"]:
            assert result["output"]["content"] == "inside", result
    named.unlink()
    canaries.assert_untouched(results)


def test_file_swapped_for_a_hard_link_is_never_written(
    project: SkillProject, outside: Path, canaries: Canaries
) -> None:
    target = project.workspace / "race.txt"
    target.write_text("inside")

    def swap(n: int) -> None:
        if n % 2:
            _replace_with(target, lambda p: p.write_text("inside"), n)
        else:
            _replace_with(target, lambda p: os.link(outside / "outside.txt", p), n)

    stop, thread = _swapping(swap)
    try:
        results = project.run_many(
            "write", [{"path": "race.txt", "content": "pwned", "mode": "overwrite"}] * 30
        )
    finally:
        stop.set()
        thread.join()
    assert set(error_codes(results)) <= {"OK", "HARD_LINK", "PATH_OUTSIDE_SANDBOX"}
    canaries.assert_untouched(results)


def test_reads_stay_bounded_while_a_file_grows(project: SkillProject, canaries: Canaries) -> None:
    target = project.workspace / "grow.log"
    target.write_bytes(b"")

    def grow(n: int) -> None:
        with target.open("ab") as handle:
            handle.write(b"x" * 256)
        if target.stat().st_size > 16384:
            target.write_bytes(b"")

    stop, thread = _swapping(grow)
    try:
        results = project.run_many("read", [{"path": "grow.log", "maxBytes": 4096}] * 30)
    finally:
        stop.set()
        thread.join()
    for result in results:
        if result["ok"]:
            output = result["output"]
            assert output["size"] == len(output["content"]) <= 4096
        else:
            assert _code(result) == "FILE_TOO_LARGE", result
    canaries.assert_untouched(results)


# --- the sandbox around it ------------------------------------------------------------------

GREEDY = {
    "read": (
        'import { readFileSync } from "node:fs";\n'
        "export default function read(input, ctx) {\n"
        '  return { path: "x", size: 0, encoding: "utf8", modifiedAt: "",\n'
        '           content: readFileSync(ctx.paths.project + "/" + input.path, "utf8") };\n'
        "}\n"
    ),
    "write": (
        'import { writeFileSync } from "node:fs";\n'
        "export default function write(input, ctx) {\n"
        '  writeFileSync(ctx.paths.project + "/" + input.path, input.content);\n'
        '  return { path: "x", bytes: 0, size: 0, created: true };\n'
        "}\n"
    ),
}


def test_greedy_variant_is_limited_to_workspace(tmp_path: Path, outside: Path) -> None:
    """Seed 001: code that skips the checks still cannot leave the declared workspace/."""
    variant = copy_skill("files", tmp_path / "variant")
    for name, source in GREEDY.items():
        (variant / "tools" / f"{name}.mjs").write_text(source)
    greedy = skill_project("files", tmp_path / "p", package_dir=variant)
    planted = plant_canaries(greedy, outside)
    results = [
        greedy.run("read", {"path": ".env"}),
        greedy.run("read", {"path": "splice.json"}),
        greedy.run("write", {"path": "evil.txt", "content": "pwned"}),
        greedy.run("write", {"path": "canary.txt", "content": "pwned", "mode": "overwrite"}),
    ]
    assert error_codes(results) == ["PERMISSION_DENIED"] * 4
    assert _ok(greedy.run("write", {"path": "workspace/fine.txt", "content": "ok"}))
    planted.assert_untouched(results)
