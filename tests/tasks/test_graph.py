"""The install graph, counted task by task: incrementality, repair, lock pinning, consent."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpliceError
from splice_build.project.layout import ProjectLayout
from splice_build.sdk import Splice
from splice_build.spec.manifest import Manifest
from splice_build.spec.tree_digest import tree_digest
from testing.registry_fixtures import new_project

GREETER = "@acme/greeter"
OTHER = "@acme/other"


def _installed(project: Path) -> Splice:
    splice = Splice(project)
    splice.add([f"{GREETER}@^1.0.0", OTHER])
    return splice


def _executed(splice: Splice) -> list[str]:
    assert splice.last_tasks is not None
    return splice.last_tasks.executed


def test_second_install_executes_no_install_task(tmp_path: Path, registry: dict) -> None:
    project = new_project(tmp_path / "p")
    splice = _installed(project)
    splice.install()
    ProjectLayout(project).stat_cache.unlink()  # no record of the last run: the graph runs
    splice.install()
    assert _executed(splice) == ["verify"]  # one task per project hashes every package
    # That run found a complete no-op and recorded it: the next one answers from the record
    # (tasks/noop.py), running no task at all.
    reports = splice.install()
    assert _executed(splice) == []
    assert [(r.name, r.already_installed) for r in reports] == [(GREETER, True), (OTHER, True)]


def test_a_no_op_install_reports_only_a_manifest_it_can_vouch_for(
    tmp_path: Path, registry: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The no-op install answers from the recorded state, reading each installed manifest
    for its report. A manifest changed after its files were compared by stat (here: the
    stat check is made to pass) is not reported: its bytes no longer hash as recorded, so
    the graph runs, finds the package modified and restores it."""
    from splice_build.install.statcache import StatCache

    project = new_project(tmp_path / "p")
    splice = _installed(project)
    splice.install()
    splice.install()
    assert _executed(splice) == []  # the fast path
    manifest_path = ProjectLayout(project).package_dir(GREETER) / "manifest.json"
    good = manifest_path.read_bytes()
    real_unchanged = StatCache.unchanged

    def unchanged_then_swapped(
        self: StatCache, package_id: str, directory: Path, **shared: object
    ) -> bool:
        same = real_unchanged(self, package_id, directory, **shared)
        if package_id == GREETER:
            swapped = json.loads(good)
            swapped["description"] = "changed after the stat check"
            manifest_path.write_text(json.dumps(swapped))
        return same

    monkeypatch.setattr(StatCache, "unchanged", unchanged_then_swapped)
    reports = splice.install()
    assert _executed(splice) != []  # the graph ran
    restored = {r.name: r.already_installed for r in reports}
    assert restored[GREETER] is False, restored  # restored from the verified artifact
    assert manifest_path.read_bytes() == good


def test_touching_a_file_reruns_only_the_verification_hash(tmp_path: Path, registry: dict) -> None:
    project = new_project(tmp_path / "p")
    splice = _installed(project)
    splice.install()
    hello = ProjectLayout(project).package_dir(GREETER) / "tools" / "hello.js"
    os.utime(hello, (12345, 12345))
    os.utime(project / "splice.json", (12345, 12345))
    splice.install()
    assert _executed(splice) == ["verify"]


def test_changing_one_range_rebuilds_only_that_package(tmp_path: Path, registry: dict) -> None:
    project = new_project(tmp_path / "p")
    splice = _installed(project)
    splice.install()
    data = json.loads((project / "splice.json").read_text())
    data["packages"][GREETER] = "1.1.0"
    (project / "splice.json").write_text(json.dumps(data))
    lock = json.loads((project / "splice.lock").read_text())
    del lock["packages"][GREETER]
    (project / "splice.lock").write_text(json.dumps(lock))
    reports = splice.install()
    installs = [t for t in _executed(splice) if t.startswith(("install", "fetch:"))]
    assert installs == [f"fetch:{GREETER}", "install"]
    assert {r.name: (r.version, r.already_installed) for r in reports} == {
        GREETER: ("1.1.0", False),
        OTHER: ("1.0.0", True),
    }


