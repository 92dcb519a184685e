"""Run the installed `splice` console script as a subprocess, the way people do."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def splice_executable() -> str:
    exe = Path(sys.executable).with_name("splice")
    if not exe.exists():
        raise AssertionError(
            f"BUG: the splice console script is not installed next to {sys.executable}"
        )
    return str(exe)


def foreground_signals(*ignored: int) -> Callable[[], None]:
    """A ``preexec_fn``: SIGINT and SIGHUP at their defaults, as a terminal's foreground job
    has them, then each of ``ignored`` ignored.

    A test run started under ``nohup`` or in the background by a script ignores them, its
    children inherit that, and a server keeps a stop signal it was started ignoring ignored
    (splice_build/stopping.py): a test sending one would wait for a stop that never comes."""

    def preexec() -> None:
        for signum in (signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        for signum in ignored:
            signal.signal(signum, signal.SIG_IGN)

    return preexec


@dataclass(frozen=True)
class Completed:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_splice(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
    address_space: int | None = None,
    open_files: int | tuple[int, int] | None = None,
) -> Completed:
    """Run `splice ARGS…` with the test's environment (SPLICE_HOME etc. from os.environ).

    ``address_space``: the command's ``RLIMIT_AS`` in bytes, so that a read that never ends
    fails with ``MemoryError`` there instead of taking the test machine's memory.
    ``open_files``: the command's soft ``RLIMIT_NOFILE`` (a user's default is often 1,024,
    a test machine's far more), or its (soft, hard) pair (a service's ``LimitNOFILE=``)."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [splice_executable(), *args],
        cwd=cwd,
        env=full_env,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=None if input is not None else subprocess.DEVNULL,
        preexec_fn=_limits(address_space, open_files),
    )
    return Completed(proc.returncode, proc.stdout, proc.stderr)


def _limits(
    address_space: int | None, open_files: int | tuple[int, int] | None
) -> Callable[[], None] | None:
    if address_space is None and open_files is None:
        return None

    def apply() -> None:
        import resource

        if address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        if isinstance(open_files, tuple):
            resource.setrlimit(resource.RLIMIT_NOFILE, open_files)
        elif open_files is not None:
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, hard))

    return apply


def main_in_fresh_process(
    argv: Sequence[str], *, cwd: Path, watched: Sequence[str]
) -> tuple[Completed, list[str]]:
    """``main(argv)`` of the CLI in a fresh interpreter in ``cwd``: its status and output,
    and which of the ``watched`` modules the command imported (what a lean path must not)."""
    code = (
        "import json, sys\nfrom splice_build.cli.main import main\n"
        f"status = main({list(argv)!r})\n"
        f"imported = [m for m in {list(watched)!r} if m in sys.modules]\n"
        "sys.stderr.write('\\n' + json.dumps([status, imported]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    status, imported = json.loads(done.stderr.rsplit("\n", 1)[1])
    return Completed(status, done.stdout, done.stderr), imported


def answer_on_terminal(argv: list[str], cwd: Path, answer: str) -> str:
    """Run ``argv`` with stdin and stderr on a pseudo-terminal; answer the first ``[y/N]``
    prompt with ``answer``; everything the terminal showed."""
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=secondary,
        stdout=subprocess.PIPE,
        stderr=secondary,
        env={**os.environ, "NO_COLOR": "1"},
    )
    os.close(secondary)
    seen = b""
    answered = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([primary], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
            if not answered and b"[y/N]" in seen:
                os.write(primary, answer.encode() + b"\n")
                answered = True
        elif process.poll() is not None:
            break
    process.wait(timeout=30)
    os.close(primary)
    assert process.stdout is not None
    process.stdout.close()
    assert answered, seen.decode(errors="replace")
    return seen.decode()
