"""A workspace sync holds every member's state lock until it is done: one descriptor each.

Under a soft open-file limit below the member count (a user's is often 1,024, a larger
monorepo has more members) the sync ran out of files part-way and reported whichever file it
could not open next, an install journal among them with the hint to remove it.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path

import pytest

from splice_build.errors import EXIT_USAGE
from splice_build.tasks.sync import SYNC_MINIMUM_HEADROOM
from testing.cli import run_splice, splice_executable
from testing.projects import run_python

MEMBERS = 40
LOW = 24  # below the member count


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wide")
    (root / "pyproject.toml").write_text('[tool.splice.workspace]\nmembers = ["p/*"]\n')
    for n in range(MEMBERS):
        member = root / "p" / f"m{n:02d}"
        member.mkdir(parents=True)
        (member / "splice.json").write_text('{"specVersion": 1, "packages": {}}\n')
    return root


def _hard_limit_allows(needed: int) -> bool:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return hard == resource.RLIM_INFINITY or hard >= needed


@pytest.mark.skipif(not _hard_limit_allows(MEMBERS + 64), reason="the hard open-file limit")
def test_sync_raises_a_low_soft_limit_to_hold_every_lock(workspace: Path) -> None:
    for run in ("graph", "no-op"):
        done = run_splice("--json", "sync", cwd=workspace, open_files=LOW)
        assert done.code == 0, (run, done.stdout, done.stderr)
        assert len(done.json()["projects"]) == MEMBERS


def test_a_hard_limit_too_low_is_refused_before_any_lock(tmp_path: Path, workspace: Path) -> None:
    limit = MEMBERS + SYNC_MINIMUM_HEADROOM - 1
    done = subprocess.run(
        [splice_executable(), "--json", "sync", "--check"],
        cwd=workspace,
        env=os.environ,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)),
    )
    assert done.returncode == EXIT_USAGE, done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "INVALID_CONFIG"
    assert f"ulimit -n {MEMBERS + 64}" in error["hint"]


def test_a_journal_unread_for_lack_of_descriptors_is_not_called_bad(tmp_path: Path) -> None:
    """The journal of an interrupted install is what finishes or undoes it: a read that failed
    for the process's own limit must not advise removing it."""
    tmp = tmp_path / ".splice" / "tmp"
    tmp.mkdir(parents=True)
    (tmp / "journal.json").write_text('{"swaps": [], "lock": {}, "ranges": {}}')
    done = run_python(
        "import os, resource, sys\n"
        "from pathlib import Path\n"
        "from splice_build.install.transaction import _read_journal\n"
        "from splice_build.project.layout import ProjectLayout\n"
        "layout = ProjectLayout(Path(sys.argv[1]))\n"
        "hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir('/proc/self/fd')) - 1, hard))\n"
        "try:\n"
        "    _read_journal(layout)\n"
        "except OSError as exc:\n"
        "    print('errno', exc.errno)\n"
        "except Exception as exc:\n"
        "    print('refused', getattr(exc, 'code', exc))\n",
        str(tmp_path),
    )
    assert done.stdout.split() == ["errno", "24"], (done.stdout, done.stderr)


def test_no_descriptor_left_is_a_coded_error(capsys: pytest.CaptureFixture[str]) -> None:
    """Room is made for the members' locks up front, but each install's own files come on top:
    a first sync of 20 members under ``ulimit -n 36`` (real CLI) ended in ``INTERNAL_ERROR``
    with a crash report. Running out of descriptors, the process's or the system's, is
    ``INVALID_CONFIG`` naming the file, as a limit too low for the locks is."""
    import errno

    from splice_build.cli.errors import Exit, error_handler
    from splice_build.cli.output import Output

    for number in (errno.EMFILE, errno.ENFILE):
        with (
            pytest.raises(Exit) as ended,
            error_handler(Output(json_mode=True), home=None, verbose=False),
        ):
            raise OSError(number, os.strerror(number), "/p/.splice/tmp/x")
        assert ended.value.code == EXIT_USAGE
        error = json.loads(capsys.readouterr().out)["error"]
        assert error["code"] == "INVALID_CONFIG", error
        assert error["message"].startswith("no file descriptor was left to open /p/.splice/tmp/x")