@pytest.mark.parametrize("damage", ["edit", "add_hidden", "delete"])
def test_modified_package_is_refused_then_restored_offline(
    tmp_path: Path, registry: dict, home: Path, damage: str
) -> None:
    project = new_project(tmp_path / "p")
    splice = _installed(project)
    directory = ProjectLayout(project).package_dir(GREETER)
    if damage == "edit":
        (directory / "tools" / "hello.js").write_text(
            "export default () => ({ message: 'pwned' });\n"
        )
    elif damage == "add_hidden":
        (directory / ".hidden").write_text("x")
    else:
        (directory / "SKILL.md").unlink()
    with pytest.raises(SpliceError) as info:
        splice.run("greeter.hello", {"name": "x"})
    assert info.value.code is ErrorCode.INSTALLED_PACKAGE_MODIFIED
    assert {r["name"]: r["status"] for r in splice.list()}[GREETER] == "invalid"
    shutil.rmtree(home / "registry")  # offline: nothing but the verified cache
    offline = Splice(project, registry="http://127.0.0.1:9")
    reports = {r.name: r.already_installed for r in offline.install()}
    assert "install" in _executed(offline)
    assert reports == {GREETER: False, OTHER: True}
    assert offline.run("greeter.hello", {"name": "x"}).to_json()["output"] == {
        "message": "Hello, x."
    }


def test_offline_without_cache_is_unreachable(tmp_path: Path, registry: dict, home: Path) -> None:
    project = new_project(tmp_path / "p")
    _installed(project)
    shutil.rmtree(ProjectLayout(project).packages_dir)
    shutil.rmtree(home / "cache")
    with pytest.raises(SpliceError) as info:
        Splice(project, registry="http://127.0.0.1:9").install()
    assert info.value.code is ErrorCode.REGISTRY_UNREACHABLE


def test_corrupt_cache_entry_is_fetched_again(tmp_path: Path, registry: dict, home: Path) -> None:
    project = new_project(tmp_path / "p")
    splice = _installed(project)
    shutil.rmtree(ProjectLayout(project).packages_dir)
    for path in (home / "cache").rglob("*"):
        if path.is_file():
            path.write_bytes(b"corrupt")
    reports = splice.install()
    assert not any(r.from_cache for r in reports)
    assert [r["status"] for r in splice.list()] == ["ok", "ok"]


def test_fresh_clone_reproduces_lock_and_files(tmp_path: Path, registry: dict) -> None:
    first = new_project(tmp_path / "a")
    _installed(first)
    clone = tmp_path / "b"
    clone.mkdir()
    for name in ("splice.json", "splice.lock"):
        shutil.copy(first / name, clone / name)
    Splice(clone).install()
    assert (clone / "splice.lock").read_bytes() == (first / "splice.lock").read_bytes()
    a, b = ProjectLayout(first).packages_dir, ProjectLayout(clone).packages_dir
    files_a = {p.relative_to(a): p.read_bytes() for p in a.rglob("*") if p.is_file()}
    files_b = {p.relative_to(b): p.read_bytes() for p in b.rglob("*") if p.is_file()}
    assert files_a == files_b and files_a


def test_lock_mismatch_when_registry_integrity_differs(
    tmp_path: Path, registry: dict, home: Path
) -> None:
    project = new_project(tmp_path / "p")
    _installed(project)
    lock = json.loads((project / "splice.lock").read_text())
    lock["packages"][GREETER]["integrity"] = "sha256-" + "0" * 64
    lock["packages"][GREETER].pop("files")
    (project / "splice.lock").write_text(json.dumps(lock))
    shutil.rmtree(ProjectLayout(project).packages_dir)
    before = (project / "splice.lock").read_bytes()
    with pytest.raises(SpliceError) as info:
        Splice(project).install()
    assert info.value.code is ErrorCode.LOCK_MISMATCH
    assert (project / "splice.lock").read_bytes() == before


