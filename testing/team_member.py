"""Splice called as a second local user, a member of the group a team's checkout belongs to.

The test process's Python lies where no other user may read it, so the other user's
commands run in a forked child that drops to their uid and groups after every module it
needs is imported (the SDK's own calls, as ``splice add``/``sync``/``remove`` make them).
"""

from __future__ import annotations

import importlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path

# uid 65534 and its primary group nogroup (65534): a member of the group in the user
# database, as a teammate is.
MEMBER = 65534
# Imported by the member's calls and not by the test's own as root before the fork (the
# modules this process has imported are the child's without reading a file).
_UNREADABLE_LATER = ("grp", "pwd", "re2")


def member_home(home: Path, shared: Path) -> Path:
    """A SPLICE_HOME of the member's below ``shared`` with a copy of ``home``'s registry: theirs
    alone, as Splice takes a home only when no other user may write it (copied under the
    team's umask 002 it would be writable by their group)."""
    theirs = shared / "member-home"
    shutil.copytree(home / "registry", theirs / "registry")
    for path in [theirs, *theirs.rglob("*")]:
        os.chown(path, MEMBER, MEMBER, follow_symlinks=False)
        path.chmod(path.stat().st_mode & ~0o022)
    return theirs


def as_member(home: Path, umask: int, action: Callable[[], object]) -> str:
    """Run ``action`` as the member under ``umask`` with ``home`` as SPLICE_HOME; the error
    code it raised (``"ok"`` when none), read back from the child's exit status."""
    from splice_build.errors import ErrorCode, SpliceError

    codes = ["ok", *(code.value for code in ErrorCode)]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child's)
        os.close(read)
        status = 255
        try:
            for name in _UNREADABLE_LATER:
                importlib.import_module(name)
            os.setgroups([MEMBER])
            os.setresgid(MEMBER, MEMBER, MEMBER)
            os.setresuid(MEMBER, MEMBER, MEMBER)
            os.umask(umask)
            os.environ["SPLICE_HOME"] = os.fspath(home)
            try:
                action()
                status = 0
            except SpliceError as exc:
                status = codes.index(exc.code.value)
                os.write(write, f"{exc}: {exc.details}".encode()[:4000])
        except BaseException:
            import traceback

            os.write(write, traceback.format_exc().encode()[-4000:])
        finally:
            os._exit(status)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    assert 0 <= code < len(codes), f"the member's call crashed (exit {code}): {said}"
    return codes[code]
