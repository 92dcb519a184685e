"""Fuzz targets for the project state and SPLICE_HOME files no earlier target read
(fuzz/README.md, "Every reader of outside input").

``install_journal``: the bytes as a checkout's ``.splice/tmp/journal.json``, then the lock
every command takes first (``install.transaction.project_lock``: its recovery rolls the
journal forward or back). ``member_locks``: the bytes as a workspace member's ``splice.lock``,
read by workspace discovery's drop of what tools may have written, fast path included
(``project.tool_written._lock_writes``). ``workspace_memo``: the bytes as a checkout's
``.splice/workspace.json`` (``project.workspace.find_workspace``'s memo). ``home_files``: the
bytes as SPLICE_HOME's ``config.json`` or ``credentials.json``, through the readers of
``registry``, ``isolation`` and a saved token, then written back by the command that writes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

Check = Callable[[bytes], None]

# The tree of ``install_journal``: the installed package, two staging copies a journal may
# name, and what no recovery may touch (``.splice/`` beside them, the sources, a directory
# beside the project).
_TOKEN, _OTHER = "0123456789ab", "ba9876543210"
_TREE = {
    "project/splice.json": b'{"specVersion": 1, "packages": {"@a/b": "^1.0.0"}}\n',
    "project/splice.lock": b'{"lockfileVersion": 1, "packages": {}}\n',
    "project/.splice/packages/@a/b/index.js": b"installed\n",
    f"project/.splice/tmp/b-{_TOKEN}/index.js": b"staged\n",
    f"project/.splice/tmp/c-{_OTHER}-previous/index.js": b"backup\n",
    "project/.splice/statcache.json": b"{}\n",
    "project/src/keep.txt": b"source\n",
    "outside/keep.txt": b"outside\n",
    "outside/.splice/packages/@a/b/index.js": b"another project's\n",
}
# What a recovery may change: the packages, the staging area and the two project files.
_RECOVERY_PLACES = ("project/.splice/packages", "project/.splice/tmp")
_RECOVERY_FILES = ("project/splice.json", "project/splice.lock")


# The project's lock (project/state_dir.py): made by the lock itself, before any recovery.
_STATE_LOCK = "project/.splice/state.lock"


def _snapshot(base: Path) -> dict[str, tuple[object, ...]]:
    """Every entry below ``base`` (links not followed) but the project's lock: its type, mode
    and content."""
    seen: dict[str, tuple[object, ...]] = {}
    for directory, names, files in os.walk(base):
        for name in names + files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            body: object = None
            if os.path.islink(path):
                body = os.readlink(path)
            elif os.path.isfile(path):
                with open(path, "rb") as handle:
                    body = hashlib.sha256(handle.read()).hexdigest()
            seen[os.path.relpath(path, base)] = (info.st_mode, body)
    seen.pop(_STATE_LOCK, None)
    return seen


def _outside_recovery(snapshot: dict[str, tuple[object, ...]]) -> dict[str, tuple[object, ...]]:
    return {
        path: value
        for path, value in snapshot.items()
        if path not in _RECOVERY_FILES
        and not any(path == p or path.startswith(p + "/") for p in _RECOVERY_PLACES)
    }


def install_journal() -> Check:
    """A coded refusal (the journal ``NOT_WRITABLE``, ``splice.json`` or ``splice.lock``
    ``INVALID_PROJECT``) changes nothing; an accepted journal is gone afterwards, changed
    nothing but the packages, the staging area and the two project files, and left a
    ``splice.json`` that still loads. ``@LOCK@`` becomes the lock's JSON (a journal that
    rolls forward), ``@TOKEN@`` and ``@OTHER@`` the two staging tokens."""
    from fuzz.targets import Finding, _expect_codes, _scratch
    from splice_build.errors import SpliceError
    from splice_build.install.transaction import JOURNAL, Swap, project_lock
    from splice_build.project.layout import ProjectLayout
    from splice_build.project.lockfile import load_lockfile
    from splice_build.project.project_file import load_project_file

    base = _scratch() / "journal"
    names = {b"@TOKEN@": _TOKEN.encode(), b"@OTHER@": _OTHER.encode()}

    def plant(data: bytes) -> tuple[ProjectLayout, bytes]:
        shutil.rmtree(base, ignore_errors=True)
        for relative, content in _TREE.items():
            path = base / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        layout = ProjectLayout(base / "project")
        lock = json.dumps(load_lockfile(layout.root).to_json()).encode()
        for name, value in {**names, b"@LOCK@": lock}.items():
            data = data.replace(name, value)
        (layout.tmp_dir / JOURNAL).write_bytes(data)
        return layout, data

    def check(data: bytes) -> None:
        layout, data = plant(data)
        before = _snapshot(base)
        try:
            with project_lock(layout):
                pass
        except SpliceError as exc:
            _expect_codes(exc, {"NOT_WRITABLE", "INVALID_PROJECT"})
            if str(exc.code) == "NOT_WRITABLE" and _snapshot(base) != before:
                raise Finding("a refused journal changed the tree") from exc
            return
        after = _snapshot(base)
        if _outside_recovery(after) != _outside_recovery(before):
            changed = sorted(
                set(_outside_recovery(after).items()) ^ set(_outside_recovery(before).items())
            )
            raise Finding(f"the recovery changed what is not its own: {changed[:4]}")
        if (layout.tmp_dir / JOURNAL).exists():
            raise Finding("the journal outlived its recovery")
        load_project_file(layout.root)
        swaps = json.loads(data)["swaps"]
        for item in swaps:
            if Swap.from_json(layout, item).to_json() != item:
                raise Finding(f"a swap does not write back as read: {item!r:.200}")

    return check


def _reference_writes(data: bytes) -> list[str]:
    """The lock's ``fs.write`` strings, the whole text parsed (no fast path)."""
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        return []
    packages = document.get("packages") if isinstance(document, dict) else None
    found: list[str] = []
    for entry in packages.values() if isinstance(packages, dict) else ():
        node: object = entry
        for key in ("permissions", "fs", "write"):
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, list):
            found += [w for w in node if isinstance(w, str)]
    return found


