"""The sandbox's file surface walked from inside a tool (fuzz/README.md, ``fs_walk``).

One long-lived real sandbox per configuration (``fs_walk``: in-process, the host's guards
alone; ``fs_walk_os``: the OS layer too, where this machine has it), kept by the runtime's
opt-in reuse, runs a hostile tool (``fuzz/js/fs_walk_tool.mjs``) that turns the bytes into
calls of every function of ``node:fs``, ``fs/promises``, a FileHandle and a Dir, with every
shape of argument. The oracle is the file system itself, not the host's checks: after each
call of the tool, nothing outside the write grant changed (content, mode, owner, link count,
link target), no secret of a file outside the grants reached the tool (its results, errors,
logs) or its write grant, no file the tool may write holds a set-ID bit or a write bit the
sandbox closes to others, a call on a path outside the grants answered as the same call on
its missing twin (a refused path says nothing of whether it exists), every error code the
tool saw is one Node or the system gives, and the tool ended as it should (it catches everything, so any other end is a refusal thrown
where no catch of the tool reaches).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from splice_build.errors import ErrorCode

Check = Callable[[bytes], None]
TOOL = Path(__file__).resolve().parent / "js" / "fs_walk_tool.mjs"
GRANTS = {"fs": {"read": ["workspace"], "write": ["out"]}}
# What a tool may see as an error's code: the system's (ENOENT…), Node's (ERR_…), and the
# names of the JavaScript errors Node's argument checks throw without one.
CODE = re.compile(r"E[A-Z0-9]+|ERR_[A-Z0-9_]+|TypeError|RangeError|SyntaxError")
# The calls of the tool made per input, and the operations in each: the oracle looks after
# each call.
CALLS = 16
OPS_PER_CALL = 3
# How a tool may end itself: Node's own throw outside any catch (fs.rm without a callback
# calls undefined); the job channel's pipes, which the tool may use
# (splice_build/runtime/host/PROTOCOL.md): a read of its job pipe takes the next job's frame
# (the call waits until its timeout), a write to its result pipe is no result; and
# Object.prototype left polluted for the next call of its process (`href` and `protocol`
# make every object a URL to Node: the host's load of the tool then fails). A read of part of
# the job pipe leaves the next frame broken: the host ends, TOOL_CRASHED with its own words
# (JOB_UNREADABLE). A refusal thrown where no catch reaches (PERMISSION_DENIED), any other
# crash or anything else is a finding.
OWN_ENDS = frozenset(
    {
        ErrorCode.TOOL_ERROR,
        ErrorCode.TIMEOUT,
        ErrorCode.INVALID_OUTPUT,
        ErrorCode.OUTPUT_TOO_LARGE,
        ErrorCode.TOOL_LOAD_FAILED,
    }
)
# A write stream whose constructor threw (an encoding Node does not know: ERR_UNKNOWN_ENCODING,
# after the open was scheduled) still opens, and its error has no listener: the tool ends with
# it, a refusal too, in this call or any later one of the process (Node's own, as for ENOENT).
UNHEARD_STREAM = "ERR_UNKNOWN_ENCODING"
JOB_UNREADABLE = "splice host: reading the next job failed"
# What /etc/passwd starts with: never granted, so never read.
PASSWD = "root:x:0:0:"


def _tree(root: Path, secrets: dict[str, str], links_out: bool) -> tuple[Path, Path]:
    """The project (a read grant ``workspace``, a write grant ``out``, files outside both
    holding ``secrets``) and a directory beside it; ``links_out`` plants links leading out
    of the grants (followed by Node without the file view: no refusal to look for)."""
    project, outside = root / "project", root / "outside"
    for directory in (project / "workspace" / "sub", project / "private", outside):
        directory.mkdir(parents=True)
    (project / "splice.json").write_text('{"packages": {}}\n', encoding="utf-8")
    (project / "secret.txt").write_text(secrets["project"], encoding="utf-8")
    (project / "secret.txt").chmod(0o600)
    (project / "private" / "s.txt").write_text(secrets["private"], encoding="utf-8")
    (project / "private" / "s.txt").chmod(0o640)
    (outside / "o.txt").write_text(secrets["outside"], encoding="utf-8")
    (project / "workspace" / "r.txt").write_text("readable\n", encoding="utf-8")
    (project / "workspace" / "sub" / "deep.txt").write_text("deep\n", encoding="utf-8")
    program = project / "workspace" / "setid"
    shutil.copy(shutil.which("true") or "/bin/true", program)
    program.chmod(0o4755)
    (project / "workspace" / "inner").symlink_to("sub")
    if links_out:
        (project / "workspace" / "up").symlink_to("..")
    return project, outside


def _fill_out(out: Path, links_out: bool) -> None:
    """The write grant as each input finds it."""
    out.mkdir(exist_ok=True)
    out.chmod(0o755)
    for entry in list(out.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    (out / "d").mkdir()
    for name in ("a", "b", "d/x"):
        (out / name).write_text(f"{name}\n", encoding="utf-8")
    if links_out:
        (out / "leak").symlink_to("../secret.txt")
        (out / "updir").symlink_to("../private")


def _entries(root: Path, skip: Path | None = None) -> Iterator[Path]:
    """``root`` and every entry below it (links not followed), but ``skip`` and below."""
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if here / d != skip]
        yield here
        for name in filenames + [d for d in dirnames if (here / d).is_symlink()]:
            yield here / name


def _snapshot(roots: list[Path], skip: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry under ``roots`` but ``skip``: type, mode, owner, links, size and content
    (or link target)."""
    seen: dict[str, tuple[Any, ...]] = {}
    for root in roots:
        for path in _entries(root, skip) if root.is_dir() else [root]:
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                body = os.readlink(path)
            elif stat.S_ISREG(info.st_mode):
                body = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                body = ""
            seen[str(path)] = (
                info.st_mode,
                info.st_uid,
                info.st_gid,
                info.st_nlink,
                info.st_size,
                info.st_mtime_ns,
                body,
            )
    return seen


