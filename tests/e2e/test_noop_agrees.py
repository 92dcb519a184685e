"""The no-op fast path (docs/lifecycle.md#the-no-op-fast-path) answers exactly what the graph
would: for every single change in an enumerated space of changes to a synced project,
``splice sync --check --json`` with the stat cache in place (fast path allowed) and with it
removed (the graph forced) give the same exit code and the same ``ok``/error code.

One project is synced once against a real registry server; each change is applied to a
``cp -a`` copy that was synced once itself (a copy's files have new ``ctime``s, so the fast
path would never be taken on it otherwise). The CLI runs in this process (``main(argv)``)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from splice_build.cli.main import main
from splice_build.project.home import SpliceHome
from splice_build.project.layout import ProjectLayout
from testing.registry_fixtures import new_project, publish
from testing.registry_server import registry_server
from testing.stat_records import edit_keeping_mtime

GRANTED = {"@acme/granted": {"fs": {"read": ["docs"], "write": ["out"]}}, "@acme/plain": None}
MODE_BITS = (0o4000, 0o2000, 0o1000, 0o400, 0o200, 0o100, 0o040, 0o020, 0o010, 0o004, 0o002, 0o001)
SOME_BITS = (0o4000, 0o200, 0o020, 0o002)  # the fast lane's: setuid, and each class's write

CONFIGS = {
    "not JSON": "{",
    "a registry not a URL": '{"registry": "not a url"}',
    "another registry": '{"registry": "http://127.0.0.1:9"}',
    "an unknown key": '{"zz": 1}',
    "an isolation mode unknown": '{"isolation": "zz"}',
}
Change = Callable[[Path, Path], None]  # (project, SPLICE_HOME)


def _splice(*argv: str) -> tuple[int, dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["--json", *argv])
    return code, json.loads(out.getvalue())


def _answer(code: int, out: dict) -> tuple[int, dict]:
    """The exit code and everything the JSON reports but which tasks ran."""
    return code, {key: value for key, value in out.items() if key != "tasks"}


@pytest.fixture
def synced(tmp_path: Path) -> Iterator[Path]:
    """A project with two packages (one granted ``docs``/``out``), synced until its no-op
    state is recorded."""
    store = tmp_path / "data"
    for package_id, permissions in GRANTED.items():
        publish(
            store,
            tmp_path / "work",
            name=package_id.split("/")[1],
            permissions=permissions,
            files={"lib/data.txt": "0123456789abcdef\n"},
        )
    with registry_server(store, admin=False) as server:
        project = new_project(tmp_path / "base", dict.fromkeys(GRANTED, "^1.0.0"))
        data = json.loads((project / "splice.json").read_text())
        (project / "splice.json").write_text(json.dumps({**data, "registry": server.url}) + "\n")
        for name in ("docs", "out"):
            (project / name).mkdir()
            (project / name / "keep.txt").write_text("x\n")
        for _ in range(3):
            code, out = _splice("sync", "--accept-permissions", "--root", str(project))
            assert code == 0, out
        yield project


def _installed(project: Path) -> list[str]:
    packages = ProjectLayout(project).packages_dir
    return sorted(
        os.path.relpath(os.path.join(d, n), project)
        for d, dirs, files in os.walk(packages)
        for n in files + dirs
    )


def _content(path: Path) -> None:
    text = path.read_bytes()
    edit_keeping_mtime(path, bytes(b ^ 1 for b in text[:1]).decode("latin-1") + text[1:].decode())


def _mode(bit: int) -> Callable[[Path], None]:
    return lambda path: os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) ^ bit)


def _replaced(kind: str) -> Callable[[Path], None]:
    def replace(path: Path) -> None:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
        if kind == "link":
            path.symlink_to("/dev/null")
        elif kind == "fifo":
            os.mkfifo(path)
        else:
            path.mkdir()

    return replace


def _removed(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _on(relative: str, act: Callable[[Path], None]) -> Change:
    return lambda project, _home: act(project / relative)


def _new_in(relative: str, name: str) -> Change:
    return lambda project, _home: (project / relative / name).write_text("new\n")


def _edit_json(name: str, edit: Callable[[dict], dict | str]) -> Change:
    def change(project: Path, _home: Path) -> None:
        path = project / name
        edited = edit(json.loads(path.read_text()))
        path.write_text(edited if isinstance(edited, str) else json.dumps(edited, indent=2))

    return change


def _ranged(data: dict, range_: str) -> dict:
    return {**data, "packages": {**data["packages"], "@acme/plain": range_}}


def _lock_version(data: dict) -> dict:
    entries = data["packages"]
    first = next(iter(entries))
    return {**data, "packages": {**entries, first: {**entries[first], "version": "1.0.1"}}}


def _home_dirs(home: Path) -> tuple[Path, ...]:
    """The directories of SPLICE_HOME a change removes (each put back after its check)."""
    return (SpliceHome(home).files_digest_dir, SpliceHome(home).consent_dir)


def _changes(project: Path, installed: list[str], bits: tuple[int, ...]) -> dict[str, Change]:
    """Every single change to the synced ``project``, by name, on each of the ``installed``
    entries and on everything else the no-op state covers; ``bits``: the mode bits flipped,
    one at a time."""
    changes: dict[str, Change] = {}
    for relative in installed:
        is_dir = (project / relative).is_dir()
        if not is_dir:
            changes[f"{relative}: content, mtime kept"] = _on(relative, _content)
        for bit in bits:
            changes[f"{relative}: mode ^ {bit:o}"] = _on(relative, _mode(bit))
        for kind in ("link", "fifo", "directory"):
            changes[f"{relative}: replaced by a {kind}"] = _on(relative, _replaced(kind))
        changes[f"{relative}: removed"] = _on(relative, _removed)
        if is_dir:
            for name in ("new.txt", ".hidden"):
                changes[f"{relative}: {name} added"] = _new_in(relative, name)
    changes[".splice/packages: .hidden added"] = _new_in(".splice/packages", ".hidden")
    for name in ("splice.json", "splice.lock"):
        changes[f"{name}: a key added"] = _edit_json(name, lambda d: {**d, "zz": 1})
        changes[f"{name}: whitespace only"] = _edit_json(name, lambda d: json.dumps(d) + "\n")
    changes["splice.json: a range changed, still matching"] = _edit_json(
        "splice.json", lambda d: _ranged(d, ">=1.0.0")
    )
    changes["splice.json: a range changed, not matching"] = _edit_json(
        "splice.json", lambda d: _ranged(d, "^2.0.0")
    )
    changes["splice.lock: a version changed"] = _edit_json("splice.lock", _lock_version)
    for relative in sorted(os.listdir(project / ".splice")):
        if relative != "statcache.json":
            changes[f".splice/{relative}: removed"] = _on(f".splice/{relative}", _removed)
    for relative in (".", ".splice", ".splice/packages", "docs", "out"):
        for bit in bits:
            changes[f"{relative}: mode ^ {bit:o}"] = _on(relative, _mode(bit))
    for grant in ("docs", "out"):
        changes[f"{grant}: removed"] = _on(grant, _removed)
        changes[f"{grant}: a link to .splice"] = _on(grant, _linked_to(".splice"))
        changes[f"{grant}: a link inside the project"] = _on(grant, _linked_to("inside"))
        changes[f"{grant}: a link out of the project"] = _on(grant, _linked_to("/tmp"))
    for i, what in enumerate(("digest records", "consent records")):
        changes[f"SPLICE_HOME: {what} removed"] = lambda _p, home, i=i: shutil.rmtree(
            _home_dirs(home)[i]
        )
    for what, text in CONFIGS.items():
        changes[f"SPLICE_HOME: config.json {what}"] = lambda _p, home, text=text: SpliceHome(
            home
        ).config_file.write_text(text)
    return changes


def _linked_to(target: str) -> Callable[[Path], None]:
    def link(path: Path) -> None:
        _removed(path)
        if target == "inside":
            (path.parent / "inside").mkdir(exist_ok=True)
        path.symlink_to(target)

    return link


def _check(project: Path) -> tuple[int, dict]:
    return _answer(*_splice("sync", "--check", "--root", str(project)))


def _synced_copy(base: Path, to: Path) -> Path:
    shutil.copytree(base, to, symlinks=True)  # as cp -a: the times, new ctimes
    for _ in range(2):  # the first records the copy's files, the second its no-op state
        code, out = _splice("sync", "--root", str(to))
        assert code == 0, out
    return to


def _home_restorer(tmp_path: Path) -> Callable[[], None]:
    """A copy of SPLICE_HOME's directories a change removes, and a function putting them back
    as they are now."""
    home = Path(os.environ["SPLICE_HOME"])
    saved = tmp_path / "home-saved"
    for i, directory in enumerate(_home_dirs(home)):
        shutil.copytree(directory, saved / str(i))

    def restore() -> None:
        SpliceHome(home).config_file.unlink(missing_ok=True)
        for i, directory in enumerate(_home_dirs(home)):
            shutil.rmtree(directory, ignore_errors=True)
            shutil.copytree(saved / str(i), directory)

    return restore


def _walk(
    synced: Path, installed: list[str], bits: tuple[int, ...], tmp_path: Path
) -> dict[str, tuple]:
    """The changes whose fast answer is not the graph's: ``name -> (fast, graph)``."""
    from splice_build.project.workspace import find_workspace
    from splice_build.tasks.noop import unchanged_workspace

    home = Path(os.environ["SPLICE_HOME"])
    restore = _home_restorer(tmp_path)
    disagreements = {}
    for i, (name, change) in enumerate(_changes(synced, installed, bits).items()):
        project = _synced_copy(synced, tmp_path / f"c{i}")
        workspace = find_workspace(project, root=project)
        assert unchanged_workspace(workspace, home=home, check=True) is not None, name
        change(project, home)
        fast = _check(project)
        ProjectLayout(project).stat_cache.unlink(missing_ok=True)
        graph = _check(project)
        if fast != graph:
            disagreements[name] = (fast, graph)
        restore()
    return disagreements