def _identity(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return (info.st_dev, info.st_ino) if os.path.isdir(path) else None


def member_locks() -> Check:
    """``_lock_writes`` (with its fast path on the raw bytes) gives what a parse of the whole
    text gives; the lock's project is never dropped; the project planted in ``out`` is
    dropped exactly when a write string joined to the project names ``out`` or that project.
    ``@OUT@`` becomes ``out``'s real path."""
    from fuzz.targets import Finding, _scratch
    from splice_build.project.tool_written import _lock_writes, drop_tool_written

    base = _scratch() / "member-locks"
    home, repo = base / "home", base / "repo"
    home.mkdir(mode=0o700, parents=True)
    out = repo / "out"
    planted = out / "planted"
    planted.mkdir(parents=True)
    for project in (repo, planted):
        (project / "splice.json").write_text('{"specVersion": 1, "packages": {}}\n')
    holding = {_identity(str(out)), _identity(str(planted))}
    real_out = os.fsencode(os.path.realpath(out))

    def check(data: bytes) -> None:
        data = data.replace(b"@OUT@", real_out)
        (repo / "splice.lock").write_bytes(data)
        writes, _writer = _lock_writes(repo)
        expected = _reference_writes(data)
        if writes != expected:
            raise Finding(f"lock writes {writes[:4]!r}, the whole text {expected[:4]!r}")
        kept, _dropped, _ignored = drop_tool_written([repo, planted], [repo], home)
        if repo not in kept:
            raise Finding("a lock dropped its own project")
        names_it = any(
            _identity(os.path.normpath(os.path.join(repo, w))) in holding for w in expected
        )
        if (planted not in kept) != names_it:
            raise Finding(f"planted project {'kept' if names_it else 'dropped'}: {expected[:4]!r}")

    return check


def workspace_memo() -> Check:
    """``find_workspace`` with the memo: its members are those a memo-less read finds, unless
    the memo names this very ``pyproject.toml`` (device, inode, ``ctime``, which a shipped
    memo cannot know), and then only directories found holding a ``splice.json``; what it
    then writes reads back as the memo of the same answer. ``@PYPROJECT@`` becomes the
    file's text (JSON-escaped), ``@FILE@`` its identity."""
    from fuzz.targets import Finding, _expect_codes, _scratch
    from splice_build.errors import SpliceError
    from splice_build.project.workspace import MEMO_FILE, find_workspace

    base = _scratch() / "memo"
    root, home = base / "ws", base / "home"
    home.mkdir(mode=0o700, parents=True)
    pyproject = root / "pyproject.toml"
    root.mkdir()
    pyproject.write_text(
        '[tool.splice.workspace]\nmembers = ["packages/*"]\nexclude = ["packages/old"]\n'
    )
    for member in ("packages/a", "packages/b", "packages/old", "apps/web"):
        (root / member).mkdir(parents=True)
        (root / member / "splice.json").write_text('{"specVersion": 1, "packages": {}}\n')
    memo = root / ".splice" / MEMO_FILE
    memo.parent.mkdir()
    fresh = find_workspace(root, root=root, home=home).members
    candidates = {p for p in root.rglob("splice.json")}
    info = os.stat(pyproject)
    names = {
        b"@PYPROJECT@": json.dumps(pyproject.read_text())[1:-1].encode(),
        b"@FILE@": json.dumps([info.st_dev, info.st_ino, info.st_ctime_ns]).encode(),
    }

    def check(data: bytes) -> None:
        for name, value in names.items():
            data = data.replace(name, value)
        memo.write_bytes(data)
        try:
            found = find_workspace(root, root=root, home=home, remember=True)
        except SpliceError as exc:
            _expect_codes(exc, {"NOT_A_PROJECT", "NOT_WRITABLE"})
            return
        if not _trusted(data, names[b"@FILE@"]) and found.members != fresh:
            raise Finding(f"a shipped memo chose the members: {found.members}")
        if not {m / "splice.json" for m in found.members} <= candidates:
            raise Finding(f"a member holds no splice.json: {found.members}")
        again = find_workspace(root, root=root, home=home)
        if again.members != found.members:
            raise Finding("the memo written does not read back as the same answer")

    return check


def _trusted(data: bytes, identity: bytes) -> bool:
    """Whether the memo's ``file`` is this ``pyproject.toml``'s identity (it is then trusted)."""
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):
        return False
    return isinstance(body, dict) and body.get("file") == json.loads(identity)


