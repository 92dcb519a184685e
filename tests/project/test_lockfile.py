"""splice.lock: round trips, key order, deletion when empty, legacy fallback, malformed entries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, ProjectError
from splice_build.project.lockfile import LockEntry, Lockfile, load_lockfile, save_lockfile
from splice_build.spec.permissions import Permissions
from testing.projects import (
    FILES_DIGEST,
    INTEGRITY,
    KEY_ID,
    assert_problems_bounded,
    lock_entry_json,
    write_json,
)

RESOLVED = "http://127.0.0.1:8787/packages/acme/tool/1.0.0/download"


def _full_entry() -> LockEntry:
    return LockEntry(
        version="1.0.0",
        integrity=INTEGRITY,
        resolved=RESOLVED,
        registry="http://127.0.0.1:8787",
        size=1234,
        files=FILES_DIGEST,
        permissions=Permissions.from_json(
            {"fs": {"read": ["data"], "write": []}, "network": ["api.example.com"], "env": []}
        ),
        signed_by=KEY_ID,
    )


def test_round_trip_key_order_and_sorted_ids(tmp_path: Path) -> None:
    minimal = LockEntry("2.0.0-beta.1", INTEGRITY, "http://r/packages/a/b/2.0.0-beta.1/download")
    lock = Lockfile({"@z/last": _full_entry(), "@a/b": minimal})
    save_lockfile(tmp_path, lock)
    text = (tmp_path / "splice.lock").read_text(encoding="utf-8")
    assert text.endswith("}\n") and not text.endswith("\n\n")
    document = json.loads(text)
    assert list(document) == ["lockfileVersion", "packages"]
    assert list(document["packages"]) == ["@a/b", "@z/last"]
    assert list(document["packages"]["@z/last"]) == [
        "version",
        "integrity",
        "size",
        "files",
        "registry",
        "resolved",
        "permissions",
        "signedBy",
    ]
    # TS always writes registry, from resolved when the entry has none.
    assert list(document["packages"]["@a/b"]) == ["version", "integrity", "registry", "resolved"]
    assert document["packages"]["@a/b"]["registry"] == "http://r"
    assert text.startswith('{\n  "lockfileVersion": 1,\n  "packages": {\n    "@a/b": {\n')
    loaded = load_lockfile(tmp_path)
    assert loaded.get("@z/last") == _full_entry()
    # An entry without registry gets it from `resolved` (old locks), so it is written next time.
    assert loaded.get("@a/b") == LockEntry(minimal.version, INTEGRITY, minimal.resolved, "http://r")


def test_typescript_written_entry_reads_back_byte_identical(tmp_path: Path) -> None:
    document = {"lockfileVersion": 1, "packages": {"@acme/tool": lock_entry_json()}}
    original = json.dumps(document, indent=2) + "\n"
    (tmp_path / "splice.lock").write_text(original)
    save_lockfile(tmp_path, load_lockfile(tmp_path))
    assert (tmp_path / "splice.lock").read_text() == original


def test_missing_lock_is_empty(tmp_path: Path) -> None:
    assert load_lockfile(tmp_path) == Lockfile({})


def test_empty_lock_deletes_the_file(tmp_path: Path) -> None:
    save_lockfile(tmp_path, Lockfile({}).with_entry("@a/b", _full_entry()))
    assert (tmp_path / "splice.lock").exists()
    save_lockfile(tmp_path, load_lockfile(tmp_path).without("@a/b"))
    assert not (tmp_path / "splice.lock").exists()
    save_lockfile(tmp_path, Lockfile({}))  # nothing to delete: still fine
    assert list(tmp_path.iterdir()) == []


def test_legacy_lock_is_read_and_deleted_on_next_write(tmp_path: Path) -> None:
    legacy = write_json(
        tmp_path / "splice-lock.json",
        {"lockfileVersion": 1, "packages": {"@acme/tool": lock_entry_json()}},
    )
    lock = load_lockfile(tmp_path)
    assert lock.get("@acme/tool") is not None
    save_lockfile(tmp_path, lock.with_entry("@a/b", _full_entry()))
    assert not legacy.exists()
    assert set(load_lockfile(tmp_path).packages) == {"@a/b", "@acme/tool"}


def test_splice_lock_wins_over_legacy(tmp_path: Path) -> None:
    write_json(tmp_path / "splice-lock.json", {"lockfileVersion": 1, "packages": {"@old/x": {}}})
    write_json(tmp_path / "splice.lock", {"lockfileVersion": 1, "packages": {}})
    assert load_lockfile(tmp_path) == Lockfile({})


def test_legacy_errors_name_the_legacy_file(tmp_path: Path) -> None:
    (tmp_path / "splice-lock.json").write_text("{")
    with pytest.raises(ProjectError) as info:
        load_lockfile(tmp_path)
    assert info.value.message.startswith("splice-lock.json is invalid: not valid JSON")


def test_empty_lock_also_removes_legacy(tmp_path: Path) -> None:
    write_json(tmp_path / "splice-lock.json", {"lockfileVersion": 1, "packages": {}})
    save_lockfile(tmp_path, Lockfile({}))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"version": "1.0"}, "version: "),
        ({"version": 1}, "version: must be a string"),
        ({"version": None}, "version: missing"),
        ({"integrity": "sha256-XYZ"}, "integrity: must look like sha256-<64 lowercase hex digits>"),
        ({"integrity": "sha512-" + "a" * 64}, "integrity: "),
        ({"integrity": None}, "integrity: missing"),
        ({"resolved": 5}, "resolved: must be a string"),
        ({"resolved": None}, "resolved: missing"),
        ({"registry": ["x"]}, "registry: must be a string"),
        ({"size": -1}, "size: must be a non-negative integer"),
        ({"size": 1.5}, "size: must be a non-negative integer"),
        ({"size": True}, "size: must be a non-negative integer"),
        ({"size": 2**53}, "size: must be a non-negative integer"),
        ({"size": "12"}, "size: must be a non-negative integer"),
        ({"files": "sha256-" + "A" * 64}, "files: must look like sha256-<64 lowercase hex digits>"),
        (
            {"signedBy": "ed25519:0123"},
            "signedBy: must look like ed25519:<16 lowercase hex digits>",
        ),
        ({"signedBy": "ed25519:0123456789abcdef\n"}, "signedBy: "),
        ({"permissions": {"shell": True}}, "permissions: "),
        ({"permissions": {"network": ["http://x"]}}, "permissions: "),
    ],
)
def test_malformed_entry_names_package_and_field(
    tmp_path: Path, override: dict[str, object], field: str
) -> None:
    entry = lock_entry_json("@acme/tool", **override)  # None removes the field
    write_json(tmp_path / "splice.lock", {"lockfileVersion": 1, "packages": {"@acme/tool": entry}})
    with pytest.raises(ProjectError) as info:
        load_lockfile(tmp_path)
    assert info.value.code is ErrorCode.INVALID_PROJECT
    prefix = f"splice.lock is invalid: malformed entry for @acme/tool: {field}"
    assert info.value.message.startswith(prefix), info.value.message


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("[]", "splice.lock is invalid: the top level must be a JSON object"),
        (
            '{"lockfileVersion": 2, "packages": {}}',
            "splice.lock is invalid: lockfileVersion: must be 1",
        ),
        ('{"packages": {}}', "splice.lock is invalid: lockfileVersion: must be 1"),
        (
            '{"lockfileVersion": 1, "packages": 3}',
            "splice.lock is invalid: packages: must be an object",
        ),
        (
            '{"lockfileVersion": 1, "packages": {"@a/b": "1.0.0"}}',
            "splice.lock is invalid: malformed entry for @a/b: must be an object",
        ),
        (
            '{"lockfileVersion": 1, "packages": {"nope": {}}}',
            "splice.lock is invalid: malformed entry for nope: invalid package id",
        ),
    ],
)
def test_malformed_documents(tmp_path: Path, document: str, message: str) -> None:
    (tmp_path / "splice.lock").write_text(document)
    with pytest.raises(ProjectError) as info:
        load_lockfile(tmp_path)
    assert info.value.code is ErrorCode.INVALID_PROJECT
    assert info.value.message.startswith(message), info.value.message


def test_all_problems_are_listed(tmp_path: Path) -> None:
    entries = {"@a/a": lock_entry_json(size=-1, files="x"), "@a/b": lock_entry_json(version="x")}
    write_json(tmp_path / "splice.lock", {"lockfileVersion": 1, "packages": entries})
    with pytest.raises(ProjectError) as info:
        load_lockfile(tmp_path)
    assert [d.split(":")[0] for d in info.value.details] == [
        "malformed entry for @a/a",
        "malformed entry for @a/a",
        "malformed entry for @a/b",
    ]


def test_the_problems_an_invalid_lock_shows_are_bounded(tmp_path: Path) -> None:
    """A checkout's splice.lock chooses how many problems it has and what each quotes: 5,000
    malformed entries with long names and versions made every command there (list, install,
    run, verify) print 6 MB. The first 20 are shown, each cut at 500 characters, then how
    many more, as for splice.json."""
    entries = {"@a/" + "b" * (600 + n): lock_entry_json(version="x" * 600) for n in range(300)}
    write_json(tmp_path / "splice.lock", {"lockfileVersion": 1, "packages": entries})
    with pytest.raises(ProjectError) as refused:
        load_lockfile(tmp_path)
    assert_problems_bounded(refused.value, 580)


def test_a_lock_read_again_is_parsed_again_when_any_byte_differs(tmp_path: Path) -> None:
    """The last lock read is kept by its exact bytes: the same bytes give the same parse, a
    same-size edit or the same text in the legacy file is read afresh."""
    save_lockfile(tmp_path, Lockfile({"@acme/tool": _full_entry()}))
    first = load_lockfile(tmp_path)
    assert load_lockfile(tmp_path) is first
    lock_file = tmp_path / "splice.lock"
    text = lock_file.read_text(encoding="utf-8")
    edited = text.replace('"1.0.0"', '"1.0.1"', 1)
    assert len(edited) == len(text) and edited != text
    lock_file.write_text(edited, encoding="utf-8")
    second = load_lockfile(tmp_path)
    assert second.packages["@acme/tool"].version == "1.0.1"
    assert second.source != first.source
    lock_file.write_text("{", encoding="utf-8")
    with pytest.raises(ProjectError) as info:
        load_lockfile(tmp_path)
    assert info.value.code is ErrorCode.INVALID_PROJECT
    lock_file.unlink()
    (tmp_path / "splice-lock.json").write_text(edited, encoding="utf-8")
    legacy = load_lockfile(tmp_path)
    assert legacy.packages == second.packages and legacy.source is None


def test_an_invalid_lock_hints_where_it_is_and_how_to_mend_it(tmp_path: Path) -> None:
    # "splice.lock is invalid: …" had no hint, and a project found above the working
    # directory (or one member of a monorepo) left the user to find which file it was.
    (tmp_path / "splice.lock").write_text("{bad")
    with pytest.raises(ProjectError) as invalid:
        load_lockfile(tmp_path)
    assert invalid.value.code is ErrorCode.INVALID_PROJECT
    assert invalid.value.hint == (
        f"Restore {tmp_path / 'splice.lock'} from version control, or remove it and run "
        "`splice install` to lock the ranges of splice.json again."
    )


def test_a_package_locked_twice_is_refused(tmp_path: Path) -> None:
    """Two entries for one package (a hand edit, or a merge that kept both sides) are valid
    JSON whose ``JSON.parse`` keeps the last: the install took that one silently, while a
    person reading the lock may take the first (main: 2.0.0 loaded, no error)."""
    first = json.dumps(lock_entry_json("@acme/tool", "1.0.0"))
    second = json.dumps(lock_entry_json("@acme/tool", "2.0.0"))
    (tmp_path / "splice.lock").write_text(
        f'{{"lockfileVersion": 1, "packages": {{"@acme/tool": {first}, "@acme/tool": {second}}}}}'
    )
    with pytest.raises(ProjectError) as caught:
        load_lockfile(tmp_path)
    assert caught.value.code is ErrorCode.INVALID_PROJECT
    assert caught.value.message == (
        'splice.lock is invalid: the key "@acme/tool" is given twice in one object'
    )
