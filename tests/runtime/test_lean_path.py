"""The one-shot CLI path stays lean: `splice --version` and `splice run` (a package directory,
and an installed package) import no registry server, MCP, HTTP client, doit, jsonschema or
cryptography, nor the standard ``dataclasses``, ``inspect`` and ``hashlib``, nor what only a crash report, a login or a capability call needs (traceback,
datetime, platform), Node's version is read without starting a process, and a cold run forks
no probe child beyond the two it waits for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from splice_build.skills import skills_root
from testing.cli import run_splice

HEAVY = (
    "requests",
    "starlette",
    "uvicorn",
    "doit",
    "jsonschema",
    "cryptography",
    "splice_build.mcp.protocol",
    "splice_build.registry.http",
    # docs/runtime.md#where-the-time-goes: a few milliseconds each, none needed to run a tool
    "traceback",
    "datetime",
    "platform",
    # splice_build/records.py: the standard dataclasses imports inspect (~8 ms) and compiles
    # every class it makes
    "dataclasses",
    "inspect",
    # splice_build/spec/digests.py: a small package is hashed without loading OpenSSL (~4 ms)
    "hashlib",
    # splice_build/spec/validation.py: string.Template formats a failed check's message only
    "string",
    # splice_build/project/project_file.py: the key-id rule, only for a splice.json that
    # lists trusted signers
    "splice_build.spec.signing",
    # sdk.py _reuse_arg and project/project_file.py: a policy's and a registry URL's rules,
    # only for a reuse policy given or a splice.json that names a registry
    "splice_build.spec.reuse",
    "splice_build.project.registry_url",
    # a text file opened as ASCII looks the codec up: /proc's numbers are read as bytes
    # (isolation/kernel.py last_capability, runtime/sandbox.py _namespace_depth)
    "encodings.ascii",
)
REPO = Path(__file__).resolve().parents[2]


# The isolation probe children of a cold run on Linux (isolation/support.py): the namespaces
# and file view, and seccomp, which reports too whether it could set no_new_privs (where no
# filter is written for the machine, a child sets no_new_privs alone). Each is a fork of the
# whole parent, which the run waits for: a third child making the seccomp child's own
# ``prctl(PR_SET_NO_NEW_PRIVS)`` cost a cold run ~3-12 ms.
PROBE_FORKS = 2


def _modules_after(
    argv: list[str], cwd: Path, heavy: tuple[str, ...] = HEAVY
) -> tuple[int, list[str], int]:
    """Run ``splice <argv>`` in a fresh interpreter; its exit code, which of ``heavy`` it
    imported and how many children it forked with ``os.fork`` (probes: a sandbox is started
    by ``subprocess``)."""
    code = (
        "import json, os, sys\n"
        "forks, fork = [], os.fork\n"
        "def counted():\n"
        "    pid = fork()\n"
        "    forks.extend([pid] if pid else [])\n"
        "    return pid\n"
        "os.fork = counted\n"
        "from splice_build.cli.main import main\n"
        f"status = main({argv!r})\n"
        f"heavy = [m for m in {heavy!r} if m in sys.modules]\n"
        "sys.stderr.write('\\n' + json.dumps([status, heavy, len(forks)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    status, heavy, forks = json.loads(done.stderr.rsplit("\n", 1)[1])
    return status, heavy, forks


def test_version_is_lean(tmp_path: Path) -> None:
    assert _modules_after(["--version"], tmp_path) == (0, [], 0)


@pytest.mark.node
def test_run_dir_is_lean(tmp_path: Path) -> None:
    example = str(skills_root() / "example")
    status, heavy, _ = _modules_after(
        ["run", "--dir", example, "example.hello", "name=x"], tmp_path
    )
    assert (status, heavy) == (0, [])


@pytest.mark.node
def test_run_installed_is_lean(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for args in (("init",), ("add", "@splice/example")):
        done = run_splice(*args, cwd=project)
        assert done.code == 0, done.stderr
    status, heavy, forks = _modules_after(["run", "example.hello", "name=x"], project)
    assert (status, heavy, forks) == (0, [], PROBE_FORKS)


def test_node_version_comes_from_the_wheel_header() -> None:
    from splice_build.runtime.node import _probe_version, _wheel_binary

    binary = _wheel_binary()
    assert binary is not None
    assert binary.version == _probe_version(str(binary.path))


@pytest.mark.parametrize(
    ("header", "version"),
    [
        ("#define NODE_MAJOR_VERSION 24\n#define NODE_MINOR_VERSION 1\n", None),
        (
            "#define NODE_MAJOR_VERSION 24\n#define NODE_MINOR_VERSION 1\n"
            "#define NODE_PATCH_VERSION 2x\n",
            None,
        ),
        (
            "#define NODE_MAJOR_VERSION 24 \n#define NODE_MINOR_VERSION 1\n"
            "#define NODE_PATCH_VERSION 2\n",
            None,
        ),
        (
            "#define NODE_MAJOR_VERSION 24\r\n#define NODE_MINOR_VERSION 1\r\n"
            "#define NODE_PATCH_VERSION 2\r\n",
            (24, 1, 2),  # read as text: the newlines are translated
        ),
        (
            "/* x */\n#define NODE_MAJOR_VERSION 24\n#define NODE_MINOR_VERSION 1\n"
            "#define NODE_PATCH_VERSION 2\n#define NODE_PATCH_VERSION 3\n",
            (24, 1, 2),
        ),
    ],
)
def test_the_wheel_header_is_read_as_its_defines(
    tmp_path: Path, header: str, version: tuple[int, int, int] | None
) -> None:
    """The header's first ``#define NODE_<part>_VERSION <digits>`` lines, nothing looser
    (anything else: None, and ``node --version`` is asked)."""
    from splice_build.runtime.node import _header_version

    (tmp_path / "include" / "node").mkdir(parents=True)
    (tmp_path / "include" / "node" / "node_version.h").write_bytes(header.encode())
    assert _header_version(tmp_path) == version


# A no-op ``splice sync`` answers from stat caches and no-op records (docs/monorepo.md): it
# needs neither the task graph, nor the registry, nor the permission and schema code that
# an install or a changed lock needs (issue #22 item 4: each import is ~1-2 ms per run).
NOOP_SYNC_HEAVY = (
    "doit",
    "jsonschema",
    "splice_build.registry.client",
    "splice_build.install.installer",
    "splice_build.spec.permissions",
    "splice_build.spec.validation",
    # Smaller (~1 ms together, where the target's margin is about that): ``signal`` builds
    # three enums, ``unicodedata`` is a shared library, and the UTF-16 codec was a sort key.
    "signal",
    "unicodedata",
    "encodings.utf_16_be",
    # What only hashing (the tree digest), writing (atomic writes) or a registry session
    # needs: ~0.1-0.2 ms each.
    "splice_build.spec.tree_digest",
    "splice_build.spec.digests",
    "splice_build.project.atomic",
    "splice_build.install.session",
    # Only a sync whose open-file limit must be raised (tasks/sync.py room_for_members).
    "splice_build.open_files",
    # Only a lock file open to more than its owner (project/locking.py _close_to_readers):
    # a member's state.lock is made 0600.
    "splice_build.project.creation_modes",
)


def test_noop_sync_is_lean(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.splice.workspace]\nmembers = ["p*"]\n')
    for name in ("p0", "p1"):
        (tmp_path / name).mkdir()
        spec = {"specVersion": 1, "packages": {"@splice/example": "^0.1.0"}}
        (tmp_path / name / "splice.json").write_text(json.dumps(spec))
    for _ in range(2):  # the second run records the files the first one installed
        done = run_splice("sync", cwd=tmp_path)
        assert done.code == 0, done.stderr
    assert _modules_after(["sync"], tmp_path, NOOP_SYNC_HEAVY) == (0, [], 0)
