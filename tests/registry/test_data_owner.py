"""A registry's data directory that a stranger may replace is refused before any store is
opened (splice_build/registry/data_owner.py; docs/registry.md).

The attack, on the old code: ``--data /srv/shared/registry`` in a directory every user may
write (not sticky). uid 65534 moved the data directory aside and put back one of theirs, with
a copy of ``registry.db`` naming a user of theirs; root's next ``registry admin create-user
mallory`` answered "User mallory already exists", and a server would have served their store.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from testing.cli import run_splice
from testing.other_user import NOBODY, as_another_user

HINT_START = "whoever may write the data directory or rename it away is the registry's admin"


def _refused(*args: str) -> str:
    done = run_splice("--json", "registry", *args, timeout=20)  # the old serve served
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "INVALID_CONFIG", done.stdout
    assert error["hint"].startswith(HINT_START)
    return error["message"]


def test_a_data_directory_in_a_directory_every_user_may_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    data = shared / "registry"
    message = _refused("serve", "--data", str(data), "--port", "0")
    assert message == (
        f"--data {data} cannot be used: another user may replace {data} "
        f"(every user may write {shared})"
    )
    assert not data.exists()
    shared.chmod(0o1777)  # sticky, as /tmp: the entry the server makes is its own
    data.mkdir()
    done = run_splice("registry", "admin", "create-user", "alice", "--data", str(data))
    assert done.code == 0, done.stderr


@as_another_user
def test_a_data_directory_of_another_user_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "registry"
    data.mkdir()
    os.chown(data, NOBODY, NOBODY)
    message = _refused("admin", "create-user", "alice", "--data", str(data))
    assert message == f"--data {data} cannot be used: it is owned by user {NOBODY}"
    assert list(data.iterdir()) == []


def test_a_data_directory_every_user_may_write_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "registry"
    data.mkdir()
    data.chmod(0o777)
    message = _refused("admin", "create-user", "alice", "--data", str(data))
    assert message == f"--data {data} cannot be used: every user may write it"
