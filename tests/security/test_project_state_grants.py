"""Grants never cover the project's own state (issue 17 item 6, docs/security.md#grants-and-project-state).

By property: generated ``fs`` entries are refused exactly when the path the runtime would
grant covers (or lies inside) ``splice.json``, ``splice.lock``, ``splice-lock.json``,
``.splice/``, a top-level ``.env*`` name or ``SPLICE_HOME``, or when they are a pattern; the
oracle here computes that independently, on the joined path as text. The real Node then
shows both directions: what the rule accepts cannot reach any protected file through the
sandbox, and what it refuses would have reached one with the flag the runtime would pass.
Every ``SPLICE_*`` name the code reads is refused as an ``env`` entry.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from splice_build.broker.keys import PROVIDER_VARIABLES
from splice_build.errors import ErrorCode, InstallError, SpecError
from splice_build.install.checks import Expected, SignaturePinnedByLock, verify_artifact
from splice_build.runtime import SpliceRuntime
from splice_build.runtime.node import find_node
from splice_build.spec.archive import pack_archive
from splice_build.spec.digests import integrity_of
from splice_build.spec.manifest import Manifest
from splice_build.spec.pack import collect_package_files
from splice_build.spec.paths import is_safe_relative_path
from splice_build.spec.project_state import (
    ProjectState,
    effective_fs_path,
    env_entry_problem,
    fs_entry_problem,
)
from testing.hostile_packages import write_package
from testing.packages import minimal_manifest
from testing.packages import write_package as plain_package

PACKAGE = Path(__file__).resolve().parents[2] / "splice_build"
STATE_FILES = ("splice.json", "splice.lock", "splice-lock.json")
STATE_DIRS = (".splice", ".git")
GLOBS = "*?[]{}"

SEGMENTS = [
    ".", "..", "*", "**", "workspace", "data", "in", "cache", "splice", "spliceX",
    ".env", ".env.local", ".ENV", ".envrc", ".en", "env", ".splice", ".Splice", ".splicex",
    "splice.json", "splice.lock", "Splice.Lock", "splice.lock.", "splice-lock.json",
    "splice.lock.bak", "home", "w*", ".e*", "[w]orkspace", "?", "{a,b}", "", ".git", ".GIT",
    ".git.", ".gitignore",
]  # fmt: skip
FIXED = [
    ".", "./", "*", "**", "..", "../x", "./.env", ".env.local", ".splice/cache", "workspace",
    "data/in", "workspace/../splice.lock", "workspace/..", "workspace/*", "work*", ".e*",
    "*.lock", "splice.json/", "home", "home/keys", "/", "/etc", ".splice", "splice",
]  # fmt: skip


def _fold(text: str) -> str:
    return "/".join(
        unicodedata.normalize("NFC", part).casefold().rstrip(". ") for part in text.split("/")
    )


def covers_state(entry: str, root: str, home: str | None, write: bool = False) -> bool:
    """The oracle: does the joined, normalized path reach project state (as text)? A write
    grant may not name a ``.git`` anywhere on its way either."""
    granted = _fold(re.sub("^/+", "/", os.path.normpath(os.path.join(root, entry))))
    folded_root = _fold(root)
    if write and ".git" in _fold(os.path.normpath(entry)).split("/"):
        return True

    def related(a: str, b: str) -> bool:  # one is the other or contains it
        return os.path.commonpath([a, b]) in (a, b)

    names = (*STATE_FILES, *STATE_DIRS)
    protected = [_fold(f"{root}/{name}") for name in names]
    if home is not None:
        protected.append(_fold(home))
    if any(related(granted, path) for path in protected):
        return True
    if os.path.commonpath([granted, folded_root]) == granted:
        return True  # the root or above: every .env* file
    if os.path.commonpath([granted, folded_root]) == folded_root:
        return os.path.relpath(granted, folded_root).split("/")[0].startswith(".env")
    above = folded_root
    while above != os.path.dirname(above):  # the state of every directory above
        above = os.path.dirname(above)
        if any(related(granted, os.path.join(above, name)) for name in names):
            return True
        below = os.path.commonpath([granted, above]) == above and granted != above
        if below and os.path.relpath(granted, above).split("/")[0].startswith(".env"):
            return True
    return False


def _manifest_refuses(entry: str, field: str) -> list[str] | None:
    permissions = {"fs": {field: [entry]}}
    try:
        Manifest.from_dict(minimal_manifest(permissions=permissions))
    except SpecError as exc:
        assert exc.code is ErrorCode.INVALID_MANIFEST
        return list(exc.details)
    return None


entries = st.one_of(
    st.sampled_from(FIXED),
    st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4).map("/".join),
    st.tuples(st.sampled_from(["./", "/", ""]), st.sampled_from(SEGMENTS)).map("".join),
)


@settings(max_examples=600, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entry=entries, field=st.sampled_from(["read", "write"]))
def test_validation_refuses_exactly_what_covers_state(entry: str, field: str) -> None:
    details = _manifest_refuses(entry, field)
    root = "/<project>"
    expected = (
        not is_safe_relative_path(entry)
        or any(c in entry for c in GLOBS)
        or covers_state(entry, root, None, field == "write")
    )
    assert (details is not None) is expected, (entry, details)
    if details is not None and is_safe_relative_path(entry):
        (line,) = details
        assert line.startswith(f'permissions.fs.{field}: "{entry}" '), line


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entry=entries, home_inside=st.booleans())
def test_with_a_real_project_the_rule_is_the_effective_path(
    entry: str, home_inside: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.getbasetemp() / "realproject"
    root.mkdir(exist_ok=True)
    root = Path(os.path.realpath(root))
    home = root / "home" / "splice" if home_inside else root.parent / "outside-home"
    problem = fs_entry_problem(entry, root, home)
    expected = any(c in entry for c in GLOBS) or covers_state(entry, str(root), str(home), True)
    assert (problem is not None) is expected, (entry, problem)


def test_the_messages_name_the_entry_and_what_it_reaches() -> None:
    assert _manifest_refuses(".", "write") == [
        'permissions.fs.write: "." would include the project\'s splice.json, splice.lock, '
        "splice-lock.json, .splice/, .env* files and .git/"
    ]
    assert _manifest_refuses(".splice/cache", "read") == [
        'permissions.fs.read: ".splice/cache" is inside the project\'s .splice/'
    ]
    (star,) = _manifest_refuses("*", "read") or []
    assert star.startswith('permissions.fs.read: "*" contains "*": a grant names one path')
    assert "could include the project's splice.json" in star
    assert _manifest_refuses("workspace", "write") is None
    assert _manifest_refuses("data/in", "read") is None


def test_a_malformed_entry_hides_no_refusal_of_the_others() -> None:
    """Validation says every problem at once (docs/packages.md): `splice validate` of
    `fs.read: ["./x", "."]` named only `./x`, and the refusal of `.` came once it was mended."""
    permissions = {"fs": {"read": ["./x", ".", "data"], "write": ["out/.git"]}, "env": ["x"]}
    with pytest.raises(SpecError) as raised:
        Manifest.from_dict(minimal_manifest(permissions=permissions))
    assert raised.value.code is ErrorCode.INVALID_MANIFEST
    assert [line.split(": ")[0] for line in raised.value.details] == [
        "permissions.fs.read[0]",
        "permissions.env[0]",
        "permissions.fs.read",
        "permissions.fs.write",
    ]
    assert raised.value.details[2].startswith('permissions.fs.read: "." would include')
    assert raised.value.details[3].startswith('permissions.fs.write: "out/.git" names a git')


def test_the_git_directory_is_never_granted(tmp_path: Path) -> None:
    """git runs what ``.git/config`` and ``.git/hooks`` name as the user, outside any
    sandbox, its index lists the workspace's members, and a CI checkout keeps the job's
    token in its config: no grant reaches the ``.git`` of the project, of another project,
    or of a directory above (a member's link to its repository's), in any case."""
    assert _manifest_refuses(".git", "write") == [
        'permissions.fs.write: ".git" would include the project\'s .git/'
    ]
    assert _manifest_refuses(".Git./hooks", "read") == [
        'permissions.fs.read: ".Git./hooks" is inside the project\'s .git/'
    ]
    assert _manifest_refuses(".gitignore", "write") is None
    repo = Path(os.path.realpath(tmp_path))
    member = repo / "packages" / "a"
    (member / "out").mkdir(parents=True)
    (repo / "splice.json").write_text("{}")
    (member / "splice.json").write_text("{}")
    (repo / ".git" / "hooks").mkdir(parents=True)
    (member / "hooks").symlink_to(repo / ".git" / "hooks")
    assert fs_entry_problem("hooks", member) == (f'"hooks" reaches the .git/ of the project {repo}')
    assert ProjectState(member).fs_problem("hooks", write=False) == (
        f'"hooks" reaches the .git/ of the project {repo}'
    )
    assert fs_entry_problem("packages/a/.git", repo) == (
        f'"packages/a/.git" reaches the .git/ of the project {member}'
    )
    assert fs_entry_problem("out", member) is None


def test_a_link_to_the_project_root_and_a_home_inside_are_refused(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    (root / "workspace").mkdir()
    (root / "alias").symlink_to(root)
    (root / "keys").symlink_to(root / ".splice" / "packages")
    assert fs_entry_problem("workspace", root, root / "elsewhere") is None
    assert "would include the project's splice.json" in (fs_entry_problem("alias", root) or "")
    assert "is inside the project's .splice/" in (fs_entry_problem("keys", root) or "")
    home = root / "workspace" / "home"
    assert fs_entry_problem("workspace", root, home) == (
        f'"workspace" would include SPLICE_HOME ({home})'
    )


# --- env ------------------------------------------------------------------------------------


def _splice_variables_in_the_code() -> set[str]:
    found: set[str] = set()
    for path in PACKAGE.rglob("*"):
        if path.suffix in {".py", ".mjs"}:
            found |= set(re.findall(r"\bSPLICE_[A-Z0-9_]+\b", path.read_text("utf-8")))
    return found


def test_every_splice_variable_the_code_reads_is_refused() -> None:
    names = _splice_variables_in_the_code()
    assert {"SPLICE_TOKEN", "SPLICE_MCP_TOKEN", "SPLICE_HOME", "SPLICE_REGISTRY"} <= names
    for name in sorted(names):
        try:
            Manifest.from_dict(minimal_manifest(permissions={"env": [name]}))
        except SpecError as exc:
            assert exc.details == (
                f'permissions.env: "{name}" is reserved: SPLICE_* variables configure Splice '
                "itself (registry and MCP tokens, SPLICE_HOME)",
            )
        else:
            raise AssertionError(f"{name} was accepted as an env grant")


def test_every_provider_key_is_refused() -> None:
    """The broker's keys are used through ``permissions.capabilities``; as an env grant they
    reached ``process.env`` whole (an RPC URL with its key, an AI key)."""
    for name in PROVIDER_VARIABLES:
        try:
            Manifest.from_dict(minimal_manifest(permissions={"env": [name]}))
        except SpecError as exc:
            assert exc.details == (
                f'permissions.env: "{name}" is reserved: it holds a provider key of the '
                "capability broker, which a tool uses through permissions.capabilities and "
                "never reads (docs/data-providers.md)",
            )
        else:
            raise AssertionError(f"{name} was accepted as an env grant")


@given(
    name=st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True)
    | st.sampled_from(PROVIDER_VARIABLES).map(str.lower)
)
def test_env_names_are_refused_by_the_whole_prefix_in_any_case(name: str) -> None:
    reserved = name.upper().startswith("SPLICE_") or name.upper() in PROVIDER_VARIABLES
    assert (env_entry_problem(name) is not None) is reserved


# --- the real Node, both directions ---------------------------------------------------------

READ_ALL = """import fs from 'node:fs';
const targets = %s;
export default () => targets.map((p) => {
  try { fs.readFileSync(p); return 'READ ' + p; } catch (e) { return e.code; }
}).concat(targets.map((p) => {
  try { fs.appendFileSync(p, ''); return 'WROTE ' + p; } catch (e) { return e.code; }
}));
"""


def _state_files(root: Path, home: Path) -> list[Path]:
    """A project holding every kind of protected file (and a home with a credential)."""
    files = [root / n for n in STATE_FILES] + [root / ".env", root / ".env.local", root / ".envrc"]
    files += [root / ".splice" / "packages" / "x", home / "credentials.json", home / "keys" / "k"]
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("state\n")
    return files


ACCEPTED = ["workspace", "data/in", "splice", "spliceX", "env", ".en", ".splicex", "home2"]
REFUSED = [".", "*", ".env", ".splice/packages", "splice.lock", "home", ".e*", "home/keys"]


@pytest.mark.node
def test_what_the_rule_accepts_cannot_reach_state_through_the_sandbox(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path / "project"))
    home = root / "home"
    targets = _state_files(root, home)
    permissions = {"fs": {"read": ACCEPTED, "write": ACCEPTED}}
    assert all(fs_entry_problem(e, root, home) is None for e in ACCEPTED)
    body = READ_ALL % json.dumps([str(p) for p in targets])
    pkg_dir = write_package(tmp_path / "pkgs", body, permissions=permissions)
    with SpliceRuntime(project_root=root, env={}, home=home) as runtime:
        result = runtime.execute(runtime.load(pkg_dir), "t", {})
    assert result.ok, result.error
    assert result.output == ["ERR_ACCESS_DENIED"] * (2 * len(targets))
    assert all(p.read_text() == "state\n" for p in targets)


@pytest.mark.node
@pytest.mark.parametrize("entry", REFUSED)
def test_what_the_rule_refuses_would_reach_state_with_the_runtime_flag(
    entry: str, tmp_path: Path
) -> None:
    """Without the rule: Node given the runtime's flag for ``entry`` reads a protected file."""
    root = Path(os.path.realpath(tmp_path / "project"))
    home = root / "home"
    targets = _state_files(root, home)
    assert fs_entry_problem(entry, root, home) is not None
    granted = effective_fs_path(root, entry)
    probe = tmp_path / "probe.mjs"
    probe.write_text(
        "import fs from 'node:fs';\n"
        f"for (const p of {json.dumps([str(p) for p in targets])}) {{\n"
        "  try { fs.readFileSync(p); console.log('READ ' + p); } catch (e) { console.log(e.code); }\n"
        "}\n"
    )
    done = subprocess.run(
        [
            str(find_node().path),
            "--permission",
            f"--allow-fs-read={probe}",
            f"--allow-fs-read={granted}",
            str(probe),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert any(line.startswith("READ ") for line in done.stdout.splitlines()), done


@pytest.mark.node
@pytest.mark.parametrize(
    ("entry", "home_under"),
    [("workspace", "workspace/home"), ("alias", None), ("data", "data/splice-home")],
)
def test_the_runtime_refuses_before_anything_is_created_or_run(
    entry: str, home_under: str | None, tmp_path: Path
) -> None:
    """What only the real project can tell (a link, SPLICE_HOME inside it): the runtime
    refuses PERMISSIONS_NOT_GRANTED; no directory is made, no process is started."""
    root = Path(os.path.realpath(tmp_path / "project"))
    root.mkdir()
    (root / "alias").symlink_to(root)
    home = root / home_under if home_under else tmp_path / "home"
    body = "export default () => 1;"
    permissions: dict[str, Any] = {"fs": {"read": [], "write": [entry]}}
    pkg_dir = write_package(tmp_path / "pkgs", body, permissions=permissions)
    runtime = SpliceRuntime(project_root=root, env={"SPLICE_HOME": str(home)})
    result = runtime.execute(runtime.load(pkg_dir), "t", {})
    assert result.error is not None and result.error.code is ErrorCode.PERMISSIONS_NOT_GRANTED
    assert result.error.details[0].startswith(f'permissions.fs.write: "{entry}" would include')
    assert result.isolation is None  # no process was started
    assert entry == "alias" or not (root / entry).exists()


def test_install_refuses_an_artifact_published_before_the_rule(tmp_path: Path) -> None:
    """A registry may still hold such a version: the install's package check refuses it
    before anything is written (the bytes themselves are intact)."""
    permissions = {"fs": {"read": ["*"], "write": []}}
    directory = plain_package(tmp_path / "old", minimal_manifest(permissions=permissions))
    data = pack_archive(collect_package_files(directory))
    expected = Expected("@acme/greeter", "1.0.0", integrity_of(data), len(data))
    with pytest.raises(InstallError) as refused:
        verify_artifact(data, expected, SignaturePinnedByLock(None))
    assert refused.value.code is ErrorCode.INVALID_PACKAGE
    (package_line,) = [d for d in refused.value.details if d.startswith("package: ")]
    assert 'permissions.fs.read: "*" contains "*"' in package_line


@pytest.mark.node
@pytest.mark.skipif(
    __import__("sys").prefix != __import__("sys").base_prefix,
    reason="in a virtual environment the whole environment is protected",
)
def test_a_project_below_a_system_pythons_prefix_keeps_its_write_grants() -> None:
    """Outside a virtual environment ``sys.prefix`` may be ``/usr``, where projects live
    (``/usr/src/app``): only the directories Python runs code from are protected, so such a
    project's own write grants stay grantable while a grant reaching site-packages is not."""
    import sys
    import sysconfig

    state = ProjectState(Path(sys.prefix) / "src" / "app")
    assert state.fs_problem("out") is None
    site_packages = Path(sysconfig.get_paths()["purelib"])
    inside = ProjectState(site_packages.parent)
    problem = inside.fs_problem(site_packages.name)
    assert problem is not None and "Splice's Python environment" in problem


def test_a_write_grant_may_not_reach_splices_own_installation(tmp_path: Path) -> None:
    """A project whose ``env`` is Splice's Python environment (its ``.venv`` often is): a
    write grant there would let a tool rewrite the parent's own code for its next run, so it
    is refused before anything runs. Reading it is not refused for that reason (it is
    harmless); here it is only as a link out of the project that no consent names (a
    package run from its directory is granted none)."""
    import sys

    import splice_build
    from testing.hostile_packages import write_package

    project = tmp_path / "project"
    project.mkdir()
    (project / "splice.json").write_text('{"packages": {}}\n', encoding="utf-8")
    (project / "env").symlink_to(sys.prefix)
    (project / "code").symlink_to(Path(splice_build.__file__).parent)
    body = "export default () => 1;"
    with SpliceRuntime(project_root=project, env={}) as runtime:
        for n, grant in enumerate(["env", "code", "env/lib"]):
            perms = {"fs": {"read": [], "write": [grant]}}
            pkg = write_package(tmp_path / "pkgs", body, permissions=perms, name=f"w{n}")
            result = runtime.execute(runtime.load(pkg), "t", {})
            assert result.error is not None, grant
            assert result.error.code == ErrorCode.PERMISSIONS_NOT_GRANTED, result.to_json()
            assert "Splice's" in " ".join(result.error.details)
        readable = {"fs": {"read": ["env", "code"], "write": []}}
        pkg = write_package(tmp_path / "pkgs", body, permissions=readable, name="reader")
        refused = runtime.execute(runtime.load(pkg), "t", {}).error
        assert refused is not None and refused.code == ErrorCode.PERMISSIONS_NOT_GRANTED
        assert "leads out of the project" in refused.message, refused.message
        assert "Splice's" not in " ".join(refused.details), refused.details
