"""The stat cache's racy rule on real files (install/statcache.py): a file whose mtime or
ctime is not strictly older than the file system's clock before the files were read is never
recorded, and a record not strictly older than the cache file itself is never trusted."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from splice_build.install.statcache import StatCache, file_system_now
from splice_build.spec.tree_digest import tree_hashes
from testing.power_cut import count_fsyncs
from testing.stat_records import packed, unpacked

PACKAGE = "@acme/pkg"


def _package(tmp_path: Path) -> Path:
    directory = tmp_path / "pkg"
    (directory / "lib").mkdir(parents=True)
    (directory / "manifest.json").write_text("{}")
    (directory / "lib" / "a.js").write_text("export const a = 1;\n")
    return directory


def _times(directory: Path) -> list[int]:
    files = [p for p in directory.rglob("*") if p.is_file()]
    return [t for p in files for t in (p.stat().st_mtime_ns, p.stat().st_ctime_ns)]


def _saved(tmp_path: Path) -> tuple[Path, Path, dict]:
    """A package's directory, the cache that records it, and that cache's JSON body."""
    directory = _package(tmp_path)
    path = tmp_path / "statcache.json"
    cache = StatCache.load(path)
    cache.package_hashes(PACKAGE, directory)
    cache.save([PACKAGE], before_ns=max(_times(directory)) + 1)
    return directory, path, json.loads(path.read_text())


def test_files_not_strictly_older_than_the_clock_are_not_recorded(tmp_path: Path) -> None:
    directory = _package(tmp_path)
    path = tmp_path / "statcache.json"
    cache = StatCache.load(path)
    assert cache.package_hashes(PACKAGE, directory) == tree_hashes(directory)
    cache.save([PACKAGE], before_ns=min(_times(directory)))  # same tick as the oldest stamp
    assert json.loads(path.read_text())["packages"] == {}

    marker = tmp_path / "marker"
    marker.write_bytes(b"")
    now = file_system_now(marker)
    assert now >= max(_times(directory))
    cache = StatCache.load(path)
    cache.package_hashes(PACKAGE, directory)
    cache.save([PACKAGE], before_ns=max(_times(directory)) + 1)
    assert set(json.loads(path.read_text())["packages"][PACKAGE]["names"]) == {
        "manifest.json",
        "lib/a.js",
    }


def test_records_not_older_than_the_cache_file_are_ignored(tmp_path: Path) -> None:
    directory = _package(tmp_path)
    path = tmp_path / "statcache.json"
    cache = StatCache.load(path)
    cache.package_hashes(PACKAGE, directory)
    cache.save([PACKAGE], before_ns=max(_times(directory)) + 1)
    later = max(_times(directory)) + 10**9
    os.utime(path, ns=(later, later))
    assert set(StatCache.load(path).records[PACKAGE]) == {"manifest.json", "lib/a.js"}
    stamp = min(_times(directory))
    os.utime(path, ns=(stamp, stamp))  # as old as a recorded stamp: racy, not trusted
    assert StatCache.load(path).records[PACKAGE] == {}


def test_a_link_in_the_tree_has_no_digest(tmp_path: Path) -> None:
    directory = _package(tmp_path)
    (directory / "lib" / "link.js").symlink_to(directory / "lib" / "a.js")
    assert StatCache.load(tmp_path / "statcache.json").package_hashes(PACKAGE, directory) is None


def test_large_packages_hash_on_threads_to_the_same_digest(tmp_path: Path) -> None:
    from splice_build.install import statcache

    directory = _package(tmp_path)
    for i in range(statcache.PARALLEL_MIN_FILES + 1):
        (directory / "lib" / f"blob{i}.bin").write_bytes(bytes([i]) * (1024 * 1024 + i))
    total = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
    assert total >= statcache.PARALLEL_MIN_BYTES  # the threaded path is taken
    cache = StatCache.load(tmp_path / "statcache.json")
    assert cache.package_hashes(PACKAGE, directory) == tree_hashes(directory)


def test_a_file_swapped_between_its_listing_and_its_hashing_gives_no_hashes(
    tmp_path: Path, monkeypatch
) -> None:
    """A record pairs a stat with a hash, so both must be of one file. Renaming a directory
    keeps the ctime of what is in it: a tampered ``lib/`` listed, then swapped for the
    original before its files are opened, would pair the tampered file's stat with the
    original's hash. The stat of the descriptor hashed must equal the listed one."""
    from splice_build.spec import tree_digest  # statcache imports it only to hash

    directory = _package(tmp_path)
    original = tmp_path / "lib-original"
    os.rename(directory / "lib", original)
    (directory / "lib").mkdir()
    (directory / "lib" / "a.js").write_text("export const a = 666;\n")  # the tampered copy
    real = tree_digest.hash_package_file_and_stat
    swapped = []

    def swap_then_hash(path: str) -> tuple[str, os.stat_result]:
        if not swapped:
            os.rename(directory / "lib", tmp_path / "lib-tampered")
            os.rename(original, directory / "lib")
            swapped.append(path)
        return real(path)

    monkeypatch.setattr(tree_digest, "hash_package_file_and_stat", swap_then_hash)
    cache = StatCache.load(tmp_path / "statcache.json")
    assert cache.package_hashes(PACKAGE, directory) is None
    assert swapped
    cache.save([PACKAGE], before_ns=2**62)
    assert json.loads((tmp_path / "statcache.json").read_text())["packages"] == {}