_REGISTRY = "http://127.0.0.1:8787"


def home_files() -> Check:
    """First byte even: the rest is ``config.json`` (the registry and isolation settings read
    from it, then ``splice config set registry`` writing it back); odd: ``credentials.json``
    (the token saved for a registry, then ``splice login`` saving another and ``logout``
    removing it). ``INVALID_CONFIG`` is the only refusal, and its words hold no token; what
    is written back reads back with the other entries kept."""
    from fuzz.targets import Finding, _expect_codes, _scratch
    from splice_build.errors import SpliceError
    from splice_build.project.atomic import decode_json
    from splice_build.project.home import SpliceHome
    from splice_build.project.registry_url import resolve_registry
    from splice_build.registry.client.open import resolve_token
    from splice_build.runtime.isolation.plan import configured_mode
    from splice_build.spec.json_text import stringify

    home = SpliceHome(_scratch() / "home-files")
    home.ensure()

    def config(data: bytes) -> None:
        home.config_file.write_bytes(data)
        try:
            document = home.read_config()
            resolve_registry(flag=None, env={}, project=None, home=home)
            configured_mode({}, home.path)
        except SpliceError as exc:
            _expect_codes(exc, {"INVALID_CONFIG"})
            return
        written = {**document, "registry": _REGISTRY}
        home.write_config(written)
        # Written as JavaScript writes it (spec/json_text.py: an integer past 2**53 a double).
        if home.read_config() != decode_json(stringify(written).encode("utf-8")):
            raise Finding("config.json written back does not read back")

    def credentials(data: bytes) -> None:
        home.credentials_file.write_bytes(data)
        try:
            document = home.read_credentials()
            resolve_token(_REGISTRY, home=home, env={})
        except SpliceError as exc:
            _expect_codes(exc, {"INVALID_CONFIG"})
            shown = " ".join([exc.message, *map(str, exc.details or ()), str(exc.hint)])
            for token in _tokens(data):
                if token in shown:
                    raise Finding(f"a refusal shows a token: {shown[:200]}") from exc
            return
        kept = dict(document["registries"])
        home.save_credential("http://127.0.0.1:9", "fuzz-token", "fuzzer")
        saved = home.read_credentials()["registries"]
        if saved.get("http://127.0.0.1:9", {}).get("token") != "fuzz-token":
            raise Finding("a saved credential does not read back")
        home.remove_credential("http://127.0.0.1:9")
        if home.read_credentials()["registries"] != {
            k: v for k, v in kept.items() if k != "http://127.0.0.1:9"
        }:
            raise Finding("saving and removing a credential changed the others")

    def check(data: bytes) -> None:
        if data:
            (config if data[0] % 2 == 0 else credentials)(data[1:])

    return check


