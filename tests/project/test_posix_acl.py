"""project/posix_acl.py reads what a file system hands back: anything but a valid ACL is
unreadable (``ValueError``), which every caller counts as failing closed."""

from __future__ import annotations

import os
import random
import struct
from pathlib import Path

import pytest

from splice_build.project import posix_acl
from testing.acls import posix_acls_kept

_ANY = 0xFFFFFFFF
_VALID = [(1, 7, _ANY), (2, 7, 65534), (4, 5, _ANY), (0x10, 7, _ANY), (0x20, 5, _ANY)]


def _acl(found: list[tuple[int, int, int]]) -> bytes:
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in found)


@pytest.fixture
def handed_back(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """What ``os.getxattr`` returns for the access ACL of any path: a FUSE or network file
    system may return anything (a local one's kernel refuses an invalid ACL)."""
    value: list[bytes] = [b""]
    monkeypatch.setattr(os, "getxattr", lambda path, name: value[0], raising=False)
    return value


@pytest.mark.parametrize(
    "found",
    [
        pytest.param([*_VALID, (0x10, 5, _ANY)], id="a second mask without write"),
        pytest.param([*_VALID[:3], _VALID[4]], id="a named user without a mask"),
        pytest.param([*_VALID, (0x40, 7, 1)], id="a tag nobody knows"),
        pytest.param([*_VALID, (2, 0, 65534)], id="a user named twice"),
        pytest.param([(1, 0xFF, _ANY), *_VALID[1:]], id="permission bits beyond rwx"),
        pytest.param(_VALID[:4], id="no others entry"),
        pytest.param([], id="no entry"),
    ],
)
def test_an_acl_the_kernel_would_refuse_is_unreadable(
    handed_back: list[bytes], found: list[tuple[int, int, int]]
) -> None:
    """A second mask without write made ``writers`` answer that nobody but the owner may
    write the file (a tool whose ACL named another user with rwx passed the check), and an
    unknown tag was skipped."""
    handed_back[0] = _acl(found)
    with pytest.raises(ValueError):
        posix_acl.writers(os.stat_result((0o100664, 1, 1, 1, 0, 0, 0, 0, 0, 0)), ".")


def test_no_bytes_make_the_parser_raise_or_open(handed_back: list[bytes]) -> None:
    """Random and truncated values: the entries of a valid ACL or ``ValueError``; the
    callers' answers stay closed (no group write for what Splice makes, a writer for a
    claim)."""
    rng = random.Random(20261206)
    info = os.stat_result((0o42775, 1, 1, 2, 1000, 1000, 0, 0, 0, 0))  # a team's directory
    valid = _acl(_VALID)
    tried = [valid[:cut] for cut in range(len(valid))]
    tried += [rng.randbytes(rng.randrange(64)) for _ in range(300)]
    tried += [
        _acl(
            [
                (rng.choice((1, 2, 4, 8, 0x10, 0x20)), rng.randrange(8), rng.randrange(3))
                for _ in range(rng.randrange(7))
            ]
        )
        for _ in range(700)
    ]
    for value in tried:
        handed_back[0] = value
        try:
            found = posix_acl.entries(Path("."), posix_acl.ACCESS)
        except ValueError:
            assert not posix_acl.group_may_write(info, ".")
            assert posix_acl.lets_write(".", 1, frozenset({1}), 1) is True
            assert posix_acl.default_adds_writers(info, ".")
            continue
        assert found is not None and _acl(found) == value


@pytest.mark.skipif(not posix_acls_kept(), reason="the temporary file system keeps no ACL")
def test_whole_groups_reads_the_acl_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The groups and the users named without write come from one reading of the ACL (it was
    read twice: once for the writers, again for the named users): one ``getxattr`` per
    directory Splice makes a file in, and per project checked, where an ACL is set."""
    found = [(1, 7, _ANY), (2, 5, 65534), (4, 7, _ANY), (8, 7, 100), (0x10, 7, _ANY)]
    os.setxattr(tmp_path, posix_acl.ACCESS, _acl([*found, (0x20, 5, _ANY)]))
    read = os.getxattr
    reads: list[str] = []

    def counted(path: str | Path, name: str) -> bytes:
        reads.append(name)
        return read(path, name)

    monkeypatch.setattr(os, "getxattr", counted)
    info = tmp_path.stat()
    # nobody (named without write) is in no group here: the owning group and 100 stay whole
    assert posix_acl.whole_groups(info, tmp_path) == {info.st_gid, 100}
    assert reads == [posix_acl.ACCESS]
