"""The commands that read an untrusted checkout (docs/security.md, "What is safe to run in an
untrusted checkout"): in a copy of another user's project, with its installed ``.splice/``
and a ``splice.json`` naming a registry on 127.0.0.1 that the user never chose, ``list`` and
``sync --check`` contact no host and change nothing outside the project, and ``run`` runs
nothing this machine has not checked against the artifact the lock pins
(docs/security.md#the-locks-files-digest-is-derived-here): an author who rewrote an installed
tool and the lock's files digest to match gets a refusal, then the registry's bytes from
``splice install``, never their code run. Real CLI, real registries, real sandbox."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from splice_build.spec.tree_digest import tree_digest
from testing.cli import Completed, run_splice
from testing.hostile_packages import tool_returning
from testing.netservers import serve
from testing.registry_fixtures import embedded_store, new_project, publish
from testing.registry_server import registry_server
from testing.workspaces import tree_snapshot

GREETER = ".splice/packages/@acme/greeter"
LEAK = tool_returning("{ message: process.env.MY_SECRET }")


def _clone(author: Path, checkout: Path, registry: str | None = None) -> Path:
    """``author`` copied as a clone copies it (new inodes, no stat cache), its splice.json
    naming ``registry`` when given."""
    shutil.copytree(author, checkout, symlinks=True)
    (checkout / ".splice" / "statcache.json").unlink(missing_ok=True)
    if registry is not None:
        project = json.loads((checkout / "splice.json").read_text(encoding="utf-8"))
        (checkout / "splice.json").write_text(json.dumps({**project, "registry": registry}))
    return checkout


def _rewrite_tool(project: Path, source: str) -> None:
    """The author's edit: the installed tool rewritten, the lock's files digest to match."""
    (project / GREETER / "tools/hello.js").write_text(source, encoding="utf-8")
    lock = json.loads((project / "splice.lock").read_text(encoding="utf-8"))
    lock["packages"]["@acme/greeter"]["files"] = tree_digest(project / GREETER)
    (project / "splice.lock").write_text(json.dumps(lock, indent=2) + "\n", encoding="utf-8")


def _author(tmp_path: Path, registry: str, home: Path) -> Path:
    author = new_project(tmp_path / "author", {"@acme/greeter": "1.0.0"})
    project = json.loads((author / "splice.json").read_text(encoding="utf-8"))
    (author / "splice.json").write_text(json.dumps({**project, "registry": registry}))
    done = run_splice("install", "--accept-permissions", cwd=author, env={"SPLICE_HOME": str(home)})
    assert done.code == 0, done.stderr
    return author


def _run(checkout: Path, env: dict[str, str]) -> Completed:
    return run_splice("--json", "run", "greeter.hello", "name=x", cwd=checkout, env=env)


def _code(done: Completed) -> str:
    """The error code a ``--json`` command that failed printed."""
    assert done.code != 0, done.stdout
    return str(done.json()["error"]["code"])


def _publish_greeter(store: Path, work: Path) -> None:
    publish(
        store,
        work,
        permissions={"env": ["MY_SECRET"]},
        files={"tools/hello.js": tool_returning("{ message: 'the registry' }")},
    )


def test_reading_an_untrusted_checkout_contacts_no_host_and_runs_nothing(
    tmp_path: Path,
) -> None:
    author_home = tmp_path / "author-home"
    _publish_greeter(embedded_store(author_home), tmp_path / "work")
    author = _author(tmp_path, "embedded", author_home)
    _rewrite_tool(author, LEAK)
    with serve() as server:
        checkout = _clone(author, tmp_path / "checkout", server.url("").rstrip("/"))
        outside = tree_snapshot(author)
        listed = run_splice("list", cwd=checkout)  # missing here until `splice install`
        assert (listed.code, listed.stdout) == (1, "@acme/greeter  1.0.0  (missing)\n")
        checked = run_splice("sync", "--check", cwd=checkout)
        assert checked.code == 0, checked.stdout + checked.stderr
        ran = _run(checkout, {"MY_SECRET": "s3"})
        assert server.seen == []
    assert tree_snapshot(author) == outside
    assert "s3" not in ran.stdout + ran.stderr
    assert _code(ran) == "NOT_INSTALLED"


def test_a_rewritten_tree_and_files_digest_get_the_registrys_bytes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _publish_greeter(data, tmp_path / "work")
    home = tmp_path / "home"  # the user's, shared by their projects
    with registry_server(data) as server:
        author = _author(tmp_path, server.url, tmp_path / "author-home")
        _rewrite_tool(author, LEAK)
        checkout = _clone(author, tmp_path / "checkout")
        env = {"SPLICE_HOME": str(home), "MY_SECRET": "s3cr3t"}
        assert _code(_run(checkout, env)) == "NOT_INSTALLED"
        assert _code(_run(checkout, env)) == "NOT_INSTALLED"
        # `splice info` said "installed: 1.0.0" here: the lock's version, not the copy's state
        info = run_splice("info", "@acme/greeter", cwd=checkout, env=env)
        assert "locked: 1.0.0 (installed copy: missing, NOT_INSTALLED)" in info.stdout
        assert "installed: 1.0.0" not in info.stdout, info.stdout
        done = run_splice("install", cwd=checkout, env=env)
        assert done.code == 0, done.stderr
        assert "are not the artifact's" in done.stderr
        info = run_splice("--json", "info", "@acme/greeter", cwd=checkout, env=env)
        assert info.json()["installed"]["status"] == "ok", info.stdout
    ran = _run(checkout, env)
    assert ran.json()["output"] == {"message": "the registry"}, ran.stdout + ran.stderr
    lock = json.loads((checkout / "splice.lock").read_text(encoding="utf-8"))
    assert lock["packages"]["@acme/greeter"]["files"] == tree_digest(checkout / GREETER)
    # A pull brings the rewrite again: the lock's digest is not the one derived here.
    _rewrite_tool(checkout, LEAK)
    assert _code(_run(checkout, env)) == "NOT_INSTALLED"
    # And a cache from before the records: derived from the cached artifact, the registry
    # stopped, and the tree restored from it.
    shutil.rmtree(home / "cache" / "artifacts" / "files")
    done = run_splice("sync", cwd=checkout, env=env)
    assert done.code == 0, done.stdout + done.stderr
    ran = _run(checkout, env)
    assert ran.json()["output"] == {"message": "the registry"}, ran.stdout + ran.stderr


def test_offline_without_the_artifact_an_underived_tree_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _publish_greeter(data, tmp_path / "work")
    with registry_server(data) as server:
        author = _author(tmp_path, server.url, tmp_path / "author-home")
    checkout = _clone(author, tmp_path / "checkout")  # its registry is stopped: offline
    done = run_splice("--json", "install", cwd=checkout)
    error = done.json()["error"]
    assert (done.code, error["code"]) == (1, "REGISTRY_UNREACHABLE"), done.stdout
    assert "splice install" in error["hint"]
    assert _code(_run(checkout, {})) == "NOT_INSTALLED"
