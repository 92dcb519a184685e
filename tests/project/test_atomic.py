"""Atomic writes: content, format, modes, and a crash just before the rename."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from splice_build.project.atomic import atomic_write_bytes, atomic_write_json, decode_json
from testing.power_cut import count_fsyncs
from testing.projects import run_python

CRASH_BEFORE_RENAME = """
import os, sys
from pathlib import Path
from splice_build.project import atomic
os.replace = lambda *args: os._exit(41)   # the process dies between temp write and rename
atomic.atomic_write_bytes(Path(sys.argv[1]), b"new contents", mode=int(sys.argv[2], 8))
"""


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_writes_bytes_and_replaces_existing(tmp_path: Path) -> None:
    target = tmp_path / "f.bin"
    atomic_write_bytes(target, b"one")
    atomic_write_bytes(target, b"two, longer")
    assert target.read_bytes() == b"two, longer"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]  # no temp file left behind


def test_json_format_matches_json_stringify(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    atomic_write_json(target, {"b": [1, {}], "a": "é", "c": {"d": None, "e": []}})
    assert target.read_text(encoding="utf-8") == (
        '{\n  "b": [\n    1,\n    {}\n  ],\n  "a": "é",\n'
        '  "c": {\n    "d": null,\n    "e": []\n  }\n}\n'
    )


def test_mode_is_applied_with_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic_write_bytes(tmp_path / "secret", b"s", mode=0o600)
        atomic_write_bytes(tmp_path / "public", b"p")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "secret") == 0o600
    assert _mode(tmp_path / "public") == 0o644


def test_a_failed_write_keeps_the_old_file_and_removes_the_temp(tmp_path: Path) -> None:
    target = tmp_path / "dir-in-the-way"
    target.mkdir()
    (target / "child").write_text("x")
    with pytest.raises(OSError):
        atomic_write_bytes(target, b"cannot replace a non-empty directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir-in-the-way"]


def test_crash_between_temp_write_and_rename_leaves_old_file(tmp_path: Path) -> None:
    target = tmp_path / "splice.json"
    target.write_bytes(b"old contents")
    result = run_python(CRASH_BEFORE_RENAME, str(target), "600", umask=0)
    assert result.returncode == 41, result.stderr  # it really died at the rename
    assert target.read_bytes() == b"old contents"
    (temp,) = [p for p in tmp_path.iterdir() if p != target]
    assert temp.read_bytes() == b"new contents"
    # Even with umask 0 a secret's temp file was never readable by anyone else.
    assert _mode(temp) == 0o600


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (
            b"{",
            "not valid JSON (Expecting property name enclosed in double quotes at line 1 column 2)",
        ),
        (b"\xff{}", "not UTF-8 (byte 0)"),
        (b'{"a": NaN}', "not valid JSON (NaN is not JSON)"),
        (b"[" * 100_000 + b"]" * 100_000, "not valid JSON (nested too deeply)"),
    ],
)
def test_decode_json_errors_name_a_position_not_the_content(data: bytes, reason: str) -> None:
    with pytest.raises(ValueError) as info:
        decode_json(data)
    assert str(info.value) == reason


def test_decode_json_accepts_a_bom() -> None:
    assert decode_json('\ufeff{"a": 1}'.encode()) == {"a": 1}
    assert json.loads("1") == decode_json(b"1")


def test_exclusive_write_never_replaces_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "splice.json"
    assert atomic_write_bytes(target, b"first\n", exclusive=True) is True
    assert atomic_write_bytes(target, b"second\n", exclusive=True) is False
    assert target.read_bytes() == b"first\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["splice.json"]  # no temp left


def test_concurrent_inits_create_the_file_once(tmp_path: Path) -> None:
    import concurrent.futures

    from splice_build.project.project_file import init_project

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        created = list(pool.map(lambda _: init_project(tmp_path / "p")[1], range(32)))
    assert created.count(True) == 1
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == ["splice.json"]


def _dead_pid() -> int:
    """The process id of a process that has exited (and been reaped)."""
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(child.stdout)


def test_a_killed_writers_temp_file_is_removed_by_the_next_write(tmp_path: Path) -> None:
    target = tmp_path / "credentials.json"
    dead = tmp_path / f".credentials.json.{_dead_pid()}.0123abcd.tmp"
    dead.write_text('{"token": "left by a kill -9"}')
    live = tmp_path / f".credentials.json.{os.getppid()}.0123abcd.tmp"
    live.write_text("still being written")
    others = [
        tmp_path / f".other.json.{_dead_pid()}.0123abcd.tmp",
        tmp_path / f".credentials.json.{_dead_pid()}.0123abcd.tmp.keep",
        tmp_path / "credentials.json.1.0123abcd.tmp",
    ]
    for other in others:
        other.write_text("not a temp file of credentials.json")

    atomic_write_bytes(target, b"{}\n", mode=0o600)

    assert target.read_bytes() == b"{}\n"
    assert not dead.exists()
    assert live.exists() and all(other.exists() for other in others)


@pytest.mark.skipif(not hasattr(os, "fchmod"), reason="POSIX permission bits")
def test_keep_mode_keeps_the_replaced_files_bits_whatever_the_umask(tmp_path: Path) -> None:
    target = tmp_path / "splice.json"
    target.write_text("{}\n")
    old = os.umask(0o022)
    try:
        for bits in (0o600, 0o664, 0o640):
            target.chmod(bits)
            atomic_write_bytes(target, b"[]\n", keep_mode=True)
            assert _mode(target) == bits
        target.chmod(0o4755)
        atomic_write_bytes(target, b"[]\n", keep_mode=True)
        assert _mode(target) == 0o755  # no set-id bit is carried over
        atomic_write_bytes(target, b"[]\n")  # without it: the given mode minus the umask
        assert _mode(target) == 0o644
        fresh = tmp_path / "new.json"
        atomic_write_bytes(fresh, b"[]\n", mode=0o600, keep_mode=True)
        assert _mode(fresh) == 0o600
    finally:
        os.umask(old)


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/fd")
def test_write_tree_fsyncs_every_file_and_directory_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from splice_build.project.atomic import write_tree

    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        real(fd)
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))

    monkeypatch.setattr(os, "fsync", fsync)
    root = tmp_path / "staged"
    root.mkdir()
    files = {"manifest.json": b"{}", "tools/a.js": b"a", "tools/deep/b.js": b"b", "c.md": b""}

    write_tree(root, files)

    assert {p: (root / p).read_bytes() for p in files} == files
    expected = {str(root / p) for p in files} | {str(root), str(root / "tools")}
    assert sorted(synced) == sorted(expected | {str(root / "tools" / "deep")})


def test_write_tree_reports_a_failure_after_its_fsyncs_ended(tmp_path: Path) -> None:
    from splice_build.project.atomic import write_tree

    root = tmp_path / "staged"
    (root / "tools").mkdir(parents=True)
    (root / "tools" / "b.js").write_bytes(b"there already")
    with pytest.raises(FileExistsError):
        write_tree(root, {"a.js": b"a", "tools/b.js": b"b"})
    assert (root / "a.js").read_bytes() == b"a"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_of_fork_writes_a_tree_whatever_its_parent_wrote(tmp_path: Path) -> None:
    """A child of ``fork`` (``multiprocessing``'s default start method on Linux) inherited
    the parent's fsync pool: its threads do not exist there, but the pool counted the idle
    ones, so the child's first writes (no more of them than that count) were queued for
    threads that never ran them and ``write_tree`` waited for ever (shown with the SDK: a
    child's ``add(["@splice/example"])`` after its parent installed a package of 40 files).
    Here every thread of the pool is made busy, then idle, before the fork."""
    import signal
    import threading

    from splice_build.project import atomic

    pool, release = atomic._fsync_pool(), threading.Event()
    busy = [pool.submit(release.wait) for _ in range(atomic._FSYNC_THREADS)]
    release.set()
    for done in busy:
        done.result()
    (tmp_path / "child").mkdir()
    child = os.fork()
    if child == 0:  # pragma: no cover (its exit status is checked below)
        status = 1
        try:
            signal.alarm(30)  # the old code never returned
            atomic.write_tree(tmp_path / "child", {"a.js": b"a", "tools/b.js": b"b"})
            status = 0
        finally:
            os._exit(status)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert (tmp_path / "child" / "tools" / "b.js").read_bytes() == b"b"


INTERRUPTED_AS_A_THREAD_STARTS = """
import signal, sys, threading
from pathlib import Path
from splice_build.project import atomic
# Python's own handler, whatever was inherited: a shell's background job (as CI may be
# started) ignores SIGINT, and an ignored signal stays ignored.
signal.signal(signal.SIGINT, signal.default_int_handler)
start = threading.Thread.start
def start_then_interrupt(self):  # ^C lands as the pool's first thread has started
    start(self)
    threading.Thread.start = start
    signal.raise_signal(signal.SIGINT)
threading.Thread.start = start_then_interrupt
signal.alarm(20)  # the old code's exit joined the thread for ever
try:
    atomic.write_tree(Path(sys.argv[1]), {"a.js": b"a"})
except KeyboardInterrupt:
    print("interrupted")
"""


@pytest.mark.skipif(not hasattr(signal, "alarm"), reason="needs signal.alarm")
def test_a_tree_write_interrupted_as_a_thread_starts_still_lets_the_process_exit(
    tmp_path: Path,
) -> None:
    """^C while the fsync pool started a thread (a real ``splice add`` of three packages,
    killed with SIGINT: "interrupted by SIGINT", then no exit until a second ^C): the pool
    never recorded the thread, never told it to end, and the exit joined it for ever. The
    interruption now waits until the fsync is queued, then acts."""
    done = run_python(INTERRUPTED_AS_A_THREAD_STARTS, str(tmp_path))
    assert (done.returncode, done.stdout.strip()) == (0, "interrupted")


def _consent_dir_listings(home: Path, projects: list[Path], monkeypatch: pytest.MonkeyPatch) -> int:
    """How many times writing a consent record for each of ``projects``, then checking each
    for a killed writer's temp (an install that writes none), lists the one directory that
    holds them all."""
    from splice_build.install.consent_record import remove_dead_record_temps, write_record

    listings = 0
    real = os.scandir

    def scandir(path: object) -> object:
        nonlocal listings
        listings += Path(os.fspath(path)) == home / "consent"  # type: ignore[arg-type]
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    for root in projects:
        write_record(home, root, {}, {})
    for _root in projects:
        remove_dead_record_temps(home)
    monkeypatch.undo()
    assert len(list((home / "consent").iterdir())) == len(projects)
    return listings


def test_writing_n_records_in_one_directory_lists_it_once_not_n_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A sync writes one consent record per member in SPLICE_HOME/consent, which holds one per
    # project ever installed, or checks it for a killed writer's temp: listing the directory
    # for each made a sync O(members × projects).
    projects = [tmp_path / f"m{i}" for i in range(40)]
    homes = [tmp_path / "home-a", tmp_path / "home-b"]
    for home in homes:
        home.mkdir(mode=0o700)

    few = _consent_dir_listings(homes[0], projects[:20], monkeypatch)
    many = _consent_dir_listings(homes[1], projects, monkeypatch)

    assert few == many == 1


def test_a_temp_left_after_the_sweep_goes_with_the_next_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from splice_build.project import atomic

    atomic.remove_dead_temps(tmp_path)
    dead = tmp_path / f".entry.{_dead_pid()}.0123abcd.tmp"  # killed after this process swept
    dead.write_text("a secret")
    atomic.remove_dead_temps(tmp_path)
    atomic_write_bytes(tmp_path / "other", b"x")
    assert dead.exists()  # within the interval: no listing

    monkeypatch.setattr(atomic, "SWEEP_INTERVAL", 0.0)
    atomic.remove_dead_temps(tmp_path)
    assert not dead.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="fsync of directories")
def test_a_cache_write_fsyncs_nothing_and_a_lasting_write_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced = count_fsyncs(monkeypatch)

    atomic_write_bytes(tmp_path / "statcache.json", b"{}", durable=False)
    assert synced == []
    atomic_write_bytes(tmp_path / "splice.lock", b"{}")
    assert len(synced) == 2  # the file, then its directory
