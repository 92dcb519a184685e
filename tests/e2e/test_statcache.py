"""The stat cache of a no-op install/sync (docs/lifecycle.md#the-stat-cache) and the no-op fast
path it feeds (docs/lifecycle.md#the-no-op-fast-path), through the real binary against the
real registry server: every kind of change is still found, a damaged cache is ignored and
rebuilt, and ``splice run``/``splice verify`` never consult it."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from splice_build.install.statcache import VERSION
from splice_build.project.layout import ProjectLayout
from testing.acls import posix_acls_kept, set_access_acl
from testing.cli import Completed, main_in_fresh_process, run_splice
from testing.registry_fixtures import publish
from testing.registry_server import registry_server
from testing.stat_records import edit_keeping_mtime, forge_clean_record, unpacked
from testing.workspaces import make_workspace, sync_in_place

IDS = ["@acme/pkg00", "@acme/pkg01"]
FILES = {"lib/data.txt": "0123456789abcdef\n", "lib/deep/more.txt": "more bytes here\n"}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    store = tmp_path / "served-data"
    for package_id in IDS:
        publish(store, tmp_path / "pkgs", name=package_id.split("/")[1], files=FILES)
    with registry_server(store, admin=False) as server:
        yield server.url


@pytest.fixture
def project(tmp_path: Path, served: str) -> Path:
    """One synced workspace member whose every installed file the stat cache records."""
    root = tmp_path / "ws"
    [member] = make_workspace(root, 1, IDS, len(IDS))
    for _ in range(2):  # the first run installs after its verify step; the second records
        done = _sync(root, served)
        assert done.code == 0, done.stderr
    recorded = unpacked(_cache(member)["packages"]["@acme/pkg00"])
    assert set(recorded) == {"manifest.json", "SKILL.md", "tools/hello.js", *FILES}
    directories = unpacked(_cache(member)["directories"]["@acme/pkg00"])
    assert set(directories) == {"", "lib", "lib/deep", "tools"}
    return member


def _sync(root: Path, url: str, *args: str) -> Completed:
    return run_splice("--registry", url, "--json", "sync", *args, cwd=root)


def _cache(member: Path) -> dict:
    return json.loads(ProjectLayout(member).stat_cache.read_text())


def _changes(done: Completed) -> list[tuple[str, str]]:
    [project] = done.json()["projects"]
    return [(c["name"], c["action"]) for c in project["changes"]]


def _data_file(member: Path) -> Path:
    return ProjectLayout(member).package_dir("@acme/pkg00") / "lib" / "data.txt"


def _same_size_same_mtime(path: Path, text: str) -> None:
    before = path.stat().st_mtime_ns
    edit_keeping_mtime(path, text)
    assert path.stat().st_mtime_ns == before


def _replaced(path: Path, text: str) -> None:
    """A new inode under the old name, same size and mtime as the old file."""
    before = path.stat()
    other = path.with_name(".replacement")
    other.write_text(text)
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(other, path)
    assert path.stat().st_ino != before.st_ino


def _hidden_file(path: Path) -> None:
    (path.parent / ".hidden").write_text("")


def _removed(path: Path) -> None:
    path.unlink()


def _added_with_directory_times_restored(path: Path) -> None:
    """A file added next to ``path``, its directory's times put back: only the directory's
    ``ctime`` tells (the no-op check stats directories, it does not list them)."""
    before = path.parent.stat()
    (path.parent / "added.txt").write_text("new\n")
    os.utime(path.parent, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.parent.stat().st_mtime_ns == before.st_mtime_ns


def _renamed(path: Path) -> None:
    path.rename(path.with_name("renamed.txt"))


CHANGES = {
    "content, mtime restored": lambda p: _same_size_same_mtime(p, "0123456789ABCDEF\n"),
    "replaced by a new inode": lambda p: _replaced(p, "fedcba9876543210\n"),
    "hidden file added": _hidden_file,
    "file removed": _removed,
    "file added, directory times restored": _added_with_directory_times_restored,
    "file renamed in its directory": _renamed,
}


def _executed(done: Completed) -> list[str]:
    return done.json()["tasks"]["executed"]


def test_a_no_op_sync_skips_the_graph(project: Path, served: str) -> None:
    root = project.parent.parent
    for args in ((), ("--check",)):
        done = _sync(root, served, *args)
        assert done.code == 0, done.stderr
        assert _executed(done) == []  # the fast path: no task ran
        [answer] = done.json()["projects"]
        assert answer["status"] == "ok"
        assert [p["name"] for p in answer["unchanged"]] == IDS
        assert "verify:packages/p00" in done.json()["tasks"]["upToDate"]


@pytest.mark.parametrize("change", list(CHANGES))
def test_every_change_is_found_past_the_stat_cache(project: Path, served: str, change: str) -> None:
    root = project.parent.parent
    assert _executed(_sync(root, served, "--check")) == []  # the fast path, until the change
    CHANGES[change](_data_file(project))
    checked = _sync(root, served, "--check")
    assert checked.code == 1, checked.stdout
    assert _changes(checked) == [("@acme/pkg00", "restore")]
    repaired = _sync(root, served)
    assert repaired.code == 0, repaired.stderr
    assert _data_file(project).read_text() == FILES["lib/data.txt"]
    assert sorted(p.name for p in _data_file(project).parent.iterdir()) == ["data.txt", "deep"]
    assert _changes(_sync(root, served, "--check")) == []


def _install(member: Path, url: str) -> tuple[Completed, list[str]]:
    """`splice install --json` in ``member``, and the heavy modules that run imported: the
    graph's (doit), the registry client's (httpx), OpenSSL's (hashlib: the fast path compares
    bytes, it hashes nothing), and ``logging`` (about 4 ms with ``traceback``; the fast path
    logs nothing)."""
    return main_in_fresh_process(
        ["--registry", url, "--json", "install"],
        cwd=member,
        watched=["doit", "httpx", "hashlib", "logging"],
    )


def test_a_no_op_install_answers_as_the_graph_does(project: Path, served: str) -> None:
    fast, heavy = _install(project, served)
    assert fast.code == 0, fast.stderr
    assert heavy == []  # neither the graph nor the registry client was loaded
    ProjectLayout(project).stat_cache.unlink()  # no recorded state: the graph answers
    graph, heavy = _install(project, served)
    assert (graph.code, heavy[:2]) == (0, ["doit", "hashlib"]), graph.stderr
    assert fast.json() == graph.json()
    assert [r["name"] for r in fast.json()] == IDS
    assert all(r["alreadyInstalled"] for r in fast.json())
    assert _install(project, served)[1] == []  # the graph's run recorded the state again


@pytest.mark.parametrize("change", list(CHANGES))
def test_install_restores_past_the_fast_path(project: Path, served: str, change: str) -> None:
    assert _install(project, served)[1] == []
    CHANGES[change](_data_file(project))
    repaired, heavy = _install(project, served)
    assert (repaired.code, heavy[:1]) == (0, ["doit"]), repaired.stderr
    assert _data_file(project).read_text() == FILES["lib/data.txt"]
    assert sorted(p.name for p in _data_file(project).parent.iterdir()) == ["data.txt", "deep"]
    # The restoring run records the copy it installed; the next one, finding it intact, the
    # state the fast path answers from (as after a first install).
    recording, heavy = _install(project, served)
    assert heavy[:1] == ["doit"]
    answered, heavy = _install(project, served)
    assert heavy == [] and answered.json() == recording.json()
    assert [r["alreadyInstalled"] for r in answered.json()] == [True, True]


def _install_mends_what_run_refuses(project: Path, served: str) -> None:
    """`splice run` refuses pkg00 as open to another user and hints `splice install`, which
    runs the graph (never the fast path) and leaves the package runnable."""
    refused = run_splice("--json", "run", "pkg00.hello", "name=Ada", cwd=project)
    assert refused.json()["error"]["code"] == "INSTALLED_PACKAGE_MODIFIED", refused.stdout
    assert "splice install" in refused.json()["error"]["hint"]
    repaired, heavy = _install(project, served)
    assert (repaired.code, heavy[:1]) == (0, ["doit"]), repaired.stderr
    ran = run_splice("--json", "run", "pkg00.hello", "name=Ada", cwd=project)
    assert ran.code == 0, ran.stdout


@pytest.mark.skipif(
    not posix_acls_kept(), reason="the temporary directory's file system keeps no POSIX ACLs"
)
def test_install_takes_an_acl_writer_from_the_scope_past_the_fast_path(
    project: Path, served: str
) -> None:
    """A scope directory another user may write through a POSIX ACL: `splice run` refuses
    its packages and hints `splice install`, which must run the graph (it takes that write,
    install/modes.py); the fast path looked at others' write alone and answered "kept"."""
    assert _install(project, served)[1] == []
    set_access_acl(ProjectLayout(project).packages_dir / "@acme", 65534, 7)
    _install_mends_what_run_refuses(project, served)


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="gives the project and its packages to a group of another user (root: chown)",
)
def test_install_reinstalls_a_tree_its_team_no_longer_writes_past_the_fast_path(
    project: Path, served: str
) -> None:
    """A team's checkout (the project's directory 2775, of a group uid 65534 is in, and so
    the installed trees) recorded while the group wrote the project; then ``chmod g-w`` of
    the project's directory: no recorded stat changes, yet the group may now write code it
    may not write the project with. `splice run` refuses it and hints `splice install`,
    which must run the graph (it installs the open tree again)."""
    tree = ProjectLayout(project).package_dir("@acme/pkg00")
    os.chown(project, -1, 65534)
    project.chmod(0o2775)
    for path in [tree, *tree.rglob("*")]:
        os.chown(path, -1, 65534)
        path.chmod(path.stat().st_mode | 0o020)
    assert _install(project, served)[1][:1] == ["doit"]  # records the changed stats
    assert _install(project, served)[1] == []
    project.chmod(0o2755)
    _install_mends_what_run_refuses(project, served)


