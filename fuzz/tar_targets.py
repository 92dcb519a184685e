"""``tar_diff``: the package tar reader against the tars a reviewer lists an archive with.

The bytes are an uncompressed tar stream, read as ``splice validate`` reads an artifact
(``spec.archive.read_archive`` of it in a stored gzip, the package rules included). Where the
reader accepts, Python's ``tarfile`` and, where it is installed, GNU tar must read the same
archive: every entry ``tarfile`` lists is a directory or a regular file of the same path and
content, in the same order, and GNU tar extracts exactly those files, with no error. Where
they would read something else, the reader must refuse with ``INVALID_PACKAGE``: an entry one
tar hides or reads otherwise is a file installed that no reviewer saw. First byte odd: each
header the reader will meet gets its right checksum first, so that mutations reach past it.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from fuzz.scratch import scratch_dir

Check = Callable[[bytes], None]


_DIGITS = re.compile(rb"[0-7]+")


def _with_checksums(data: bytes) -> bytes:
    """``data`` with the checksum of each header the reader meets set right."""
    stream = bytearray(data)
    offset = 0
    while offset + 512 <= len(stream) and any(stream[offset : offset + 512]):
        stream[offset + 148 : offset + 156] = b" " * 8
        checksum = sum(stream[offset : offset + 512])
        stream[offset + 148 : offset + 156] = b"%06o\0 " % checksum
        digits = _DIGITS.search(bytes(stream[offset + 124 : offset + 136]))
        size = int(digits.group(), 8) if digits and stream[offset + 156] != ord("5") else 0
        offset += 512 + -(-size // 512) * 512
    return bytes(stream)


def _tarfile_files(data: bytes) -> list[tuple[str, bytes]] | str:
    """Python's ``tarfile`` reading of the regular files, or why it read something else."""
    files: list[tuple[str, bytes]] = []
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
            for member in archive:
                if member.isdir():
                    continue
                if not member.isreg():
                    return f"tarfile lists {member.name!r} of type {member.type!r}"
                handle = archive.extractfile(member)
                assert handle is not None
                files.append((member.name.removeprefix("./"), handle.read()))
    except (tarfile.TarError, EOFError) as exc:
        return f"tarfile refuses it: {exc}"
    return files


def _gnu_tar_files(data: bytes, tar: str, root: Path) -> dict[str, bytes] | str:
    """The regular files GNU tar extracts (no owner, no stored permissions), or its error."""
    directory = Path(tempfile.mkdtemp(dir=root))
    try:
        done = subprocess.run(
            [
                tar,
                "-x",
                "-f",
                "-",
                "-C",
                str(directory),
                "--no-same-owner",
                "--no-same-permissions",
            ],
            input=data,
            capture_output=True,
            timeout=10,
        )
        if done.returncode != 0:  # a warning (a lone zero block) changes nothing extracted
            return f"GNU tar exit {done.returncode}: {done.stderr[:300]!r}"
        files: dict[str, bytes] = {}
        for parent, _, names in os.walk(directory):
            for name in names:
                path = Path(parent, name)
                if path.is_symlink() or not path.is_file():
                    return f"GNU tar made {path.relative_to(directory)}, no regular file"
                os.chmod(path, 0o600)
                files[path.relative_to(directory).as_posix()] = path.read_bytes()
        return files
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def tar_diff() -> Check:
    from fuzz.targets import Finding, _expect_codes
    from splice_build.errors import SpliceError
    from splice_build.spec.archive import read_archive
    from splice_build.spec.gzip_stream import gzip_stored

    tar = shutil.which("tar")
    gnu = (
        tar is not None
        and b"GNU tar" in subprocess.run([tar, "--version"], capture_output=True).stdout
    )
    root = scratch_dir("tar", "/dev/shm" if os.access("/dev/shm", os.W_OK) else None)

    def check(data: bytes) -> None:
        if not data:
            return
        data = _with_checksums(data[1:]) if data[0] % 2 else data[1:]
        try:
            files = read_archive(gzip_stored(data))
        except SpliceError as exc:
            _expect_codes(exc, {"INVALID_PACKAGE"})
            return
        if not files:
            return  # nothing to install (tarfile calls an archive of no entry empty)
        ours = list(files.items())
        theirs = _tarfile_files(data)
        if theirs != ours:
            raise Finding(f"accepted {ours!r:.500}, tarfile reads {theirs!r:.500}")
        if gnu and tar is not None:
            extracted = _gnu_tar_files(data, tar, root)
            if extracted != files:
                raise Finding(f"accepted {ours!r:.500}, GNU tar extracts {extracted!r:.500}")

    return check
