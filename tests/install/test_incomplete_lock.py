"""A splice.lock entry that lacks a field never makes a check pass (docs/security.md#incomplete-lock-entries).

Each optional field of the lock entry schema (``schemas/lock_entry.schema.json``, walked here,
not listed) is removed in turn from the lock of a signed package with permissions, installed
from a real registry on 127.0.0.1. Then, with the real `splice` binary: ``run``, ``list``,
``verify`` and ``splice mcp`` (tools/list and tools/call) refuse the package with
``LOCK_INCOMPLETE`` and the hint ``splice install`` when the schema says a check depends on the
field; otherwise the checks still run (a tampered copy is ``INSTALLED_PACKAGE_MODIFIED``).
Tampered code never runs either way. ``splice install`` then re-derives the field from the
verified cached artifact, asking consent again when the grant is what was missing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
import pytest

from splice_build.project.layout import ProjectLayout
from testing.cli import Completed, run_splice
from testing.mcp_clients import child_env, sdk_stdio, splice_argv
from testing.registry import package_dir
from testing.registry_server import RunningRegistry, registry_server, user_token

pytestmark = pytest.mark.node

PACKAGE = "@lockt/greeter"
MCP_NAME = "lockt_greeter_hello"
TAMPERED = "TAMPERED-CODE-RAN"
SCHEMA = json.loads(
    resources.files("splice_build").joinpath("schemas", "lock_entry.schema.json").read_text()
)
OPTIONAL = [name for name in SCHEMA["properties"] if name not in SCHEMA["required"]]
CHECKED = {n for n in OPTIONAL if SCHEMA["properties"][n].get("x-when-absent") == "unknown"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningRegistry]:
    """A registry with @lockt/greeter@1.0.0, signed, asking for an environment variable."""
    base = tmp_path_factory.mktemp("incomplete-lock")
    home = base / "publisher"
    env = {"HOME": str(home), "SPLICE_HOME": str(home / ".splice")}
    with registry_server(base / "data", "--publish-limit", "0", "--request-limit", "0") as running:
        token = user_token(running, "lockt")
        as_publisher = {**env, "SPLICE_TOKEN": token}
        assert run_splice("keys", "generate", "lockt", env=env).code == 0
        registry = ("--registry", running.url)
        first = package_dir(base, "lockt", "greeter", "0.9.0")  # creates the namespace
        assert run_splice("publish", str(first), *registry, env=as_publisher).code == 0
        keys = run_splice(
            "keys", "register", "@lockt", "--key", "lockt", *registry, env=as_publisher
        )
        assert keys.code == 0, keys.stderr
        source = package_dir(base, "lockt", "greeter", "1.0.0", permissions={"env": ["GREETING"]})
        published = run_splice(
            "publish", str(source), "--sign", "--key", "lockt", *registry, env=as_publisher
        )
        assert published.code == 0, published.stderr
        yield running


def _lock(project: Path) -> dict[str, Any]:
    return json.loads((project / "splice.lock").read_text())


def _entry(project: Path) -> dict[str, Any]:
    return _lock(project)["packages"][PACKAGE]


def _installed(tmp_path: Path, server: RunningRegistry) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    assert run_splice("init", "--registry", server.url, cwd=project).code == 0
    added = run_splice("add", PACKAGE, "--accept-permissions", cwd=project)
    assert added.code == 0, added.stderr
    assert sorted(_entry(project)) == sorted(SCHEMA["properties"]), "every field is exercised"
    return project


def _error(done: Completed) -> dict[str, Any]:
    assert done.code == 1, done.stdout + done.stderr
    return done.json()["error"]


def _mcp(project: Path) -> tuple[set[str], bool, str]:
    """tools/list names, and tools/call of our tool: (is_error, first text)."""
    found: list[Any] = []

    async def scenario() -> None:
        async with sdk_stdio(splice_argv("mcp"), env=child_env(), cwd=project) as session:
            tools = {tool.name for tool in (await session.list_tools()).tools}
            called = await session.call_tool(MCP_NAME, {"name": "Ada"})
            found.extend([tools, called.is_error, called.content[0].text])

    anyio.run(scenario)
    return found[0], found[1], found[2]


def _assert_refused(project: Path, field: str) -> None:
    """Every way to reach the package's code or verdict refuses it with LOCK_INCOMPLETE."""
    ran = _error(run_splice("--json", "run", "greeter.hello", "name=Ada", cwd=project))
    assert ran["code"] == "LOCK_INCOMPLETE", ran
    assert field in ran["message"] and "splice install" in ran["hint"]
    rows = run_splice("--json", "list", cwd=project).json()
    assert [(r["name"], r["status"], r["code"]) for r in rows] == [
        (PACKAGE, "invalid", "LOCK_INCOMPLETE")
    ]
    assert "splice install" in rows[0]["hint"]
    text = run_splice("list", cwd=project).stdout
    assert "LOCK_INCOMPLETE" in text and "splice install" in text
    verified = run_splice("--json", "verify", f"{PACKAGE}@1.0.0", cwd=project)
    assert verified.code == 1
    checks = {c["id"]: c for c in verified.json()["checks"]}
    assert checks["installed"]["status"] == "failed"
    assert checks["installed"]["message"].startswith("LOCK_INCOMPLETE: ")
    assert "splice install" in checks["installed"]["message"]
    tools, is_error, message = _mcp(project)
    assert MCP_NAME not in tools
    assert is_error and message.startswith("LOCK_INCOMPLETE: "), message