def test_a_fifo_in_place_of_the_cache_is_ignored_at_once(tmp_path: Path) -> None:
    import threading

    path = tmp_path / "statcache.json"
    os.mkfifo(path)
    loaded: list[StatCache] = []
    reader = threading.Thread(target=lambda: loaded.append(StatCache.load(path)), daemon=True)
    reader.start()
    reader.join(10)
    assert loaded, "opening the FIFO blocked"
    assert loaded[0].records == {} and loaded[0].state is None and loaded[0].changed


def test_a_record_or_state_naming_no_valid_package_is_not_trusted(tmp_path: Path) -> None:
    """The cache is read like any other input: an id no package can have (here one that
    would reach outside ``.splice/packages``) makes the whole file untrusted."""
    _, path, body = _saved(tmp_path)
    assert body["packages"][PACKAGE]
    for bad in ("@acme/../../x", "acme/pkg", "@ACME/pkg"):
        forged = {**body, "packages": {bad: body["packages"][PACKAGE]}}
        path.write_text(json.dumps(forged))
        assert StatCache.load(path).records == {}, bad
        state = {
            "splice": "0",
            "root": "/",
            "project": "{}",
            "lock": None,
            "packages": {bad: "1.0.0"},
            "projectFile": [1, 2, 3],
            "lockFile": None,
            "fs": [],
            "artifacts": [],
            "warnings": [],
        }
        path.write_text(json.dumps({**body, "state": state}))
        assert StatCache.load(path).state is None, bad
    good = {
        "splice": "0",
        "root": "/",
        "project": "{}",
        "lock": None,
        "packages": {PACKAGE: "1"},
        "projectFile": [1, 2, 3],
        "lockFile": None,
        "fs": [["out", True]],
        "artifacts": ["0" * 64],
        "warnings": [],
    }
    path.write_text(json.dumps({**body, "state": good}))
    assert StatCache.load(path).state is not None  # the same shape with a valid id is read
    # The fs entries judged on each no-op: [text, bool] pairs, or the state is not read.
    for fs in (None, {}, [["out"]], [["out", 1]], [[1, True]], [("out", True, 1)]):
        path.write_text(json.dumps({**body, "state": {**good, "fs": fs}}))
        assert StatCache.load(path).state is None, fs
    # The artifacts whose files digest records a no-op finds still there: 64 hex digits each.
    for artifacts in (
        None,
        ["0" * 63],
        ["0" * 63 + "g"],
        ["0" * 63 + "A"],
        ["0" * 63 + "\u00e9"],
        [0],
        "0" * 64,
    ):
        path.write_text(json.dumps({**body, "state": {**good, "artifacts": artifacts}}))
        assert StatCache.load(path).state is None, artifacts
    # The identity of splice.json and splice.lock has its shape too: three integers, and
    # one for the lock exactly when the state holds a lock's text.
    for project_file, lock, lock_file in (
        (None, None, None),
        ([1, 2], None, None),
        ([1, 2, True], None, None),
        ([-1, 2, 3], None, None),
        ([1, 2, 3], "{}", None),
        ([1, 2, 3], None, [1, 2, 3]),
    ):
        odd = {**good, "projectFile": project_file, "lock": lock, "lockFile": lock_file}
        path.write_text(json.dumps({**body, "state": odd}))
        assert StatCache.load(path).state is None, odd