def test_a_home_other_users_may_write_is_refused_past_the_fast_path(
    project: Path, served: str
) -> None:
    """The fast path relies on SPLICE_HOME's files digest records: from a home another user
    may write it answered a no-op `sync` exit 0, where the graph and `splice run` refuse
    the home (``INVALID_CONFIG``, project/home_owner.py)."""
    root = project.parent.parent
    assert _executed(_sync(root, served)) == []
    Path(os.environ["SPLICE_HOME"]).chmod(0o777)
    for args in ((), ("--check",)):
        done = _sync(root, served, *args)
        assert (done.code, done.json()["error"]["code"]) == (2, "INVALID_CONFIG"), done.stdout


def test_install_refuses_a_changed_range_past_the_fast_path(project: Path, served: str) -> None:
    """``install`` does not follow an edited range (``sync`` does): the graph must say so."""
    assert _install(project, served)[1] == []
    _range_changed(project)
    refused, heavy = _install(project, served)
    assert refused.code != 0 and heavy[:1] == ["doit"]
    assert refused.json()["error"]["code"] == "LOCK_MISMATCH", refused.stdout


def test_a_bad_registry_choice_is_refused_past_the_fast_path(project: Path, served: str) -> None:
    """The fast path answered a no-op install exit 0 with a ``--registry`` or
    ``SPLICE_REGISTRY`` that the graph refuses (docs/cli.md, "Which registry"), and `sync`,
    which asks no registry for intact locked copies, answered 0 on either path, where
    `install` and a sync that must resolve say ``INVALID_CONFIG``."""
    assert _install(project, served)[1] == []
    root = project.parent.parent
    for args, env in ((("--registry", "ftp://x"), None), ((), {"SPLICE_REGISTRY": "ftp://x"})):
        for command, cwd in ((["install"], project), (["sync"], root), (["sync", "--check"], root)):
            done = run_splice(*args, "--json", *command, cwd=cwd, env=env)
            assert (done.code, done.json()["error"]["code"]) == (2, "INVALID_CONFIG"), command