def test_lock_outside_range_is_a_lock_mismatch(tmp_path: Path, registry: dict) -> None:
    project = new_project(tmp_path / "p")
    _installed(project)
    data = json.loads((project / "splice.json").read_text())
    data["packages"][GREETER] = "^2.0.0"
    (project / "splice.json").write_text(json.dumps(data))
    with pytest.raises(SpliceError) as info:
        Splice(project).install()
    assert info.value.code is ErrorCode.LOCK_MISMATCH
    assert "splice update" in (info.value.hint or "")


def test_consent_refused_changes_nothing_and_widening_asks_again(
    tmp_path: Path, registry: dict
) -> None:
    project = new_project(tmp_path / "p")
    splice = _installed(project)
    before = {n: (project / n).read_bytes() for n in ("splice.json", "splice.lock")}
    with pytest.raises(SpliceError) as info:
        splice.add([f"{GREETER}@2.0.0"])
    assert info.value.code is ErrorCode.PERMISSIONS_NOT_ACCEPTED
    assert info.value.details == ("network: api.example.com",)
    assert {n: (project / n).read_bytes() for n in before} == before
    asked: list[tuple[list[str], str]] = []
    reports = splice.add(
        [f"{GREETER}@2.0.0"], accept_permissions=lambda lines, s: asked.append((lines, s)) or True
    )
    assert asked == [(["network: api.example.com"], f"{GREETER}@2.0.0")]
    assert reports[0].previous_version == "1.1.0"
    grant = json.loads((project / "splice.lock").read_text())["packages"][GREETER]["permissions"]
    assert grant["network"] == ["api.example.com"]


def test_widened_manifest_without_grant_does_not_run(tmp_path: Path, registry: dict) -> None:
    project = new_project(tmp_path / "p")
    splice = _installed(project)
    manifest_path = ProjectLayout(project).package_dir(GREETER) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["permissions"] = {"network": ["evil.example.com"]}
    manifest_path.write_text(json.dumps(manifest))
    lock = json.loads((project / "splice.lock").read_text())
    # a lock whose files digest matches the widened copy: the grant still refuses it
    lock["packages"][GREETER]["files"] = tree_digest(manifest_path.parent)
    (project / "splice.lock").write_text(json.dumps(lock))
    with pytest.raises(SpliceError) as info:
        splice.run("greeter.hello", {"name": "x"})
    assert info.value.code is ErrorCode.PERMISSIONS_NOT_GRANTED


def test_tool_resolution(tmp_path: Path, registry: dict) -> None:
    project = new_project(tmp_path / "p")
    splice = _installed(project)
    with pytest.raises(SpliceError) as info:
        splice.resolve_tool("hello")
    assert info.value.code is ErrorCode.AMBIGUOUS_TOOL
    assert info.value.details == (GREETER, OTHER)
    for ref in ("greeter.hello", f"{GREETER}.hello", "acme_greeter_hello"):
        pkg, tool = splice.resolve_tool(ref)
        assert (pkg.id, tool) == (GREETER, "hello")
    for missing in ("missing.hello", 7, None, ["acme_greeter_hello"]):
        with pytest.raises(SpliceError) as info:
            splice.resolve_tool(missing)  # type: ignore[arg-type]
        assert info.value.code is ErrorCode.NOT_INSTALLED
    assert [d["qualifiedName"] for d in splice.tools()] == [f"{GREETER}.hello", f"{OTHER}.hello"]