def test_a_record_whose_hash_is_not_64_lowercase_hex_digits_is_not_trusted(
    tmp_path: Path,
) -> None:
    """Each record's SHA-256 is read as exactly 64 lowercase hex digits: one odd hash, in
    any record of any package, makes the whole file untrusted (every file hashed again)."""
    directory, path, body = _saved(tmp_path)
    later = max(_times(directory)) + 10**9  # every record strictly older than the file

    def load(packages: dict) -> dict:
        path.write_text(json.dumps({**body, "packages": packages}))
        os.utime(path, ns=(later, later))
        return StatCache.load(path).records

    assert set(load(body["packages"])[PACKAGE]) == {"manifest.json", "lib/a.js"}
    rows = unpacked(body["packages"][PACKAGE])
    for bad in ("0" * 63 + "g", "0" * 63 + "A", "0" * 63 + "\u00e9", "0" * 63, "0" * 65, ""):
        for name in ("manifest.json", "lib/a.js"):  # the first record checked, and a later one
            files = packed({**rows, name: [*rows[name][:6], bad]})
            assert load({PACKAGE: files}) == {}, (name, bad)
    for bad_field in (0, None):
        assert load({PACKAGE: {**body["packages"][PACKAGE], "sha256": bad_field}}) == {}


def test_a_listing_without_device_and_inode_compares_the_other_fields() -> None:
    """Windows lists files with device and inode 0 (``DirEntry.stat``) while ``fstat`` fills
    them in: there the descriptor's size, times and mode must still equal the listing's."""
    from splice_build.install.statcache import _same_file

    opened = (7, 42, 10, 1_000, 2_000, 0o100644)
    assert _same_file((0, 0, 10, 1_000, 2_000, 0o100644), opened)
    assert not _same_file((0, 0, 11, 1_000, 2_000, 0o100644), opened)
    assert not _same_file((0, 0, 10, 1_000, 2_001, 0o100644), opened)
    assert _same_file(opened, opened)
    assert not _same_file((7, 43, 10, 1_000, 2_000, 0o100644), opened)  # another inode


def _recorded(tmp_path: Path, directory: Path) -> StatCache:
    """The cache after a run that listed and hashed ``directory`` and recorded all of it."""
    path = tmp_path / "statcache.json"
    cache = StatCache.load(path)
    assert cache.package_hashes(PACKAGE, directory) == tree_hashes(directory)
    stamps = [t for p in (directory, *directory.rglob("*")) for t in _stamps(p)]
    cache.save([PACKAGE], before_ns=max(stamps) + 1)
    later = max(stamps) + 10**9  # the cache file newer than every record (not racy)
    os.utime(path, ns=(later, later))
    return StatCache.load(path)


def _stamps(path: Path) -> tuple[int, int]:
    info = path.lstat()
    return info.st_mtime_ns, info.st_ctime_ns


def test_every_directory_is_recorded_and_the_no_op_check_stats_them(tmp_path: Path) -> None:
    directory = _package(tmp_path)
    (directory / "empty").mkdir()
    cache = _recorded(tmp_path, directory)
    assert set(cache.directories[PACKAGE]) == {"", "lib", "empty"}
    assert cache.unchanged(PACKAGE, directory)


def _file_in_the_empty_directory(directory: Path) -> None:
    (directory / "empty" / "a.js").write_text("export {};\n")


def _times_restored(directory: Path, change: Callable[[Path], object]) -> None:
    """``change`` made, then every directory's times put back as they were."""
    kept = {p: p.stat() for p in (directory, *directory.rglob("*")) if p.is_dir()}
    change(directory)
    for path, info in kept.items():
        if path.exists():
            os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


