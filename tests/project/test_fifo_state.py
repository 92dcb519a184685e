"""A FIFO in place of a user or project state file is refused at once, never waited on.

Each reader of a file under ``SPLICE_HOME`` or a project that a checkout or a careless script
could replace (config, credentials, a signing key, a workspace's ``pyproject.toml`` and its
memo, ``splice.json`` during a transaction's finish) is called with a FIFO in the file's
place: it must answer (a coded error, or "nothing there") without waiting for a writer.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpliceError
from splice_build.install import transaction
from splice_build.project import keys, workspace
from splice_build.project.home import SpliceHome
from splice_build.project.layout import ProjectLayout
from testing.fifos import returns_without_waiting


def _home(tmp_path: Path) -> SpliceHome:
    home = SpliceHome.from_env({"SPLICE_HOME": str(tmp_path / "home")})
    home.ensure()
    return home


READERS: dict[str, tuple[Callable[[Path], Path], Callable[[Path], object]]] = {
    "config.json": (
        lambda tmp: _home(tmp).config_file,
        lambda tmp: _home(tmp).read_config(),
    ),
    "credentials.json": (
        lambda tmp: _home(tmp).credentials_file,
        lambda tmp: _home(tmp).read_credentials(),
    ),
    "a signing key": (
        lambda tmp: tmp / "key.pem",
        lambda tmp: keys.load_key_file(tmp / "key.pem", name="key"),
    ),
    "pyproject.toml (workspace config)": (
        lambda tmp: tmp / "pyproject.toml",
        lambda tmp: workspace.read_config(tmp / "pyproject.toml"),
    ),
    "pyproject.toml (workspace document)": (
        lambda tmp: tmp / "pyproject.toml",
        lambda tmp: workspace._load_document(tmp),
    ),
    "the workspace memo": (
        lambda tmp: tmp / "memo.json",
        lambda tmp: workspace._load_memo(tmp / "memo.json"),
    ),
    "splice.json at a transaction's finish": (
        lambda tmp: ProjectLayout(tmp).project_file,
        lambda tmp: transaction._finish(ProjectLayout(tmp), [], {"@acme/tool": "1.0.0"}),
    ),
}


@pytest.mark.parametrize("which", list(READERS))
def test_a_fifo_is_refused_not_waited_on(tmp_path: Path, which: str) -> None:
    place, read = READERS[which]
    fifo = place(tmp_path)
    fifo.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(fifo)
    try:
        answer = returns_without_waiting(lambda: read(tmp_path), fifo)
    except SpliceError as exc:
        assert exc.code in (
            ErrorCode.INVALID_CONFIG,
            ErrorCode.KEY_NOT_FOUND,
            ErrorCode.INVALID_PROJECT,
        ), exc
    else:
        assert answer in (None, {}), answer