def test_an_mcp_name_reads_no_other_manifest(
    tmp_path: Path, registry: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``<ns>_<name>_<tool>`` says its package: resolving it costs the same with 2 packages
    as with 200 (a bare tool name still reads every installed manifest)."""
    from splice_build import sdk

    project = new_project(tmp_path / "p")
    splice = _installed(project)
    read: list[str] = []
    real = sdk.read_installed_manifest

    def recording(directory: Path) -> Manifest:
        read.append(directory.name)
        return real(directory)

    monkeypatch.setattr(sdk, "read_installed_manifest", recording)
    pkg, tool = splice.resolve_tool("acme_greeter_hello")
    assert (pkg.id, tool) == (GREETER, "hello")
    assert read == []
    for ref in ("acme_greeter_nope", "acme_missing_hello", "acme_greeter_hello_x", "acme_greeter"):
        with pytest.raises(SpliceError) as info:
            splice.resolve_tool(ref)
        assert info.value.code is ErrorCode.NOT_INSTALLED, ref
    assert read == []
    with pytest.raises(SpliceError):
        splice.resolve_tool("hello")
    assert sorted(read) == ["greeter", "other"]


@pytest.mark.parametrize("pooled", [False, True])
@pytest.mark.parametrize("when", ["while hashed", "after the check"])
def test_a_manifest_swapped_during_a_call_is_never_remembered(
    tmp_path: Path, registry: dict, monkeypatch: pytest.MonkeyPatch, pooled: bool, when: str
) -> None:
    """A ``manifest.json`` replaced during a call (a concurrent install, or an attacker who
    swaps it back before anyone looks), right after the check hashed it or right after the
    check ended, never describes the package: nothing read from it outlives the call, so once
    the bytes are the lock's again every call is described by them. The swapped manifest asks
    for no more than the grant (it would pass the grant check), only refuses every input."""
    from splice_build import sdk
    from splice_build.runtime.pool import WarmPool
    from splice_build.spec import tree_digest as hashing

    project = new_project(tmp_path / "p")
    _installed(project).close()
    manifest_path = ProjectLayout(project).package_dir(GREETER) / "manifest.json"
    good = manifest_path.read_bytes()
    swapped = json.loads(good)
    for tool in swapped["tools"]:
        tool["input"] = {"type": "object", "properties": {}, "additionalProperties": False}
    swaps: list[str] = []

    def swap() -> None:
        if not swaps:
            manifest_path.write_text(json.dumps(swapped))
            swaps.append(when)

    if when == "while hashed":
        real_hash = hashing.hash_package_file_and_stat

        def hash_then_swap(path: str) -> tuple[str, os.stat_result]:
            hashed = real_hash(path)
            if path == str(manifest_path):
                swap()
            return hashed

        monkeypatch.setattr(hashing, "hash_package_file_and_stat", hash_then_swap)
    else:
        real_resolve = sdk.Splice.resolve_tool

        def resolve_then_swap(self: Splice, ref: str) -> tuple:
            resolved = real_resolve(self, ref)
            swap()
            return resolved

        monkeypatch.setattr(sdk.Splice, "resolve_tool", resolve_then_swap)
    splice = Splice(project, broker=False, pool=WarmPool() if pooled else None)
    try:
        first = None
        try:
            first = splice.run("greeter.hello", {"name": "x"})
        except SpliceError as exc:
            assert exc.code is ErrorCode.INSTALLED_PACKAGE_MODIFIED
        assert swaps
        if first is not None:  # after the check: described by the bytes the check verified
            refused = first.error is not None and first.error.code == "INSTALLED_PACKAGE_MODIFIED"
            assert refused, first.to_json()  # re-hashed once the process is started
        manifest_path.write_bytes(good)  # the lock's bytes again
        monkeypatch.undo()
        assert splice.check(GREETER).manifest == Manifest.from_json(good)
        for _ in range(2):
            result = splice.run("greeter.hello", {"name": "x"})
            assert result.ok, result.to_json()
    finally:
        splice.close()


def test_load_describes_the_verified_package(tmp_path: Path, registry: dict) -> None:
    """``Splice.load`` gives the runtime's view of a checked package, described by the
    manifest the check verified, and refuses a package whose files differ from the lock."""
    project = new_project(tmp_path / "p")
    splice = _installed(project)
    loaded = splice.load(GREETER)
    assert loaded.manifest is splice.check(GREETER).manifest  # the verified bytes' parse
    assert (loaded.id, loaded.dir) == (GREETER, ProjectLayout(project).package_dir(GREETER))
    manifest_path = loaded.dir / "manifest.json"
    manifest_path.write_bytes(manifest_path.read_bytes() + b"\n")
    with pytest.raises(SpliceError) as info:
        splice.load(GREETER)
    assert info.value.code is ErrorCode.INSTALLED_PACKAGE_MODIFIED


def test_remove_and_verify(tmp_path: Path, registry: dict) -> None:
    project = new_project(tmp_path / "p")
    splice = _installed(project)
    report = splice.verify(GREETER)
    assert report["verified"] is True
    assert {c["id"]: c["status"] for c in report["checks"]}["installed"] == "passed"
    assert splice.remove([OTHER]) == [{"name": OTHER, "version": "1.0.0"}]
    assert [r["name"] for r in splice.list()] == [GREETER]
    with pytest.raises(SpliceError) as info:
        splice.remove([OTHER])
    assert info.value.code is ErrorCode.NOT_INSTALLED


def test_outdated_and_update(tmp_path: Path, registry: dict) -> None:
    project = new_project(tmp_path / "p")
    splice = Splice(project)
    splice.add([f"{GREETER}@1.0.0"])
    data = json.loads((project / "splice.json").read_text())
    data["packages"][GREETER] = "^1.0.0"
    (project / "splice.json").write_text(json.dumps(data))
    [row] = splice.outdated()
    assert (row["current"], row["wanted"], row["latest"], row["status"]) == (
        "1.0.0",
        "1.1.0",
        "2.0.0",
        "update-available",
    )
    [result] = splice.update()
    assert (result["from"], result["to"], result["status"]) == ("1.0.0", "1.1.0", "updated")
    assert json.loads((project / "splice.json").read_text())["packages"][GREETER] == "^1.0.0"


def test_a_package_named_twice_is_one_row_of_outdated_and_update(
    tmp_path: Path, registry: dict
) -> None:
    """``outdated([id, id])`` looked the package up twice and returned two rows, and
    ``update`` reported it twice (the CLI printed it twice), while ``add`` and ``remove``
    take a package named twice once."""
    splice = Splice(new_project(tmp_path / "p"))
    splice.add([f"{GREETER}@^1.0.0", f"{OTHER}@^1.0.0"])
    assert [row["id"] for row in splice.outdated([OTHER, GREETER, OTHER])] == [OTHER, GREETER]
    assert [row["id"] for row in splice.update([GREETER, GREETER])] == [GREETER]


@pytest.mark.parametrize("answer", ["no", 1, [False], None])
def test_only_a_true_answer_grants_permissions(
    tmp_path: Path, registry: dict, answer: object
) -> None:
    """A consent callback grants only by answering ``True``: a truthy "no", 1 or a list is a
    refusal (fail closed), and nothing is written."""
    project = new_project(tmp_path / "p")
    splice = _installed(project)
    before = {n: (project / n).read_bytes() for n in ("splice.json", "splice.lock")}
    with pytest.raises(SpliceError) as info:
        splice.add([f"{GREETER}@2.0.0"], accept_permissions=lambda lines, s: answer)  # type: ignore[arg-type,return-value]
    assert info.value.code is ErrorCode.PERMISSIONS_NOT_ACCEPTED
    assert {n: (project / n).read_bytes() for n in before} == before


@pytest.mark.parametrize("option", ["accept_permissions", "require_signed", "allow_signer_change"])
def test_a_yes_or_no_option_that_is_no_bool_is_refused_before_anything_runs(
    tmp_path: Path, registry: dict, option: str
) -> None:
    """``allow_signer_change="no"`` (a string read from a config file) was truthy, so it
    allowed a signer change; every yes-or-no option is a ``bool`` (consent: or a callback)."""
    project = new_project(tmp_path / "p")
    splice = _installed(project)
    before = {n: (project / n).read_bytes() for n in ("splice.json", "splice.lock")}
    for call in (
        lambda: splice.add([f"{GREETER}@2.0.0"], **{option: "no"}),
        lambda: splice.install(**{option: "no"}),
        lambda: splice.update(**{option: "no"}),
    ):
        with pytest.raises(SpliceError) as info:
            call()
        assert info.value.code is ErrorCode.USAGE
    assert {n: (project / n).read_bytes() for n in before} == before