def _tokens(data: bytes) -> list[str]:
    """The string tokens of a credentials document, but those that are also a key."""
    try:
        body = json.loads(data)
        registries = body["registries"]
        entries = list(registries.items())
    except (ValueError, RecursionError, TypeError, KeyError, AttributeError):
        return []
    keys = {str(k) for k, _ in entries}
    return [
        e["token"]
        for _, e in entries
        if isinstance(e, dict)
        and isinstance(e.get("token"), str)
        and len(e["token"]) >= 6
        and e["token"] not in keys
    ]


def _without_workspace(document: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """``document`` without ``[tool.splice.workspace]``, and without the ``tool`` and ``splice``
    tables the edit made to hold it (empty once it is gone, absent from ``before``)."""
    import copy

    document = copy.deepcopy(document)
    tool = document.get("tool")
    splice = tool.get("splice") if isinstance(tool, dict) else None
    if isinstance(tool, dict) and isinstance(splice, dict):
        splice.pop("workspace", None)
        if not splice and "splice" not in before.get("tool", {}):
            del tool["splice"]
        if not tool and "tool" not in before:
            del document["tool"]
    return document


def workspace_edit() -> Check:
    """``splice workspace add apps/web`` (first byte even) or ``remove packages/a`` (odd) on
    the rest as the root's ``pyproject.toml`` (edited in place with tomlkit): ``INVALID_CONFIG``
    or ``USAGE`` and the file unchanged, or a file that TOML reads as before but for
    ``[tool.splice.workspace]``, whose members then hold the directory added and not the one
    removed (``absent``: the file unchanged)."""
    import tomllib

    from fuzz.targets import Finding, _expect_codes, _scratch
    from splice_build.errors import SpliceError
    from splice_build.project.workspace import add_member, find_workspace, remove_member

    base = _scratch() / "edit"
    root, home = base / "ws", base / "home"
    home.mkdir(mode=0o700, parents=True)
    for member in ("packages/a", "packages/b", "apps/web"):
        (root / member).mkdir(parents=True)
        (root / member / "splice.json").write_text('{"specVersion": 1, "packages": {}}\n')
    pyproject = root / "pyproject.toml"
    added, removed = root / "apps" / "web", root / "packages" / "a"

    def members() -> set[Path]:
        try:
            return set(find_workspace(root, root=root, home=home).members)
        except SpliceError as exc:
            _expect_codes(exc, {"NOT_A_PROJECT"})
            return set()

    def check(data: bytes) -> None:
        if not data:
            return
        adding, text = data[0] % 2 == 0, data[1:]
        pyproject.write_bytes(text)
        try:
            outcome = (
                add_member(root, added, home=home)
                if adding
                else remove_member(root, removed, home=home)
            )
        except SpliceError as exc:
            _expect_codes(exc, {"INVALID_CONFIG", "USAGE"})
            if pyproject.read_bytes() != text:
                raise Finding(f"a refused edit wrote the file ({exc.code})") from exc
            return
        written = pyproject.read_bytes()
        if outcome == "absent" and written != text:
            raise Finding("an absent member's remove wrote the file")
        before = tomllib.loads(text.decode("utf-8"))
        after = tomllib.loads(written.decode("utf-8"))
        if _without_workspace(after, before) != _without_workspace(before, before):
            raise Finding("the edit changed the file outside [tool.splice.workspace]")
        found = members()
        if adding and added not in found:
            raise Finding("the directory added is no member")
        if not adding and removed in found:
            raise Finding(f"the directory removed ({outcome}) is still a member")

    return check