def _edit_json(path: Path, edit: Callable[[dict], object]) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=2) + "\n")


def _lock_entry_removed(member: Path) -> None:
    _edit_json(member / "splice.lock", lambda d: d["packages"].pop("@acme/pkg00"))


def _range_changed(member: Path) -> None:
    _edit_json(member / "splice.json", lambda d: d["packages"].update({"@acme/pkg00": "^2.0.0"}))


def _lock_reformatted(member: Path) -> None:
    lock = member / "splice.lock"
    lock.write_text(json.dumps(json.loads(lock.read_text()), indent=4) + "\n")


def _range_changed_same_size(member: Path) -> None:
    """One byte of splice.json, the file as long as before (the fast path compares bytes)."""
    path = member / "splice.json"
    text = path.read_text()
    assert '"^1.0.0"' in text
    path.write_text(text.replace('"^1.0.0"', '"~1.0.0"', 1))


def _lock_grown_by_a_newline(member: Path) -> None:
    with open(member / "splice.lock", "a") as lock:
        lock.write("\n")


def _lock_deleted(member: Path) -> None:
    (member / "splice.lock").unlink()


def _staging_left(member: Path) -> None:
    (ProjectLayout(member).tmp_dir / "pkg00-0123456789ab").mkdir(parents=True)


# A change of the project's own files: (what it does, what `sync --check` then reports).
PROJECT_CHANGES: dict[str, tuple[Callable[[Path], None], list[tuple[str, str]]]] = {
    "splice.lock entry removed": (_lock_entry_removed, [("@acme/pkg00", "resolve")]),
    "splice.json range changed": (_range_changed, [("@acme/pkg00", "resolve")]),
    "splice.lock rewritten, same meaning": (_lock_reformatted, []),
    "splice.json byte changed, same size": (_range_changed_same_size, []),
    "splice.lock one byte longer": (_lock_grown_by_a_newline, []),
    "splice.lock deleted": (_lock_deleted, [(i, "resolve") for i in IDS]),
    "staging copy of a killed install": (_staging_left, []),
}


