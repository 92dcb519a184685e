"""Where the CLI keeps user state when ``SPLICE_HOME`` holds a ``~`` or no home is known.

``SPLICE_HOME`` set in a service unit, a container's environment or an env file is not
expanded by a shell. The CLI read it as a literal relative path for the embedded registry and
the artifact cache (``./~/state`` under whatever directory it was run from) while keys went to
the expanded path. A process with no ``HOME`` and a uid the user database does not know (a
container's arbitrary uid) crashed with a traceback.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from splice_build.errors import EXIT_USAGE
from testing.cli import run_splice, splice_executable


def test_a_tilde_in_splice_home_is_the_home_for_every_command(tmp_path: Path) -> None:
    home, cwd = tmp_path / "user", tmp_path / "work"
    cwd.mkdir()
    env = {"HOME": str(home), "SPLICE_HOME": "~/state"}
    assert run_splice("init", cwd=cwd, env=env).code == 0
    added = run_splice("--json", "add", "@splice/example", cwd=cwd, env=env)
    assert added.code == 0, added.stderr
    assert (home / "state" / "registry").is_dir()
    assert any((home / "state" / "cache" / "artifacts" / "sha256").iterdir())
    assert not (cwd / "~").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run as a uid with no user entry")
@pytest.mark.parametrize("home", [None, ""], ids=["HOME unset", "HOME empty"])
def test_no_home_directory_is_a_config_error(tmp_path: Path, home: str | None) -> None:
    """The real uid has no user entry (the effective one stays root, so Python can read its
    own files); without ``HOME`` or ``SPLICE_HOME`` there is nowhere to keep state."""
    import subprocess

    uid = _uid_without_entry()
    env = {key: value for key, value in os.environ.items() if key not in ("HOME", "SPLICE_HOME")}
    if home is not None:
        env["HOME"] = home
    done = subprocess.run(
        [splice_executable(), "--json", "search", "example"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: os.setresuid(uid, 0, 0),
    )
    assert done.returncode == EXIT_USAGE, done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "INVALID_CONFIG"
    assert "SPLICE_HOME" in error["hint"]
    assert list(tmp_path.iterdir()) == []


def _uid_without_entry() -> int:
    import pwd

    uid = 54321
    while True:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
        uid += 1
