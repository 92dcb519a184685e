"""Everything a tool can reach, walked from inside a tool, against what the sandbox grants.

One real package, run with the real `splice run`, walks breadth first from globalThis, its
input and context, import.meta, every built-in module of the bundled Node (its
``builtinModules``, asked of it now), the host's resolvers of a returned thenable, ctx.log's
inspect callback, the frames of every refusal the host throws (Error.prepareStackTrace),
and the live objects of what it was granted: every own property, getter and prototype
(``resources/reach_walk_tool.mjs``). The lists below are the grant, by allow-list: a Node
upgrade, or a host change, that makes something else reachable fails here until it is
reviewed and either refused in the host or added with its reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from splice_build.errors import ErrorCode
from splice_build.runtime import SpliceRuntime
from splice_build.runtime.builtins import allowed_builtins
from testing.cli import run_splice
from testing.hostile_packages import write_package
from testing.node_builtins import bundled_builtins

pytestmark = pytest.mark.node

WALK_TOOL = Path(__file__).with_name("resources") / "reach_walk_tool.mjs"

# Host functions a tool may call, by name: what the host hands out on purpose.
HOST_ENTRY_POINTS = {
    "capability": "ctx.capability",
    "log": "ctx.log",
    "fetch": "the fetch shim; the parent performs the request",
    "console": "the getter of the host's console on stderr",
    "stdout": "the getter of the host's stdout writer",
    "stderr": "the getter of the host's stderr writer",
    "stdin": "the getter of the host's empty stdin",
    "read": "the empty stdin's read",
    "write": "the stdout and stderr writers' write (to their own descriptor only)",
    "denied": "a refusing function in place of a process member, the undici dispatcher or a "
    "native handle's class",
    "getBuiltinModule": "process.getBuiltinModule behind the built-in allow-list",
    "guardedUmask": "process.umask that only reads",
    "realpath": "fs.realpath as its native form",
    "realpathSync": "fs.realpathSync as its native form",
    "guarded": "an fs function behind the descriptor, mode and creation guards",
    "promisesFunction": "an fs/promises function behind the descriptor guard",
    "handleMethod": "a FileHandle method that accepts only a handle open returned",
    "close": "fs.close and closeSync for the tool's own descriptors",
    "copy": "fs.cp and cpSync with the host's filter",
    "copyFile": "fs.copyFile behind the link guard",
    "remove": "fs.rm and rmdir behind the removal guard",
    "get": "fs.promises, guarded when first read",
    "fd_": "a FileHandle's fixed descriptor",
    "set": "a FileHandle's descriptor, which only Node's close may set to -1",
}

# Native classes of Node's C++ layer (or V8's) a tool reaches through an object it holds or
# a prototype, by name (the path where they have none). A C++ assertion that a wrong
# argument trips ends the tool's own process (TOOL_CRASHED), nothing else.
NATIVE_CLASSES = {
    "process": "the template of process: a new one has none of its members",
    "node:process.env.__proto__.constructor": "the template of process.env: a new one is the "
    "same environment, the declared variables only",
    "AbstractModuleSource": "V8's abstract base of WebAssembly.Module: not constructible",
    "FSEvent": "fs.watch's handle: start() is checked by the permission model",
    "StatWatcher": "fs.watchFile's handle: start() is checked by the permission model",
    "HandleWrap": "the base of FSEvent and StatWatcher, no state of its own",
    "Blob": "bytes in memory",
    "Zlib": "compression in memory",
    "Hash": "a digest in memory",
    "Hmac": "a MAC in memory",
    "CipherBase": "a cipher in memory",
    "Sign": "a signature in memory",
    "ECDH": "a key agreement in memory",
}


def walk(tmp_path: Path) -> dict[str, Any]:
    pkg = write_package(
        tmp_path,
        WALK_TOOL.read_text(encoding="utf-8"),
        name="walk",
        permissions={"capabilities": ["web.search"], "env": ["WALK_TOKEN"]},
    )
    done = run_splice(
        "--json",
        "run",
        "--dir",
        str(pkg),
        "walk.t",
        "--input",
        json.dumps({"modules": list(bundled_builtins())}),
        cwd=tmp_path,
        env={"WALK_TOKEN": "walk-token-value"},
    )
    envelope = json.loads(done.stdout)
    assert envelope["ok"], envelope
    return envelope["output"]


@pytest.fixture(scope="module")
def reached(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return walk(tmp_path_factory.mktemp("walk"))


def test_the_walk_reaches_the_whole_realm(reached: dict[str, Any]) -> None:
    # Measured with Node 24.19: ~3,670 objects, ~2,530 functions (~830 native), ~50 frames.
    assert reached["objects"] > 3000
    assert reached["objects"] > reached["surface"]  # the live objects added more
    assert reached["functions"] > 2000
    assert reached["frames"] > 0


def test_only_the_allowed_builtins_load(reached: dict[str, Any]) -> None:
    modules = reached["modules"]
    loaded = {name.removeprefix("node:") for name, code in modules.items() if code == "loaded"}
    assert loaded == set(allowed_builtins())
    refused = {code for code in modules.values() if code != "loaded"}
    assert refused == {"ERR_ACCESS_DENIED"}


def test_only_the_host_entry_points_are_reachable(reached: dict[str, Any]) -> None:
    names = {entry["name"] for entry in reached["hostFunctions"]}
    assert {"capability", "log", "fetch", "denied"} <= names
    unexpected = [
        entry for entry in reached["hostFunctions"] if entry["name"] not in HOST_ENTRY_POINTS
    ]
    assert unexpected == []


def test_no_native_class_beyond_the_reviewed_ones(reached: dict[str, Any]) -> None:
    found = {entry["name"] or entry["path"]: entry["path"] for entry in reached["nativeClasses"]}
    assert {"FSEvent", "Zlib", "Hash"} <= set(found)
    assert {name: path for name, path in found.items() if name not in NATIVE_CLASSES} == {}


def test_every_function_constructor_refuses_strings(reached: dict[str, Any]) -> None:
    constructors = {entry["name"]: entry["outcome"] for entry in reached["functionConstructors"]}
    assert {"Function", "AsyncFunction", "GeneratorFunction"} <= set(constructors)
    assert set(constructors.values()) == {"EvalError"}


def test_the_environment_is_the_declared_variables(reached: dict[str, Any]) -> None:
    assert reached["env"] == ["WALK_TOKEN"]


NATIVE_FILE_HANDLE = """
import { open } from 'node:fs/promises';
export default async function (input, ctx) {
  const handle = await open(`${ctx.paths.package}/SKILL.md`);
  const key = Object.getOwnPropertySymbols(handle).find((s) => s.description === 'kHandle');
  const NativeFileHandle = Object.getPrototypeOf(handle[key]).constructor;
  // The job channel's pipe, libuv's, any number: read with readStart, closed with close.
  const other = new NativeFileHandle(input.fd);
  await other.close();
  return { closed: input.fd };
}
"""


@pytest.mark.parametrize("fd", [0, 3])
def test_the_native_file_handle_class_is_refused(tmp_path: Path, fd: int) -> None:
    pkg = write_package(tmp_path, NATIVE_FILE_HANDLE, name="natives")
    runtime = SpliceRuntime(project_root=tmp_path, env={})
    result = runtime.execute(runtime.load(pkg), "t", {"fd": fd})
    assert not result.ok
    assert result.error is not None
    assert result.error.code == ErrorCode.PERMISSION_DENIED
    assert "native handle's class" in result.error.message