@pytest.mark.parametrize("change", list(PROJECT_CHANGES))
def test_a_changed_project_file_runs_the_graph(project: Path, served: str, change: str) -> None:
    root = project.parent.parent
    assert _executed(_sync(root, served, "--check")) == []
    edit, expected = PROJECT_CHANGES[change]
    edit(project)
    checked = _sync(root, served, "--check")
    assert _executed(checked), "the fast path answered for a changed project"
    assert _changes(checked) == expected
    assert checked.code == (1 if expected else 0), checked.stdout


def test_a_new_member_is_synced(project: Path, served: str) -> None:
    """The workspace memo sees a new project: the fast path does not answer for the old set."""
    root = project.parent.parent
    other = root / "packages" / "p01"
    other.mkdir()
    (other / "splice.json").write_text(
        json.dumps({"specVersion": 1, "packages": {IDS[1]: "^1.0.0"}})
    )
    done = _sync(root, served)
    assert done.code == 0, done.stderr
    assert [p["path"] for p in done.json()["projects"]] == ["packages/p00", "packages/p01"]
    assert [p["name"] for p in done.json()["projects"][1]["installed"]] == [IDS[1]]


BAD_CACHES = {
    "not JSON": b"{",
    "not ASCII": b'{"version":%d,"state":null,"packages":{}}\xff' % VERSION,
    "foreign version": json.dumps({"version": 99, "state": None, "packages": {}}).encode(),
    "extra member": json.dumps(
        {"version": VERSION, "state": None, "packages": {}, "more": 1}
    ).encode(),
    "former version": json.dumps({"version": VERSION - 1, "state": None, "packages": {}}).encode(),
    "keys not lowercase hex": None,  # built from the real cache below
    "keys one field short": None,
    "state of another shape": None,
}


