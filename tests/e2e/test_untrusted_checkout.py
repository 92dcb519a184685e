"""The commands that read an untrusted checkout without acting on it (docs/security.md,
"What is safe to run in an untrusted checkout"): in a copy of another user's project, with
its installed ``.splice/`` and a ``splice.json`` naming a registry on 127.0.0.1 that the
user never chose, ``list``, ``sync --check``, ``install`` and ``sync`` of what its lock pins
contact no host and change nothing outside the project; ``run`` is not among them: it runs the
checkout's installed tool under the grant its lock records, asking nothing. Real CLI, real
embedded registry, real sandbox."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from testing.cli import run_splice
from testing.hostile_packages import tool_returning
from testing.netservers import serve
from testing.registry_fixtures import embedded_store, new_project, publish
from testing.workspaces import tree_snapshot


def _checkout(tmp_path: Path, registry: str) -> Path:
    """The author's project, installed on their machine, copied as a clone copies it (new
    inodes), its splice.json naming ``registry``."""
    author_home = tmp_path / "author-home"
    publish(
        embedded_store(author_home),
        tmp_path / "work",
        permissions={"env": ["MY_SECRET"]},
        files={"tools/hello.js": tool_returning("{ message: process.env.MY_SECRET }")},
    )
    author = new_project(tmp_path / "author", {"@acme/greeter": "1.0.0"})
    done = run_splice(
        "install", "--accept-permissions", cwd=author, env={"SPLICE_HOME": str(author_home)}
    )
    assert done.code == 0, done.stderr
    checkout = tmp_path / "checkout"
    shutil.copytree(author, checkout, symlinks=True)
    project = json.loads((checkout / "splice.json").read_text(encoding="utf-8"))
    (checkout / "splice.json").write_text(json.dumps({**project, "registry": registry}))
    return checkout


def test_reading_an_untrusted_checkout_contacts_no_host_and_writes_only_there(
    tmp_path: Path,
) -> None:
    with serve() as server:
        checkout = _checkout(tmp_path / "t", server.url("").rstrip("/"))
        outside = tree_snapshot(tmp_path / "t" / "author")
        for words in (["list"], ["sync", "--check"], ["install"], ["sync"]):
            done = run_splice(*words, cwd=checkout)
            assert done.code == 0, (words, done.stdout + done.stderr)
        assert server.seen == []
    assert tree_snapshot(tmp_path / "t" / "author") == outside
    # Not safe: the checkout's lock grants its tool the variable, and nothing is asked.
    ran = run_splice("run", "greeter.hello", "name=x", cwd=checkout, env={"MY_SECRET": "s3"})
    assert ran.code == 0, ran.stderr
    assert json.loads(ran.stdout) == {"message": "s3"}