CHANGES = {
    "a file in a directory empty when recorded": _file_in_the_empty_directory,
    "a hidden file in the package's own directory": lambda d: (d / ".x").write_text(""),
    "a file renamed": lambda d: (d / "lib" / "a.js").rename(d / "lib" / "b.js"),
    "a directory replaced by a copy": lambda d: (
        shutil.copytree(d / "lib", d / "lib2", copy_function=shutil.copy2),
        shutil.rmtree(d / "lib"),
        (d / "lib2").rename(d / "lib"),
    ),
    "the empty directory removed": lambda d: (d / "empty").rmdir(),
    "a file rewritten": lambda d: (d / "lib" / "a.js").write_text("export const a = 2;\n"),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_change_under_a_recorded_directory_is_seen_without_listing(
    tmp_path: Path, change: str
) -> None:
    """Each change with every directory's times put back: only ``ctime`` (and the inode)
    can tell, as no user process can set them back."""
    directory = _package(tmp_path)
    (directory / "empty").mkdir()
    cache = _recorded(tmp_path, directory)
    _times_restored(directory, CHANGES[change])
    assert not cache.unchanged(PACKAGE, directory)


def test_a_package_with_a_file_not_recorded_has_no_directories_and_is_never_unchanged(
    tmp_path: Path,
) -> None:
    """A file touched after the run's clock reading is racy and not recorded. Its directory
    may still be older; recording that directory would let the no-op check skip the file
    (it stats recorded files only), so a package's directories go only with all its files."""
    directory = _package(tmp_path)
    path = tmp_path / "statcache.json"
    cache = StatCache.load(path)
    cache.package_hashes(PACKAGE, directory)
    directory_stamps = [t for p in (directory, directory / "lib") for t in _stamps(p)]
    touched = _stamps(directory / "lib" / "a.js")
    before_ns = max(directory_stamps) + 1
    if max(touched) < before_ns:  # written in the same tick as its directory: make it later
        os.utime(directory / "lib" / "a.js", ns=(before_ns, before_ns))
        cache = StatCache.load(path)
        cache.package_hashes(PACKAGE, directory)
    cache.save([PACKAGE], before_ns=before_ns)
    body = json.loads(path.read_text())
    assert body["packages"][PACKAGE]["names"] == ["manifest.json"]
    assert body["directories"] == {}
    assert not StatCache.load(path).unchanged(PACKAGE, directory)


def test_a_racy_file_record_when_loading_drops_its_package_directories(tmp_path: Path) -> None:
    directory = _package(tmp_path)
    path = tmp_path / "statcache.json"
    _recorded(tmp_path, directory)
    stamp = max(_stamps(directory / "lib" / "a.js"))
    os.utime(path, ns=(stamp, stamp))  # the cache no newer than one file's record
    loaded = StatCache.load(path)
    assert "lib/a.js" not in loaded.records[PACKAGE]
    assert PACKAGE not in loaded.directories
    assert not loaded.unchanged(PACKAGE, directory)


@pytest.mark.parametrize("table", ["packages", "directories"])
@pytest.mark.parametrize("name", ["lib/\u0000x", "lib/\ud800"])
def test_a_record_name_no_path_can_have_is_a_difference_not_a_crash(
    tmp_path: Path, table: str, name: str
) -> None:
    """A name with NUL, or a lone surrogate (no bytes encode it), cannot be stat'ed: the
    package counts as changed (the graph runs and rewrites the cache)."""
    directory = _package(tmp_path)
    cache = _recorded(tmp_path, directory)
    path = tmp_path / "statcache.json"
    body = json.loads(path.read_text())
    entries = unpacked(body[table][PACKAGE])
    entries[name] = entries["lib/a.js" if table == "packages" else "lib"]
    body[table][PACKAGE] = packed(entries)
    written = path.stat()
    path.write_text(json.dumps(body))
    os.utime(path, ns=(written.st_atime_ns, written.st_mtime_ns))
    loaded = StatCache.load(path)
    assert name in (loaded.records if table == "packages" else loaded.directories)[PACKAGE]
    assert cache.unchanged(PACKAGE, directory)
    assert not loaded.unchanged(PACKAGE, directory)


def test_more_directories_than_files_are_recorded_and_read_back(tmp_path: Path) -> None:
    """A package of at most ``MAX_FILES`` files can hold more directories than that: what
    ``save`` writes, ``load`` reads (a refused table would drop every package's records)."""
    from splice_build.spec.limits import MAX_FILES

    directory = _package(tmp_path)
    for i in range(MAX_FILES // 2 + 10):
        (directory / "lib" / f"m{i:03}" / "impl").mkdir(parents=True)
        (directory / "lib" / f"m{i:03}" / "impl" / "index.js").write_text("export {};\n")
    cache = _recorded(tmp_path, directory)
    assert len(cache.directories[PACKAGE]) > MAX_FILES
    assert cache.unchanged(PACKAGE, directory)


def test_a_package_past_the_directory_bound_keeps_its_files_but_no_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from splice_build.install import statcache

    directory = _package(tmp_path)
    monkeypatch.setattr(statcache, "MAX_DIRECTORIES", 1)  # the package has two
    cache = _recorded(tmp_path, directory)
    assert set(cache.records[PACKAGE]) == {"manifest.json", "lib/a.js"}
    assert cache.directories == {}
    assert not cache.unchanged(PACKAGE, directory)


def test_times_before_1970_are_recorded_and_read_back(tmp_path: Path) -> None:
    directory = _package(tmp_path)
    os.utime(directory / "lib", ns=(-(10**9), -(10**9)))
    os.utime(directory / "manifest.json", ns=(-(10**9), -(10**9)))
    cache = _recorded(tmp_path, directory)
    assert cache.directories[PACKAGE]["lib"][3] < 0
    assert cache.records[PACKAGE]["manifest.json"][0][3] < 0
    assert cache.unchanged(PACKAGE, directory)


def test_where_ctime_is_no_change_time_nothing_is_recorded_or_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On Windows ``st_ctime`` is the creation time, so a restored ``mtime`` would hide an
    edit or an added file: the cache is neither written nor read there."""
    from splice_build.install import statcache

    directory = _package(tmp_path)
    _recorded(tmp_path, directory)
    path = tmp_path / "statcache.json"
    monkeypatch.setattr(statcache, "CTIME_IS_CHANGE_TIME", False)
    loaded = StatCache.load(path)
    assert (loaded.records, loaded.directories, loaded.state) == ({}, {}, None)
    assert not loaded.unchanged(PACKAGE, directory)
    path.unlink()
    cache = StatCache.load(path)
    cache.package_hashes(PACKAGE, directory)
    cache.save([PACKAGE], before_ns=2**62)
    assert not path.exists()


def _times_beyond_64_bits() -> bool:
    """tmpfs keeps times whose nanoseconds since 1970 do not fit in 64 bits."""
    try:
        with tempfile.NamedTemporaryFile(dir="/dev/shm") as probe:
            os.utime(probe.name, ns=(0, -(2**63) - 10**9))
            return os.stat(probe.name).st_mtime_ns < -(2**63)
    except OSError:
        return False


@pytest.mark.skipif(not _times_beyond_64_bits(), reason="no tmpfs at /dev/shm")
def test_a_time_beyond_64_bits_is_hashed_each_run_not_recorded() -> None:
    """Keys are packed in 64-bit fields: a file whose time does not fit is left out of the
    record (hashed again on each run, as a racy one), and the no-op check of a package
    recorded before such a time was set answers "changed" instead of raising."""
    with tempfile.TemporaryDirectory(dir="/dev/shm") as shm:
        root = Path(shm)
        directory = _package(root)
        far = directory / "lib" / "a.js"
        cache = _recorded_all(root, directory)
        assert cache.unchanged(PACKAGE, directory)
        os.utime(far, ns=(0, -(2**63) - 10**9))
        assert not StatCache.load(root / "statcache.json").unchanged(PACKAGE, directory)
        cache = StatCache.load(root / "statcache.json")
        assert cache.package_hashes(PACKAGE, directory) == tree_hashes(directory)
        cache.save([PACKAGE], before_ns=2**62)
        loaded = StatCache.load(root / "statcache.json")
        assert set(loaded.records[PACKAGE]) == {"manifest.json"}
        assert loaded.directories == {} and not loaded.unchanged(PACKAGE, directory)


def _recorded_all(root: Path, directory: Path) -> StatCache:
    """A cache recording every directory and file of ``directory``, loaded again."""
    path = root / "statcache.json"
    cache = StatCache.load(path)
    cache.package_hashes(PACKAGE, directory)
    cache.save([PACKAGE], before_ns=2**62)
    later = 2**62 + 1
    os.utime(path, ns=(later, later))
    return StatCache.load(path)


def test_a_save_fsyncs_nothing_and_what_a_power_cut_leaves_never_passes_a_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without fsync a power cut can leave the previous cache, or the new one empty, short
    # or with a zeroed tail: each is ignored whole or matches no changed file.
    synced = count_fsyncs(monkeypatch)
    directory, path, _ = _saved(tmp_path)
    assert synced == []
    monkeypatch.undo()

    whole = path.read_bytes()
    (directory / "lib" / "a.js").write_text("export const a = 2;\n")  # same size, changed
    left = [b"", whole[:-1], whole[: len(whole) // 2], whole[:-40] + bytes(40), whole]
    for torn in left:
        path.write_bytes(torn)
        hashes = StatCache.load(path).package_hashes(PACKAGE, directory)
        assert hashes == tree_hashes(directory), torn[-50:]