@pytest.mark.parametrize("bad", list(BAD_CACHES))
def test_a_malformed_cache_is_ignored_and_rebuilt(project: Path, served: str, bad: str) -> None:
    root = project.parent.parent
    path = ProjectLayout(project).stat_cache
    data = BAD_CACHES[bad]
    if data is None:
        real = _cache(project)
        table = real["packages"]["@acme/pkg00"]
        if bad == "keys not lowercase hex":
            table["keys"] = table["keys"].upper()
            assert table["keys"] != real["packages"]["@acme/pkg00"]["keys"].lower()
        if bad == "keys one field short":
            table["keys"] = table["keys"][:-16]
        if bad == "state of another shape":
            real["state"]["lock"] = 1
        data = json.dumps(real).encode()
    # Well-formed records would have said "unchanged": the change is found only from bytes.
    _same_size_same_mtime(_data_file(project), "0123456789ABCDEF\n")
    path.write_bytes(data)
    checked = _sync(root, served, "--check")
    assert _changes(checked) == [("@acme/pkg00", "restore")]
    assert path.read_bytes() == data  # a check run writes nothing
    assert _sync(root, served).code == 0
    rebuilt = _cache(project)
    assert rebuilt["version"] == VERSION and set(rebuilt["packages"]) <= set(IDS)


def test_run_and_verify_read_bytes_even_when_the_cache_says_clean(
    project: Path, served: str
) -> None:
    root = project.parent.parent
    _same_size_same_mtime(_data_file(project), "0123456789ABCDEF\n")
    forge_clean_record(project, "@acme/pkg00", "lib/data.txt")
    # The no-op path trusts the records (that is the cache working), in check and install ...
    assert _changes(_sync(root, served, "--check")) == []
    installed = run_splice("--registry", served, "install", cwd=project)
    assert installed.code == 0, installed.stderr
    assert _data_file(project).read_text() == "0123456789ABCDEF\n"  # no repair was needed
    # ... the commands that load code never do.
    verified = run_splice("--registry", served, "--json", "verify", "@acme/pkg00", cwd=project)
    assert verified.code == 1, verified.stdout
    installed = {c["id"]: c for c in verified.json()["checks"]}["installed"]
    assert installed["status"] == "failed"
    assert installed["message"].startswith("INSTALLED_PACKAGE_MODIFIED: "), installed
    ran = run_splice("--json", "run", "pkg00.hello", "name=Ada", cwd=project)
    assert ran.code != 0
    assert ran.json()["error"]["code"] == "INSTALLED_PACKAGE_MODIFIED", ran.stdout
    assert run_splice("--json", "run", "pkg01.hello", "name=Ada", cwd=project).code == 0
    # Without the forged records the next install finds the change and restores the copy.
    ProjectLayout(project).stat_cache.unlink()
    assert run_splice("--registry", served, "install", cwd=project).code == 0
    assert _data_file(project).read_text() == FILES["lib/data.txt"]


@pytest.mark.parametrize("args", [(), ("--check",)])
def test_a_plain_no_op_sync_answers_without_the_parser(
    project: Path, args: tuple[str, ...]
) -> None:
    """`sync [--check]` skips argparse (cli/main.py) and answers what the parsed form does,
    without the standard ``dataclasses`` (splice_build/records.py) or ``inspect``, and
    without loading a hashing library (it compares bytes, tasks/noop.py)."""
    root = project.parent.parent
    parsed = run_splice("--json", "sync", "-j", "1", *args, cwd=root)
    plain = run_splice("--json", "sync", *args, cwd=root)
    assert (plain.code, plain.stdout) == (parsed.code, parsed.stdout) == (0, parsed.stdout)
    synced, imported = main_in_fresh_process(
        ["sync", *args], cwd=root, watched=["argparse", "dataclasses", "inspect", "hashlib"]
    )
    assert (synced.code, imported) == (0, []), synced.stderr


def test_a_member_without_packages_keeps_the_fast_path(tmp_path: Path) -> None:
    # It has no .splice/packages, which the no-op looked at as a directory it could not
    # examine: one such member sent every sync of its workspace through the graph.
    make_workspace(tmp_path, 2, [], 0)
    assert sync_in_place(tmp_path).ok  # records the no-op state
    again = sync_in_place(tmp_path).to_json()
    assert again["ok"] and again["tasks"]["executed"] == []
