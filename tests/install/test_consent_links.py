"""A file grant whose path in the project is a symbolic link is shown with where it leads.

The runtime resolves each grant to its real path and grants (and binds in the file view)
that: a cloned checkout's ``docs -> ~/.ssh`` with a package asking ``fs.read: ["docs"]`` let
the tool read the user's private key while the consent prompt said only
``read files: <project>/docs``."""

from __future__ import annotations

import os
from pathlib import Path

from splice_build.install.consent import ungranted_lines
from splice_build.spec.permissions import Permissions


def test_a_grant_through_a_link_names_its_real_path(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    real_root = tmp_path / "real-project"
    (real_root / "ws").mkdir(parents=True)
    root = tmp_path / "project"  # the project itself reached through a link: not flagged
    os.symlink(real_root, root)
    os.symlink(home / ".ssh", real_root / "docs")
    os.symlink("ws", real_root / "out")  # a link inside the project, to the project
    requested = Permissions.from_json(
        {"fs": {"read": ["docs", "docs/keys", "ws", "missing/x"], "write": ["out/new"]}}
    )
    ssh = os.path.realpath(home / ".ssh")
    ws = os.path.realpath(real_root / "ws")
    assert ungranted_lines(requested, None, root) == [
        f"read files: {root}/docs (a link to {ssh})",
        f"read files: {root}/docs/keys (a link to {ssh}/keys)",
        f"read files: {root}/ws",
        f"read files: {root}/missing/x",
        f"write files: {root}/out/new (a link to {ws}/new)",
    ]
