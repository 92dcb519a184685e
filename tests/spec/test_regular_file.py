"""project/regular_file.py: a project file is read whole, in one read when its size is as
``fstat`` said, and anything but a regular file is refused at once (never waited on)."""

from __future__ import annotations

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