def _tamper(project: Path) -> None:
    hello = ProjectLayout(project).package_dir(PACKAGE) / "tools" / "hello.js"
    hello.write_text(f'export default function hello() {{ return {{ message: "{TAMPERED}" }}; }}\n')


@pytest.mark.parametrize("field", OPTIONAL)
def test_a_lock_without_a_field_runs_nothing_unchecked_and_install_restores_it(
    field: str, server: RunningRegistry, tmp_path: Path
) -> None:
    project = _installed(tmp_path, server)
    original = _lock(project)
    incomplete = json.loads(json.dumps(original))
    del incomplete["packages"][PACKAGE][field]
    (project / "splice.lock").write_text(json.dumps(incomplete, indent=2) + "\n")

    if field in CHECKED:
        _assert_refused(project, field)
    else:  # its absence is a value: the package is intact and every check still runs
        ran = run_splice("run", "greeter.hello", "name=Ada", cwd=project)
        assert ran.code == 0, ran.stderr
        assert json.loads(ran.stdout) == {"message": "Hello, Ada."}

    _tamper(project)
    expected = "LOCK_INCOMPLETE" if field in CHECKED else "INSTALLED_PACKAGE_MODIFIED"
    ran = run_splice("--json", "run", "greeter.hello", "name=Ada", cwd=project)
    assert TAMPERED not in ran.stdout + ran.stderr
    assert _error(ran)["code"] == expected
    tools, is_error, message = _mcp(project)
    assert MCP_NAME not in tools and is_error and message.startswith(f"{expected}: ")
    assert TAMPERED not in message

    info = run_splice("--json", "info", PACKAGE, cwd=project)
    assert info.code == 0, info.stderr
    installed = info.json()["installed"]
    assert installed["grant"] == (
        None if field == "permissions" else ["environment variable: GREETING"]
    )
    assert (installed["status"], installed["code"]) == ("invalid", expected)

    if field == "permissions":  # the grant is unknown: consent is asked as on a first install
        refused = _error(run_splice("--json", "install", cwd=project))
        assert refused["code"] == "PERMISSIONS_NOT_ACCEPTED"
        assert refused["details"] == ["environment variable: GREETING"]
        assert _lock(project) == incomplete, "nothing is recorded without consent"
        installed = run_splice("install", "--accept-permissions", cwd=project)
    else:
        installed = run_splice("install", cwd=project)
    assert installed.code == 0, installed.stderr
    # signedBy too: the restore verified the signature stored with the cached artifact
    assert _lock(project) == original, "install re-derived the field from the verified artifact"
    ran = run_splice("run", "greeter.hello", "name=Ada", cwd=project)
    assert ran.code == 0, ran.stderr
    assert json.loads(ran.stdout) == {"message": "Hello, Ada."}


def test_the_lock_reader_agrees_with_the_schema(tmp_path: Path) -> None:
    """An absent field the schema marks ``unknown`` is reported missing; nothing else is."""
    from splice_build.project.lockfile import load_lockfile

    full = {
        "version": "1.0.0",
        "integrity": "sha256-" + "a" * 64,
        "size": 1,
        "files": "sha256-" + "b" * 64,
        "registry": "http://r",
        "resolved": "http://r/packages/a/b/1.0.0/download",
        "permissions": {"env": ["X"]},
        "signedBy": "ed25519:" + "c" * 16,
    }
    assert sorted(full) == sorted(SCHEMA["properties"])
    for field in OPTIONAL:
        raw = {k: v for k, v in full.items() if k != field}
        document = {"lockfileVersion": 1, "packages": {"@a/b": raw}}
        (tmp_path / "splice.lock").write_text(json.dumps(document))
        entry = load_lockfile(tmp_path).get("@a/b")
        assert entry is not None
        assert entry.missing == ((field,) if field in CHECKED else ()), field
