"""How the real binary starts and ends: closed standard descriptors, flushed output, exit codes.

``splice`` ends through ``cli.main.entry`` (threads joined, ``atexit`` run, streams flushed,
then ``os._exit``); these tests read what reaches the other end of its pipes.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from testing.cli import splice_executable
from testing.mcp_clients import installed_project


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return installed_project(tmp_path_factory.mktemp("edges"))


def _closing(*fds: int) -> Callable[[], None]:
    def close() -> None:  # runs in the child after its pipes are in place, before exec
        for fd in fds:
            os.close(fd)

    return close


def _run(project: tuple[Path, dict[str, str]], *args: str, closed: tuple[int, ...] = ()):
    cwd, env = project
    return subprocess.run(
        [splice_executable(), *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_closing(*closed),
    )


@pytest.mark.parametrize("closed", [(0,), (2,), (0, 2)], ids=["stdin", "stderr", "both"])
def test_a_tool_runs_with_standard_descriptors_closed(project, closed: tuple[int, ...]) -> None:
    done = _run(project, "run", "example.hello", "name=Ada", "--json", closed=closed)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == {"message": "Hello, Ada."}


def test_a_tool_runs_with_stdout_closed(project) -> None:
    """The sandbox's job channel must not take descriptor 1: the run succeeds, says nothing."""
    done = _run(project, "run", "example.hello", "name=Ada", closed=(1,))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_output_larger_than_a_pipe_arrives_whole(project) -> None:
    """The last buffered bytes are flushed before the process ends."""
    text = json.dumps(["x" * 1000] * 100)  # a pipe holds 64 KiB; one argument at most 128 KiB
    done = _run(project, "run", "json.parse", f"text={text}", "--json")
    assert done.returncode == 0, done.stderr[-500:]
    assert len(done.stdout) > 100_000
    assert json.loads(done.stdout)["output"]["value"] == json.loads(text)


def test_a_failed_command_keeps_its_exit_code(project) -> None:
    done = _run(project, "run", "example.nope", "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"]["code"] == "TOOL_NOT_FOUND"


@pytest.mark.parametrize("args", [("sync",), ("list",), ("run", "@splice/example.hello")])
def test_a_removed_working_directory_is_a_usage_error(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """Started in a directory that was removed (a shell left in a deleted build directory),
    every command crashed with ``INTERNAL_ERROR`` and wrote a crash report."""
    gone = tmp_path / "gone"
    gone.mkdir()
    done = subprocess.run(
        [splice_executable(), "--json", *args],
        cwd=gone,
        env={**os.environ, "SPLICE_HOME": str(tmp_path / "home")},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: os.rmdir(gone),  # runs after the child's chdir
    )
    assert done.returncode == 2, done.stderr
    assert json.loads(done.stdout)["error"]["code"] == "USAGE"
    assert not (tmp_path / "home" / "logs").exists()


def test_help_and_the_parsers_errors_need_no_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The working directory is read once the line is known to run a command: read first,
    ``splice --help`` and a mistyped command in a removed directory said only that the
    directory no longer exists (in process, as the real CLI)."""
    from splice_build.cli.main import main

    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    assert main(["--help"]) == 0
    assert "usage:" in capsys.readouterr().out
    for argv, message in [(["lst"], "unknown command 'lst'"), (["list"], "no longer exists")]:
        assert main(["--json", *argv]) == 2
        error = json.loads(capsys.readouterr().out)["error"]
        assert error["code"] == "USAGE" and message in error["message"], error
