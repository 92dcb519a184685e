"""A pull request cannot grant permissions on this machine by editing ``splice.lock``.

A project installed ``@acme/greeter@1.0.0`` (no permissions) from the real registry server.
The pull request's ``splice.lock`` pins 1.1.0, which asks for a host and a secret variable,
with exactly that grant recorded (as a teammate's ``add --accept-permissions`` would write
it), or widens only the grant of 1.0.0 so that a later ``update`` would pass unasked.
``install``, ``sync`` and ``update`` ask again (``PERMISSIONS_NOT_ACCEPTED`` without
``--accept-permissions``) and write nothing; a fresh clone, with no installed copy, takes
the lock as the project's reviewed record (docs/security.md#consent-on-this-machine)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from splice_build.install.consent_record import record_path
from testing.cli import run_splice
from testing.project_state import state_bytes
from testing.registry_fixtures import new_project, publish
from testing.registry_server import RunningRegistry, registry_server

GREETER = "@acme/greeter"
WIDE = {"network": ["evil.example.com"], "env": ["AWS_SECRET_ACCESS_KEY"]}
WIDE_LINES = ["network: evil.example.com", "environment variable: AWS_SECRET_ACCESS_KEY"]
# A package granted more than the record's old bound held (256 KiB) within the 1,000 entries
# of a permission list: 1,000 names of 128 characters and 1,000 hosts of 201.
MANY = {
    "env": [f"MANY_{i:04d}".ljust(128, "_") for i in range(1000)],
    "network": [f"h{i:04d}." + ".".join(c * 63 for c in "abc") + ".com" for i in range(1000)],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningRegistry]:
    root = tmp_path_factory.mktemp("lock-consent")
    publish(root / "data", root / "work", version="1.0.0")
    publish(root / "data", root / "work", version="1.1.0", permissions=WIDE)
    publish(root / "data", root / "work", name="spy", permissions=WIDE)
    publish(root / "data", root / "work", name="many", permissions=MANY)
    with registry_server(root / "data", admin=False) as running:
        yield running


def _splice(project: Path, *args: str, home: Path | None = None) -> tuple[int, dict]:
    """``splice --json ARGS`` in ``project``, with the SPLICE_HOME ``home`` (None: the test's)."""
    env = None if home is None else {"SPLICE_HOME": str(home)}
    done = run_splice("--json", *args, cwd=project, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done.code, done.json()


def _installed_at_1_0_0(server: RunningRegistry, root: Path, *others: str) -> Path:
    """A project that added greeter 1.0.0 (and ``others``, accepted) in its first install."""
    project = new_project(root)
    accept = ("--accept-permissions",) if others else ()
    code, out = _splice(
        project, "--registry", server.url, "add", f"{GREETER}@1.0.0", *others, *accept
    )
    assert code == 0, out
    data = json.loads((project / "splice.json").read_text())
    data["packages"][GREETER] = "^1.0.0"
    (project / "splice.json").write_text(json.dumps(data))
    return project


def _teammate_lock(
    server: RunningRegistry,
    root: Path,
    ref: str = f"{GREETER}@1.1.0",
    home: Path | None = None,
) -> dict:
    """The lock entry ``add <ref> --accept-permissions`` writes elsewhere (with the teammate's
    SPLICE_HOME ``home``; None: this machine's, so its artifact was verified here)."""
    other = new_project(root)
    code, out = _splice(
        other, "--registry", server.url, "add", ref, "--accept-permissions", home=home
    )
    assert code == 0, out
    return json.loads((other / "splice.lock").read_text())["packages"][ref.rsplit("@", 1)[0]]


def _pull(project: Path, entry: dict, package_id: str = GREETER) -> None:
    lock = json.loads((project / "splice.lock").read_text())
    lock["packages"][package_id] = entry
    (project / "splice.lock").write_text(json.dumps(lock, indent=2) + "\n")


def _state(project: Path) -> dict[str, bytes | None]:
    """The project state, without sync's graph database (bookkeeping of the run)."""
    return {k: v for k, v in state_bytes(project).items() if k != ".splice/sync.sqlite3"}


def _error(out: dict) -> dict:
    """The error of a command, or of the one project of a sync."""
    if "projects" in out:
        return out["projects"][0]["error"]
    return out["error"]


@pytest.mark.parametrize("command", [("install",), ("sync",)])
def test_a_lock_pinning_a_wider_version_asks_again(
    server: RunningRegistry, tmp_path: Path, command: tuple[str, ...]
) -> None:
    project = _installed_at_1_0_0(server, tmp_path / "p")
    _pull(project, _teammate_lock(server, tmp_path / "teammate"))
    before = _state(project)
    code, out = _splice(project, *command)
    assert code == 1, out
    error = _error(out)
    assert error["code"] == "PERMISSIONS_NOT_ACCEPTED", error
    assert error["details"] == WIDE_LINES
    assert _state(project) == before
    code, out = _splice(project, *command, "--accept-permissions")
    assert code == 0, out
    lock = json.loads((project / "splice.lock").read_text())["packages"][GREETER]
    assert (lock["version"], lock["permissions"]["network"]) == ("1.1.0", WIDE["network"])


def test_a_lock_widening_only_the_grant_does_not_pass_a_later_update(
    server: RunningRegistry, tmp_path: Path
) -> None:
    project = _installed_at_1_0_0(server, tmp_path / "p")
    lock = json.loads((project / "splice.lock").read_text())
    lock["packages"][GREETER]["permissions"] = {
        "fs": {"read": [], "write": []},
        **WIDE,
    }  # the same version, a wider grant: the diff reads as harmless
    (project / "splice.lock").write_text(json.dumps(lock, indent=2) + "\n")
    code, out = _splice(project, "install")
    assert code == 0, out  # 1.0.0 is kept: it asks for nothing, whatever the grant says
    before = _state(project)
    code, out = _splice(project, "update")
    assert code == 1, out
    assert out["error"]["code"] == "PERMISSIONS_NOT_ACCEPTED", out
    assert out["error"]["details"] == WIDE_LINES
    assert _state(project) == before


def test_a_fresh_clone_takes_the_lock_as_reviewed(server: RunningRegistry, tmp_path: Path) -> None:
    """Nothing installed here yet: the committed lock is the only record of the grant. The
    clone is a new directory: SPLICE_HOME's record of what this machine granted is kept by
    the project's real path, and the directory installed at 1.0.0 has one."""
    project = _installed_at_1_0_0(server, tmp_path / "p")
    _pull(project, _teammate_lock(server, tmp_path / "teammate"))
    clone = tmp_path / "clone"
    shutil.copytree(project, clone, ignore=shutil.ignore_patterns(".splice"))
    code, out = _splice(clone, "install")
    assert code == 0, out
    assert [r["version"] for r in out] == ["1.1.0"]


@pytest.mark.parametrize("fresh", [False, True], ids=["installed", "fresh-clone"])
@pytest.mark.parametrize("command", [("install",), ("sync",)])
def test_a_lock_entry_splice_json_does_not_list_grants_nothing(
    server: RunningRegistry, tmp_path: Path, command: tuple[str, ...], fresh: bool
) -> None:
    """A package only the lock names (splice.json's diff shows nothing) is installed only
    with consent, in a fresh clone too."""
    project = _installed_at_1_0_0(server, tmp_path / "p")
    _pull(project, _teammate_lock(server, tmp_path / "teammate", "@acme/spy@1.0.0"), "@acme/spy")
    if fresh:
        shutil.rmtree(project / ".splice")
    before = _state(project)
    code, out = _splice(project, *command)
    assert code == 1, out
    error = _error(out)
    assert error["code"] == "PERMISSIONS_NOT_ACCEPTED", error
    assert error["details"] == WIDE_LINES
    assert not (project / ".splice" / "packages" / "@acme" / "spy").exists()
    if not fresh:
        assert _state(project) == before


def test_a_lock_entry_splice_json_does_not_list_runs_nothing_it_asks_for(
    server: RunningRegistry, tmp_path: Path
) -> None:
    """The pull request brings the installed copy of what only the lock names, too, and
    these bytes were derived here before (the teammate's `add` stands for another project of
    this user; a `splice install` refused for consent derives them as well): run, list and
    MCP ran it under the lock's grant (on main: `splice run spy.hello` exit 0), and install
    and add kept it asking nothing. The grant of a package splice.json does not list is
    nothing at a run as at an install, for a copy kept as for one fetched."""
    project = _installed_at_1_0_0(server, tmp_path / "p")
    teammate = tmp_path / "teammate"
    _pull(project, _teammate_lock(server, teammate, "@acme/spy@1.0.0"), "@acme/spy")
    shutil.copytree(teammate / ".splice/packages/@acme/spy", project / ".splice/packages/@acme/spy")
    code, out = _splice(project, "run", "spy.hello", "name=x")
    assert (code, out["error"]["code"]) == (1, "PERMISSIONS_NOT_GRANTED"), out
    assert out["error"]["details"] == WIDE_LINES
    code, out = _splice(project, "list")
    assert [(row["name"], row["status"]) for row in out] == [
        (GREETER, "ok"),
        ("@acme/spy", "invalid"),
    ]
    # Nor does keeping that copy grant it: install and the hint's add ask (on main: exit 0).
    before = _state(project)
    for command in (("install",), ("add", "@acme/spy@1.0.0")):
        code, out = _splice(project, *command)
        assert (code, out["error"]["code"]) == (1, "PERMISSIONS_NOT_ACCEPTED"), out
        assert out["error"]["details"] == WIDE_LINES
    assert _state(project) == before


def test_sync_check_names_what_the_lock_would_grant(
    server: RunningRegistry, tmp_path: Path
) -> None:
    """The pre-commit hook (``splice sync --check``) says which permissions the pulled lock
    would ask for here, in JSON and on its line; nothing is fetched or written."""
    project = _installed_at_1_0_0(server, tmp_path / "p")
    _pull(project, _teammate_lock(server, tmp_path / "teammate"))
    before = _state(project)
    code, out = _splice(project, "sync", "--check")
    assert code == 1, out
    [change] = out["projects"][0]["changes"]
    assert (change["version"], change["consent"]) == ("1.1.0", WIDE_LINES)
    text = run_splice("sync", "--check", cwd=project)
    assert text.code == 1
    assert "asks for 1 named host, 1 environment variable" in text.stdout + text.stderr
    assert _state(project) == before


@pytest.mark.parametrize("manifest", [b"not json", b"{}"], ids=["garbled", "another-shape"])
def test_an_installed_copy_whose_manifest_cannot_be_read_grants_nothing(
    server: RunningRegistry, tmp_path: Path, manifest: bytes
) -> None:
    """The pull request also breaks the installed ``manifest.json`` (a checkout can write
    into an ignored ``.splice/``): the copy is there but says nothing, so nothing is
    granted, rather than falling back to the lock's grant."""
    project = _installed_at_1_0_0(server, tmp_path / "p")
    _pull(project, _teammate_lock(server, tmp_path / "teammate"))
    (project / ".splice" / "packages" / "@acme" / "greeter" / "manifest.json").write_bytes(manifest)
    code, out = _splice(project, "install")
    assert code == 1, out
    assert out["error"]["code"] == "PERMISSIONS_NOT_ACCEPTED", out
    assert out["error"]["details"] == WIDE_LINES


def _ship(teammate: Path, project: Path, whole: bool) -> None:
    """The pull request also brings the teammate's installed copy of 1.1.0 (``.splice/`` is
    committed, or git overwrote the ignored files): the whole tree, or only its
    ``manifest.json`` (1.1.0's tool files are 1.0.0's)."""
    source = teammate / ".splice/packages/@acme/greeter"
    target = project / ".splice/packages/@acme/greeter"
    if whole:
        shutil.rmtree(target)
        shutil.copytree(source, target)
    else:
        shutil.copyfile(source / "manifest.json", target / "manifest.json")


def _pull_with_tree(server: RunningRegistry, root: Path, whole: bool, home: Path | None) -> Path:
    """A project installed at 1.0.0 here, and a pull request bringing the lock of 1.1.0 with
    its installed copy."""
    project = _installed_at_1_0_0(server, root / "p")
    _pull(project, _teammate_lock(server, root / "teammate", home=home))
    _ship(root / "teammate", project, whole)
    return project


@pytest.mark.parametrize(
    ("whole", "teammate_home", "command"),
    [(True, True, "install"), (False, True, "sync"), (True, False, "update")],
    ids=["tree-other-home", "manifest-other-home", "tree-verified-here"],
)
def test_a_pull_request_shipping_the_installed_copy_asks_again(
    server: RunningRegistry, tmp_path: Path, whole: bool, teammate_home: bool, command: str
) -> None:
    """On main exit 0 and no prompt, and ``splice run`` then ran 1.1.0 under the wide grant:
    consent was narrowed to the shipped manifest, and a copy whose artifact this home had
    verified (the teammate stands for another project of the user) was kept with no consent
    step at all; ``splice run`` ran the shipped copy before any install too, once its
    artifact was verified here. What this machine granted is recorded in SPLICE_HOME
    (install/consent_record.py); ``--accept-permissions`` records the new grant."""
    home = tmp_path / "teammate-home" if teammate_home else None
    project = _pull_with_tree(server, tmp_path, whole, home)
    before = _state(project)
    code, out = _splice(project, command)
    assert code == 1, out
    assert _error(out)["code"] == "PERMISSIONS_NOT_ACCEPTED", out
    assert _error(out)["details"] == WIDE_LINES
    assert _state(project) == before
    # The refused install derived 1.1.0's files digest here: the shipped copy is its bytes.
    code, out = _splice(project, "run", "greeter.hello", "name=x")
    assert code == 1, out
    assert out["error"]["code"] == "PERMISSIONS_NOT_GRANTED", out
    assert out["error"]["details"] == WIDE_LINES
    code, out = _splice(project, command, "--accept-permissions")
    assert code == 0, out
    code, out = _splice(project, "run", "greeter.hello", "name=x")  # the record grants it now
    assert code == 0, out


def _record(project: Path) -> Path:
    return record_path(Path(os.environ["SPLICE_HOME"]), project)


def test_a_corrupt_record_grants_nothing(server: RunningRegistry, tmp_path: Path) -> None:
    """A record that cannot be read asks for everything rather than falling back to the
    shipped manifest."""
    project = _pull_with_tree(server, tmp_path, True, tmp_path / "teammate-home")
    _record(project).write_bytes(b"{not json")
    code, out = _splice(project, "install")
    assert (code, out["error"]["code"]) == (1, "PERMISSIONS_NOT_ACCEPTED"), out
    assert out["error"]["details"] == WIDE_LINES


def test_a_project_granting_much_gets_its_record(server: RunningRegistry, tmp_path: Path) -> None:
    """A project whose grants took more than 256 KiB got no record at all ('could not write
    consent record', a warning), so it fell back to its installed copies: a pull request
    shipping 1.1.0's copy with its lock synced exit 0, no prompt, and its tool ran with the
    secret (on main). The record is bound as the lock it comes from is."""
    project = _installed_at_1_0_0(server, tmp_path / "p", "@acme/many@1.0.0")
    _pull(project, _teammate_lock(server, tmp_path / "teammate"))
    _ship(tmp_path / "teammate", project, whole=True)
    code, out = _splice(project, "sync")
    assert code == 1, out
    assert _error(out)["code"] == "PERMISSIONS_NOT_ACCEPTED", out
    assert _error(out)["details"] == WIDE_LINES


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_record_another_user_owns_is_none(server: RunningRegistry, tmp_path: Path) -> None:
    """Another user's record granting 1.1.0's permissions (put while the home was open to
    them) grants nothing here: the installed 1.0.0 copy's grant stands, and the lock asks."""
    project = _installed_at_1_0_0(server, tmp_path / "p")
    _pull(project, _teammate_lock(server, tmp_path / "teammate"))
    record = _record(project)
    data = json.loads(record.read_text())
    data["packages"][GREETER] = WIDE
    record.write_text(json.dumps(data))
    os.chown(record, 65534, 65534)
    code, out = _splice(project, "install")
    assert (code, out["error"]["code"]) == (1, "PERMISSIONS_NOT_ACCEPTED"), out
    assert out["error"]["details"] == WIDE_LINES


@pytest.mark.parametrize("shipped", ["manifest.json", "tree"])
def test_a_pull_request_shipping_the_wider_copy_is_asked_for(
    server: RunningRegistry, tmp_path: Path, shipped: str
) -> None:
    """The pull request pins 1.1.0 and also ships, in the ignored ``.splice/`` git
    overwrites, 1.1.0's ``manifest.json`` or its whole tree (whose files digest this machine
    derived for the teammate's project, as for another member using 1.1.0). The copy
    "installed here" asked for what the lock grants: ``sync`` exit 0 and the tool ran with
    the secret; after this machine's record of its grants (install/consent_record.py), sync
    asked but ``sync --check`` (a pre-commit hook) still said nothing of it."""
    project = _installed_at_1_0_0(server, tmp_path / "p")
    teammate = tmp_path / "teammate"
    _pull(project, _teammate_lock(server, teammate))
    installed = project / ".splice/packages/@acme/greeter"
    if shipped == "tree":
        shutil.rmtree(installed)
        shutil.copytree(teammate / ".splice/packages/@acme/greeter", installed)
    else:  # a new file, as git writes it
        (installed / shipped).unlink()
        shutil.copy(teammate / ".splice/packages/@acme/greeter" / shipped, installed / shipped)
    code, out = _splice(project, "sync", "--check")
    assert code == 1, out
    [change] = out["projects"][0]["changes"]
    assert (change["version"], change["consent"]) == ("1.1.0", WIDE_LINES)
    before = _state(project)
    code, out = _splice(project, "sync")
    assert (code, _error(out)["code"]) == (1, "PERMISSIONS_NOT_ACCEPTED"), out
    assert _error(out)["details"] == WIDE_LINES
    assert _state(project) == before
    code, out = _splice(project, "sync", "--accept-permissions")  # reviewed: recorded here
    assert code == 0, out
    assert _splice(project, "sync", "--check")[0] == 0