def test_the_fast_path_answers_what_the_graph_answers(synced: Path, tmp_path: Path) -> None:
    """Every kind of change on one installed file and its directory, and every change to
    the rest of the state (four mode bits)."""
    one = ".splice/packages/@acme/granted/lib"
    assert _walk(synced, [one, f"{one}/data.txt"], SOME_BITS, tmp_path) == {}


@pytest.mark.slow  # about 20 s: every change on every installed entry, every mode bit
def test_the_fast_path_answers_what_the_graph_answers_everywhere(
    synced: Path, tmp_path: Path
) -> None:
    assert _walk(synced, _installed(synced), MODE_BITS, tmp_path) == {}


def _install(project: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """``splice install --json`` in ``project``: its exit code and output, the project's
    path named ``<project>``."""
    monkeypatch.chdir(project)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["--json", "install"])
    return code, out.getvalue().replace(str(project), "<project>")


@pytest.mark.slow  # about 6 s: two copies synced per change
def test_install_fast_answers_what_the_graph_answers(
    synced: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``splice install`` (``unchanged_install``) on a copy with its stat cache and on one
    without: the same exit code and JSON, the fast lane's changes."""
    home = Path(os.environ["SPLICE_HOME"])
    restore = _home_restorer(tmp_path)
    one = ".splice/packages/@acme/granted/lib"
    disagreements = {}
    for i, (name, change) in enumerate(
        _changes(synced, [one, f"{one}/data.txt"], SOME_BITS).items()
    ):
        answers = []
        for side in ("fast", "graph"):
            project = _synced_copy(synced, tmp_path / f"{side}{i}")
            change(project, home)
            if side == "graph":
                ProjectLayout(project).stat_cache.unlink(missing_ok=True)
            answers.append(_install(project, monkeypatch))
            restore()
        if answers[0] != answers[1]:
            disagreements[name] = answers
    assert disagreements == {}


def test_a_check_holds_kept_packages_to_the_signature_policy(synced: Path, tmp_path: Path) -> None:
    """``sync --check`` answers what ``sync`` would: a kept unsigned package under
    ``--require-signed`` or ``splice.json``'s ``requireSignatures`` is ``SIGNATURE_REQUIRED``
    (exit 1) in both. A check never ran the policy of a kept package (only a writing run's
    keep did): it said ``ok`` where the sync failed."""
    for policy in ("--require-signed", "requireSignatures"):
        project = _synced_copy(synced, tmp_path / policy)
        flags = [policy] if policy.startswith("--") else []
        if not flags:
            _edit_json("splice.json", lambda d: {**d, "requireSignatures": ["acme"]})(
                project, project
            )
        for check in (["--check"], []):
            code, out = _splice("sync", *check, *flags, "--root", str(project))
            assert (code, (out["projects"][0]["error"] or {}).get("code")) == (
                1,
                "SIGNATURE_REQUIRED",
            ), (policy, check)
