"""A file grant that a symbolic link of the checkout takes out of the project is asked for, and
refused at every run, until this machine accepted where it leads
(docs/security.md#consent-on-this-machine).

``@acme/greeter`` is granted ``fs.read: ["docs"]`` and its tool returns
``docs/id_ed25519``. Consent was asked only beyond what the lock or the consent record
granted, so on the old code (a) a clone shipping ``docs -> ~/.ssh`` with the lock installed
unasked and ``splice run`` returned the private key, and (b) a project consented to while
``docs`` was a directory followed a pull's ``docs -> ~/.ssh`` through ``sync``, ``run`` and
``mcp`` (and ``verify``'s ``installed`` check passed it once ``run`` refused it). Real CLI,
real registry server, real sandbox."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.cli import Completed, run_splice
from testing.hostile_packages import tool_returning
from testing.mcp_clients import LineClient, child_env, splice_argv
from testing.project_state import state_bytes
from testing.registry_fixtures import new_project, publish
from testing.registry_server import RunningRegistry, registry_server

SECRET = "PRIVATE-KEY-BYTES"
READER = tool_returning(
    "fs.readFileSync(`${ctx.paths.project}/docs/id_ed25519`, 'utf8')",
    imports="import fs from 'node:fs';",
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningRegistry]:
    root = tmp_path_factory.mktemp("outside-links")
    publish(
        root / "data",
        root / "work",
        permissions={"fs": {"read": ["docs"]}},
        files={"tools/hello.js": READER},
    )
    with registry_server(root / "data", admin=False) as running:
        yield running


def _installed(server: RunningRegistry, root: Path) -> Path:
    """A project that installed greeter, accepted, while ``docs`` was its own directory."""
    project = new_project(root, {"@acme/greeter": "1.0.0"})
    data = json.loads((project / "splice.json").read_text(encoding="utf-8"))
    (project / "splice.json").write_text(json.dumps({**data, "registry": server.url}))
    (project / "docs").mkdir()
    (project / "docs" / "id_ed25519").write_text("only docs", encoding="utf-8")
    assert _splice(project, "install", "--accept-permissions").code == 0
    return project


def _ssh(tmp_path: Path) -> Path:
    """The user's ``~/.ssh`` with a private key."""
    ssh = tmp_path / "me" / ".ssh"
    ssh.mkdir(parents=True)
    (ssh / "id_ed25519").write_text(SECRET, encoding="utf-8")
    return ssh


def _splice(project: Path, *args: str) -> Completed:
    done = run_splice("--json", *args, cwd=project)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _refused(done: Completed) -> dict:
    """The error of a failed command (or of its one project), which never shows the key."""
    assert done.code == 1, done.stdout
    assert SECRET not in done.stdout + done.stderr
    out = done.json()
    return out["projects"][0]["error"] if "projects" in out else out["error"]


def _runs_after_accepting(project: Path) -> None:
    """``splice install --accept-permissions`` records the link, and the tool then runs."""
    assert _splice(project, "install", "--accept-permissions").code == 0
    done = _splice(project, "run", "greeter.hello", "name=x")
    assert (done.code, done.json()["output"]) == (0, SECRET)
    # kept by the next sync, which runs the graph and asks nothing: the link is accepted
    assert _splice(project, "sync").code == 0
    done = _splice(project, "run", "greeter.hello", "name=x")
    assert (done.code, done.json()["output"]) == (0, SECRET)


@pytest.mark.parametrize("ships_copy", [True, False], ids=["with-splice-dir", "fresh"])
def test_a_clones_link_out_of_the_project_is_asked_for(
    server: RunningRegistry, tmp_path: Path, ships_copy: bool
) -> None:
    author = _installed(server, tmp_path / "author")
    clone = tmp_path / "clone"
    shutil.copytree(author, clone, symlinks=True, ignore=shutil.ignore_patterns("docs"))
    (clone / ".splice" / "statcache.json").unlink()
    if not ships_copy:
        shutil.rmtree(clone / ".splice")
    ssh = _ssh(tmp_path)
    os.symlink(ssh, clone / "docs")
    line = f"read files: {clone}/docs (a link to {ssh})"
    if ships_copy:  # this home checked the copy's artifact: only the link stops it
        error = _refused(_splice(clone, "run", "greeter.hello", "name=x"))
        assert (error["code"], error["details"]) == ("PERMISSIONS_NOT_GRANTED", [line])
        assert error["hint"] == "Run `splice install`: it asks for them."
    before = state_bytes(clone)
    error = _refused(_splice(clone, "install"))
    assert (error["code"], error["details"]) == ("PERMISSIONS_NOT_ACCEPTED", [line])
    assert state_bytes(clone) == before
    _runs_after_accepting(clone)


def test_b_a_pulled_link_out_of_the_project_is_asked_for(
    server: RunningRegistry, tmp_path: Path
) -> None:
    project = _installed(server, tmp_path / "project")
    assert _splice(project, "sync").code == 0  # a no-op: the next one may skip the graph
    shutil.rmtree(project / "docs")
    ssh = _ssh(tmp_path)
    os.symlink(ssh, project / "docs")  # the pull
    line = f"read files: {project}/docs (a link to {ssh})"
    check = _splice(project, "sync", "--check")
    assert check.code == 1, check.stdout
    (change,) = check.json()["projects"][0]["changes"]
    assert SECRET not in check.stdout + check.stderr
    assert (change["action"], change["consent"]) == ("keep", [line])
    error = _refused(_splice(project, "sync"))
    assert (error["code"], error["details"]) == ("PERMISSIONS_NOT_ACCEPTED", [line])
    error = _refused(_splice(project, "run", "greeter.hello", "name=x"))
    assert (error["code"], error["details"]) == ("PERMISSIONS_NOT_GRANTED", [line])
    verify = _splice(project, "verify", "@acme/greeter")  # its installed check is run's
    installed = {c["id"]: c for c in verify.json()["checks"]}["installed"]
    assert (verify.code, installed["status"]) == (1, "failed")
    assert installed["code"] == "PERMISSIONS_NOT_GRANTED" and line in installed["message"]
    client = LineClient(splice_argv("mcp"), env=child_env(), cwd=project)
    try:
        client.initialize()
        client.request({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        listed = client.receive()
        call = {"name": "acme_greeter_hello", "arguments": {"name": "x"}}
        client.request({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
        called = client.receive()
    finally:
        client.close()
    assert listed["result"]["tools"] == []
    assert SECRET not in json.dumps(called)
    assert called["result"]["isError"] is True
    assert called["result"]["_meta"]["io.spliceloom/error"] == {"code": "PERMISSIONS_NOT_GRANTED"}
    _runs_after_accepting(project)
