"""Fuzz runs leave no scratch directories behind (fuzz/scratch.py): removed at a normal exit,
and, when libFuzzer ends the process with C's exit(), by the next run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fuzz.scratch import PREFIX, remove_stale, scratch_dir

REPO = Path(__file__).resolve().parents[2]


def _make_in_child(base: Path, end: str) -> Path:
    code = (
        "import os, sys\n"
        "from fuzz.scratch import scratch_dir\n"
        f"path = scratch_dir('t', {str(base)!r})\n"
        "(path / 'input').write_bytes(b'x')\n"
        "print(path, flush=True)\n"
        f"{end}\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return Path(done.stdout.strip())


def test_a_normal_exit_removes_its_directory(tmp_path: Path) -> None:
    path = _make_in_child(tmp_path, "sys.exit(0)")
    assert path.name.startswith(PREFIX) and path.parent == tmp_path
    assert not path.exists()


def test_an_abrupt_exit_leaves_it_to_the_next_run(tmp_path: Path) -> None:
    left = _make_in_child(tmp_path, "os._exit(0)")  # as libFuzzer's exit() does
    assert (left / "input").exists()
    mine = scratch_dir("next", str(tmp_path))
    assert not left.exists()
    assert mine.exists() and str(os.getpid()) in mine.name


def test_a_live_process_keeps_its_directory(tmp_path: Path) -> None:
    mine = scratch_dir("live", str(tmp_path))
    other = tmp_path / "splice-fuzz-notapid-x"
    other.mkdir()
    assert remove_stale(tmp_path) == []
    assert mine.exists() and other.exists()
