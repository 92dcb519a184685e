"""spec/regular_file.py: a project file is read whole, in one read when its size is as
``fstat`` said, anything but a regular file is refused at once (never waited on), and with a
limit no more than one byte past it is ever read."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from splice_build.spec import regular_file
from splice_build.spec.regular_file import read_regular_file


@pytest.mark.parametrize("size", [0, 1, 4096, (1 << 20) - 1, 1 << 20, 3 * (1 << 20) + 7])
def test_every_byte_is_read(tmp_path: Path, size: int) -> None:
    data = os.urandom(size)
    (tmp_path / "f").write_bytes(data)
    assert read_regular_file(tmp_path / "f") == data


def test_a_file_that_grew_after_its_fstat_is_read_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = os.urandom(3 * (1 << 20))
    (tmp_path / "f").write_bytes(data)
    real_fstat = os.fstat

    def smaller(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        fields = list(info)
        fields[6] = 10  # st_size: as if it had 10 bytes when it was opened
        return os.stat_result(fields)

    monkeypatch.setattr(regular_file.os, "fstat", smaller)
    assert read_regular_file(tmp_path / "f") == data


def test_anything_but_a_regular_file_is_refused_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    for name in ("fifo", "dir"):
        errors: list[OSError] = []

        def read(name: str = name, errors: list[OSError] = errors) -> None:
            try:
                read_regular_file(tmp_path / name)
            except OSError as exc:
                errors.append(exc)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(10)
        assert errors and "not a regular file" in str(errors[0]), name
    with pytest.raises(FileNotFoundError):
        read_regular_file(tmp_path / "missing")


@pytest.mark.parametrize("size", [0, 100, (1 << 20) + 5])
def test_a_file_of_exactly_the_limit_is_read_and_one_byte_more_is_refused(
    tmp_path: Path, size: int
) -> None:
    data = os.urandom(size)
    (tmp_path / "f").write_bytes(data)
    assert read_regular_file(tmp_path / "f", limit=size) == data
    if size:
        with pytest.raises(OSError) as caught:
            read_regular_file(tmp_path / "f", limit=size - 1)
        assert caught.value.errno == errno.EFBIG
        assert f"larger than {size - 1} bytes" in str(caught.value)


def test_a_huge_sparse_file_is_refused_from_its_size_without_reading(tmp_path: Path) -> None:
    with open(tmp_path / "sparse", "wb") as handle:
        handle.truncate(1 << 40)  # 1 TiB of holes: its size alone refuses it
    (tmp_path / "link").symlink_to(tmp_path / "sparse")
    with pytest.raises(OSError) as caught:
        read_regular_file(tmp_path / "link", limit=1 << 20)
    assert caught.value.errno == errno.EFBIG


def test_a_file_that_grows_past_the_limit_is_refused_after_limit_plus_one_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It had 10 bytes at its ``fstat``: every read after that is bounded by the limit."""
    (tmp_path / "f").write_bytes(os.urandom(3 * (1 << 20)))
    real_fstat, real_read = os.fstat, os.read
    asked: list[int] = []

    def smaller(fd: int) -> os.stat_result:
        fields = list(real_fstat(fd))
        fields[6] = 10
        return os.stat_result(fields)

    def counted(fd: int, n: int) -> bytes:
        asked.append(n)
        return real_read(fd, n)

    monkeypatch.setattr(regular_file.os, "fstat", smaller)
    monkeypatch.setattr(regular_file.os, "read", counted)
    with pytest.raises(OSError) as caught:
        read_regular_file(tmp_path / "f", limit=100_000)
    assert caught.value.errno == errno.EFBIG
    assert sum(asked) == 100_001


def test_a_link_to_a_device_is_refused_at_once_whatever_the_limit(tmp_path: Path) -> None:
    (tmp_path / "zero").symlink_to("/dev/zero")
    for limit in (None, 1 << 20):
        with pytest.raises(OSError) as caught:
            read_regular_file(tmp_path / "zero", limit=limit)
        assert caught.value.errno == errno.EINVAL