def _changes(before: dict[str, tuple[Any, ...]], after: dict[str, tuple[Any, ...]]) -> list[str]:
    lines = [f"gone: {p}" for p in before if p not in after]
    lines += [f"new: {p}" for p in after if p not in before]
    lines += [
        f"changed: {p} {before[p]} -> {after[p]}"
        for p in before
        if after.get(p, before[p]) != before[p]
    ]
    return lines


def _codes(value: object) -> Iterator[str]:
    """The ``error`` codes of the summaries in the tool's answer."""
    if isinstance(value, dict):
        if "error" in value and "message" in value:
            yield str(value["error"])
        for item in value.values():
            yield from _codes(item)
    elif isinstance(value, list):
        for item in value:
            yield from _codes(item)


def _same_twins(output: object) -> None:
    """A call on a path outside the grants answered as the same call on its missing twin."""
    from fuzz.targets import Finding

    records = output.get("records", []) if isinstance(output, dict) else []
    for record in records:
        twin = record.get("twin")
        if twin is None:
            continue
        seen = {k: record.get(k) for k in ("thrown", "result", "settled")}
        other = {k: twin.get(k) for k in ("thrown", "result", "settled")}
        if json.dumps(seen) != json.dumps(other).replace(twin["to"], twin["from"]):
            raise Finding(f"a refused path answers whether it exists: {json.dumps(record)[:4000]}")


def fs_walk(isolation: str) -> Check:
    """The target over one sandbox of ``isolation`` (``in-process`` or ``os``)."""
    from fuzz.scratch import scratch_dir
    from fuzz.targets import Finding
    from splice_build.runtime import SpliceRuntime
    from splice_build.spec.reuse import ReusePolicy
    from testing.hostile_packages import write_package

    links_out = isolation == "os"
    root = scratch_dir(f"fs-walk-{isolation}")
    secrets = {k: f"SEKRIT-{k}-{os.urandom(8).hex()}" for k in ("project", "private", "outside")}
    project, outside = _tree(root, secrets, links_out)
    out = project / "out"
    package = write_package(
        root / "packages", TOOL.read_text(encoding="utf-8"), permissions=GRANTS, timeout_ms=2000
    )
    watched = [project, outside, package]
    closed = os.umask(0o022)
    os.umask(closed)
    closed &= 0o022
    runtime = SpliceRuntime(
        project_root=project,
        env={},
        isolation="in-process" if isolation == "in-process" else "auto",
        reuse=ReusePolicy(max_calls=100_000, idle_seconds=3600, max_memory_mb=512),
    )
    loaded = runtime.load(package)

    # Whether the process may still hold such a stream (a failed call ends its process).
    unheard = [False]

    def call(payload: dict[str, Any], chunk: bytes = b"") -> None:
        """One call of the tool, judged by what it answered."""
        result = runtime.execute(loaded, "t", {**payload, "outside": str(outside)})
        stream = unheard[0] or UNHEARD_STREAM in (result.logs or "")
        unheard[0] = stream and result.error is None
        answer = json.dumps(result.to_json())
        for secret in (*secrets.values(), PASSWD):
            if secret in answer:
                raise Finding(f"a secret reached the tool: {answer[:4000]}")
        if result.error is not None:
            own = result.error.code in OWN_ENDS or (
                result.error.code == ErrorCode.TOOL_CRASHED and JOB_UNREADABLE in result.logs
            )
            if not own and not (stream and result.error.code == ErrorCode.PERMISSION_DENIED):
                raise Finding(
                    f"the tool ended {result.error.code} after {chunk.hex()}: {answer[-4000:]}"
                )
            return
        if links_out and result.to_json()["isolation"]["layer"] != "os":
            raise Finding("no OS layer on a machine that has it")
        _same_twins(result.output)
        unknown = {c for c in _codes(result.output) if not CODE.fullmatch(c)}
        if unknown:
            raise Finding(f"error codes of no documented form {sorted(unknown)}: {answer[:4000]}")

    _fill_out(out, links_out)
    baseline = _snapshot(watched, out)

    def check(data: bytes) -> None:
        _fill_out(out, links_out)
        call({"reset": True})
        for start in range(0, min(len(data), CALLS * 64), 64):
            chunk = data[start : start + 64]
            payload = {"bytes": base64.b64encode(chunk).decode(), "ops": OPS_PER_CALL}
            call({**payload, "keepPollution": chunk[0] % 4 == 0}, chunk)
            changes = _changes(baseline, _snapshot(watched, out))
            if changes:
                raise Finding(f"outside the write grant: {changes[:10]} after {chunk.hex()}")
            for path in _entries(out):
                info = path.lstat()
                if stat.S_ISLNK(info.st_mode):
                    continue
                if info.st_mode & (0o6000 | closed):
                    raise Finding(f"{path}: mode {oct(info.st_mode)} after {chunk.hex()}")
                if stat.S_ISREG(info.st_mode):
                    body = path.read_bytes()
                    if any(s.encode() in body for s in secrets.values()):
                        raise Finding(f"{path}: a secret copied into the write grant")

    return check
