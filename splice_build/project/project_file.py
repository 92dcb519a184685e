"""``splice.json``: finding the project, and reading, validating and writing its file.

docs/compatibility.md#splicejson::

    { "specVersion": 1, "registry"?: "<url|alias>", "packages": { "@ns/name": "<range>" },
      "requireSignatures"?: ["<ns>"], "trustedSigners"?: { "<ns>": ["ed25519:<16 hex>"] },
      "reuse"?: true | { "maxCalls"?, "idleSeconds"?, "maxMemoryMb"? } }

(``reuse``: opt-in process reuse for ``splice mcp``, spec/reuse.py.)

The file marks the project root (found by walking up from the current directory). It is
parsed once into a :class:`ProjectFile` whose ids and ranges are valid; every problem is
reported as ``INVALID_PROJECT`` naming the field. Writes are atomic and byte for byte what the
TypeScript Splice writes (docs/compatibility.md, "splice.json"): ``JSON.stringify(…, null, 2)``
plus a newline, keys ``specVersion``, ``packages`` (ids in JavaScript's sort order),
``registry``. Top-level keys this version does not know are kept and written back after them,
so a newer tool's settings are not lost.

Writers that read, modify and write must hold ``lock(ProjectLayout(root).state_lock)``
around the whole cycle; the save functions themselves do not lock (the lock is not
re-entrant).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from splice_build.errors import ErrorCode, ProjectError, SpecError, SpliceError
from splice_build.project.atomic import atomic_write_json, decode_json, make_dirs
from splice_build.project.layout import PROJECT_FILE, ProjectLayout
from splice_build.records import dataclass, field, replace
from splice_build.spec.limits import MAX_PROJECT_STATE_BYTES
from splice_build.spec.names import PackageId
from splice_build.spec.paths import utf16_sort_key
from splice_build.spec.regular_file import read_regular_file
from splice_build.spec.semver import Range

if TYPE_CHECKING:
    from splice_build.spec.reuse import ReusePolicy

SPEC_VERSION = 1
_KNOWN_KEYS = (
    "specVersion",
    "registry",
    "packages",
    "requireSignatures",
    "trustedSigners",
    "reuse",
)


def sorted_by_id(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``mapping`` ordered as JavaScript sorts its keys (UTF-16 code units)."""
    return dict(sorted(mapping.items(), key=lambda item: utf16_sort_key(item[0])))


@dataclass(frozen=True)
class ProjectFile:
    """The parsed ``splice.json``: package id → range text as the user wrote it.

    ``extra`` holds top-level keys this version does not know, in file order.
    """

    packages: Mapping[str, str]
    registry: str | None = None
    spec_version: int = SPEC_VERSION
    extra: Mapping[str, Any] = field(default_factory=dict)
    # Namespaces whose packages must carry a verified publisher signature (issue #11).
    require_signatures: tuple[str, ...] = ()
    # Namespace → key ids trusted out of band (``splice keys trust``, docs/signing.md#trusted-signers).
    trusted_signers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # The ``reuse`` value as written (valid; None when absent): ``reuse_policy`` reads it.
    reuse: bool | Mapping[str, Any] | None = None
    # SHA-256 hex of the bytes this was read from (None: built in memory); the no-op state
    # compares it (install/statcache.py).
    source: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "packages", MappingProxyType(sorted_by_id(self.packages)))
        object.__setattr__(self, "extra", MappingProxyType(dict(self.extra)))
        object.__setattr__(
            self, "trusted_signers", MappingProxyType(sorted_by_id(dict(self.trusted_signers)))
        )

    def to_json(self) -> dict[str, Any]:
        """The TypeScript Splice's key order (``specVersion``, ``packages``, ``registry``), then
        the keys only this implementation writes, then unknown keys as they were read."""
        out: dict[str, Any] = {"specVersion": self.spec_version, "packages": dict(self.packages)}
        if self.registry is not None:
            out["registry"] = self.registry
        if self.require_signatures:
            out["requireSignatures"] = list(self.require_signatures)
        if self.trusted_signers:
            out["trustedSigners"] = {ns: list(ids) for ns, ids in self.trusted_signers.items()}
        if self.reuse is not None:
            out["reuse"] = self.reuse if isinstance(self.reuse, bool) else dict(self.reuse)
        out.update(self.extra)
        return out

    def unknown_keys(self) -> list[str]:
        """One note per top-level key this version does not read, naming the known key it is
        nearest to: a misspelt ``"pakages"`` was kept silently and the project read as one
        without packages. Bounded as ``INVALID_PROJECT``'s problems are (``shown_problems``):
        the first 20 keys, each compared cut at 500 characters, then how many more."""
        from splice_build.spec.names import guessed

        keys = list(self.extra)
        notes = []
        for key in keys[:MAX_SHOWN_PROBLEMS]:
            guess = guessed(key[:MAX_PROBLEM_CHARS], _KNOWN_KEYS, json.dumps)
            notes.append(
                f"{PROJECT_FILE}: unknown key {json.dumps(key)}{guess}: kept as written, "
                "not read by this version"
            )
        more = len(keys) - MAX_SHOWN_PROBLEMS
        return shown_problems(notes) + ([f"and {more} more unknown keys"] if more > 0 else [])

    def reuse_policy(self) -> ReusePolicy | None:
        """The project's opt-in reuse policy (None: one fresh process per call)."""
        from splice_build.spec.reuse import ReusePolicy

        return ReusePolicy.from_json(self.reuse)

    def requires_signature(self, package_id: str) -> bool:
        """True when ``@ns/name`` is in a namespace listed in ``requireSignatures`` or in
        ``trustedSigners``: trusting a publisher's key asks for its signature, else a registry
        could drop the signature and the trust would decide nothing."""
        namespace = package_id[1:].split("/", 1)[0]
        return namespace in self.require_signatures or namespace in self.trusted_signers

    def trusted_for(self, package_id: str) -> tuple[str, ...]:
        """The key ids trusted for the namespace of ``@ns/name`` (empty: none pinned). None
        for the official namespace: only the shipped key signs it, whatever splice.json says
        (docs/signing.md#the-official-key)."""
        from splice_build.spec.official_key import is_official

        if is_official(package_id):
            return ()
        return self.trusted_signers.get(package_id[1:].split("/", 1)[0], ())

    def with_trusted(self, namespace: str, key_id: str) -> ProjectFile:
        """A copy trusting ``key_id`` for ``namespace`` (no change if it already does)."""
        ids = self.trusted_signers.get(namespace, ())
        if key_id in ids:
            return self
        return replace(self, trusted_signers={**self.trusted_signers, namespace: (*ids, key_id)})

    def with_package(self, package_id: str, range_text: str) -> ProjectFile:
        """A copy with ``package_id`` set to ``range_text`` (added or replaced)."""
        return self._with_packages({**self.packages, package_id: range_text})

    def without_package(self, package_id: str) -> ProjectFile:
        """A copy without ``package_id`` (unchanged if it was not listed)."""
        return self._with_packages({k: v for k, v in self.packages.items() if k != package_id})

    def with_ranges(self, ranges: Mapping[str, str | None]) -> ProjectFile:
        """A copy with each id set to its range, or dropped where the range is None."""
        packages = {**self.packages, **ranges}
        return self._with_packages({k: v for k, v in packages.items() if v is not None})

    def _with_packages(self, packages: Mapping[str, str]) -> ProjectFile:
        return replace(self, packages=packages)


def find_project_root(start: Path) -> Path:
    """The nearest directory at or above ``start`` holding a ``splice.json`` file, passing
    over one above ``start`` whose file, locks or ``.splice`` are another user's unless they
    may write ``start`` (project/state_owner.py ``claimed_above``: ``/tmp/splice.json`` is
    anyone's, and so are a ``/tmp/splice.lock`` and ``/tmp/.splice`` beside yours).

    Symbolic links in ``start`` are kept as written (like Node's ``path.resolve``).
    Raises ``ProjectError(NOT_A_PROJECT)`` when there is none.
    """
    here = Path(os.path.abspath(start))
    passed: list[str] = []
    for directory in (here, *here.parents):
        path = directory / PROJECT_FILE
        try:
            info = os.stat(path)
        except FileNotFoundError:
            continue
        except OSError as exc:  # a name too long, a directory this user may not search
            if exc.errno in (errno.ENOTDIR, errno.ELOOP):
                continue  # not a file there (is_file's answer)
            raise ProjectError(
                ErrorCode.NOT_A_PROJECT,
                f"{directory} cannot be searched for {PROJECT_FILE}: {exc.strerror}",
            ) from None
        if not stat.S_ISREG(info.st_mode):
            continue
        if directory != here:
            from splice_build.project.layout import LEGACY_LOCK_FILE, LOCK_FILE, STATE_DIR
            from splice_build.project.state_owner import claimed_above

            writer = claimed_above(path, info, here, (LOCK_FILE, LEGACY_LOCK_FILE, STATE_DIR))
            if writer is not None:
                passed.append(f"{path} is passed over: {_whose(writer)}")
                continue
        return directory
    raise _not_a_project(here, tuple(passed))


def _whose(writer: int) -> str:
    """Whose ``splice.json`` above the current directory was passed over."""
    from splice_build.project.state_owner import ANYONE

    if writer == ANYONE:
        return (
            "it, its lock or its .splice is yours or root's, but another user may have put "
            "it there and written it"
        )
    return (
        f"it, its lock or its .splice is another user's (uid {writer}), who cannot write "
        "this directory"
    )


def load_project_file(root: Path) -> ProjectFile:
    """Read and validate ``<root>/splice.json``.

    Raises ``ProjectError(NOT_A_PROJECT)`` when the file is missing and
    ``ProjectError(INVALID_PROJECT)`` when it cannot be read or is malformed.
    """
    path = ProjectLayout(Path(root)).project_file
    try:
        data = read_regular_file(path, MAX_PROJECT_STATE_BYTES)
    except FileNotFoundError:
        raise _not_a_project(Path(root)) from None
    except OSError as exc:
        raise _invalid(f"cannot be read ({exc.strerror})") from exc
    try:
        try:
            value = decode_json(data, unique_keys=True)
        except ValueError as exc:
            raise _invalid(str(exc)) from exc
        parsed = _parse(value)
    except ProjectError as exc:  # which file: the project may be a directory above
        exc.hint = f"Correct {path} as the message says, then run the command again."
        raise
    from splice_build.spec.digests import sha256_hex

    return replace(parsed, source=sha256_hex(data))


def save_project_file(root: Path, pf: ProjectFile) -> None:
    """Write ``<root>/splice.json`` atomically (see the module docstring about locking)."""
    atomic_write_json(ProjectLayout(Path(root)).project_file, pf.to_json(), keep_mode=True)


def init_project(directory: Path, *, registry: str | None = None) -> tuple[Path, bool]:
    """Create ``splice.json`` (and only that) in ``directory``; returns ``(root, created)``.

    An existing ``splice.json`` is left alone (``created`` is False). ``registry`` is stored
    as given after it has been validated (``ProjectError(INVALID_CONFIG)``).
    """
    root = Path(os.path.abspath(directory))
    if registry is not None:
        from splice_build.project.registry_url import normalize_registry_url

        normalize_registry_url(registry)
    path = ProjectLayout(root).project_file
    if path.exists() and not path.is_file():
        raise _invalid("is not a regular file")
    try:
        make_dirs(root)  # project/creation_modes.py: never writable by others, whatever the umask
        # Created only if absent, atomically: two concurrent inits never overwrite each other.
        created = atomic_write_json(path, ProjectFile({}, registry).to_json(), exclusive=True)
    except OSError as exc:  # the SDK's Splice.init raised it bare, the CLI as INTERNAL_ERROR
        raise _not_created(root, exc) from exc
    return root, created


def _not_created(root: Path, exc: OSError) -> SpliceError:
    """``init``'s refusal of a directory the file system would not let it make or write:
    ``NOT_WRITABLE`` (or ``DISK_FULL``…) as any write (errors.py ``storage_error``), else
    ``USAGE`` (a directory of ``/proc``, which answers ``ENOENT`` to a ``mkdir`` in it)."""
    from splice_build.errors import UsageError, storage_error

    return storage_error(exc) or UsageError(
        f"project directory {root} cannot be created: {exc.strerror}",
        hint="choose a directory of a file system you can write to",
    )


def _not_a_project(directory: Path, details: tuple[str, ...] = ()) -> ProjectError:
    """``details``: the projects passed over, whose hint is to run in that project itself
    (taken there whoever wrote it), not to make this directory a project of its own."""
    return ProjectError(
        ErrorCode.NOT_A_PROJECT,
        f"No splice.json found in {directory} or any parent directory.",
        details=details,
        hint=(
            "Run the command in the directory of the project passed over if it is yours to "
            "run (or name it: splice mcp --project DIR, Splice(DIR)), or `splice init` to "
            "create one here."
            if details
            else "Run `splice init` to create one."
        ),
    )


def _invalid(problem: str, details: tuple[str, ...] = ()) -> ProjectError:
    return ProjectError(
        ErrorCode.INVALID_PROJECT, f"{PROJECT_FILE} is invalid: {problem}", details=details
    )


def _parse(value: object) -> ProjectFile:
    if not isinstance(value, dict):
        raise _invalid("the top level must be a JSON object")
    problems: list[str] = []
    spec_version = value.get("specVersion")
    if not _is_spec_version(spec_version):
        problems.append(f"specVersion: must be {SPEC_VERSION} (got {_show(value, 'specVersion')})")
    registry = value.get("registry")
    if "registry" in value:
        problems.extend(_registry_problems(registry))
    packages = value.get("packages", {})
    if isinstance(packages, dict):
        for key, range_text in packages.items():
            problems.extend(_package_problems(key, range_text))
    else:
        problems.append("packages: must be an object")
    policy = value.get("requireSignatures", [])
    problems.extend(_policy_problems(policy))
    trusted = value.get("trustedSigners", {})
    problems.extend(_trusted_problems(trusted))
    reuse = value.get("reuse")
    if "reuse" in value:
        from splice_build.spec.reuse import policy_problems

        problems.extend(policy_problems(reuse))
    if problems:
        shown = shown_problems(problems)
        raise _invalid(shown[0], tuple(shown) if len(problems) > 1 else ())
    extra = {k: v for k, v in value.items() if k not in _KNOWN_KEYS}
    namespaces = tuple(dict.fromkeys(str(ns).removeprefix("@") for ns in policy))
    signers = {ns.removeprefix("@"): tuple(dict.fromkeys(ids)) for ns, ids in trusted.items()}
    return ProjectFile(packages, registry, SPEC_VERSION, extra, namespaces, signers, reuse)


def _trusted_problems(trusted: object) -> list[str]:
    """``trustedSigners``: ``{"<namespace>": ["ed25519:<16 hex>", …]}``. The key-id rule's
    module (with ``base64``, ~0.5 ms) is imported only when there is a key id to check: a
    ``splice run`` reads splice.json, which most projects write without signers."""
    from splice_build.spec.names import is_valid_name

    if not isinstance(trusted, dict):
        return ["trustedSigners: must be an object of namespace → key ids"]
    problems = []
    seen: set[str] = set()
    for ns, ids in trusted.items():
        name = ns.removeprefix("@")
        if not is_valid_name(name):
            problems.append(f"trustedSigners: {ns!r} is not a valid namespace")
            continue
        if name in seen:  # "acme" and "@acme": one of the two lists would be dropped
            problems.append(f"trustedSigners: {ns!r} names a namespace listed before")
        seen.add(name)
        if not isinstance(ids, list) or not ids:
            problems.append(f"trustedSigners.{ns}: must be a non-empty list of key ids")
        else:
            from splice_build.spec.signing import is_key_id

            problems.extend(
                f"trustedSigners.{ns}[{i}]: {item!r} is not a key id (ed25519:<16 hex>)"
                for i, item in enumerate(ids)
                if not is_key_id(item)
            )
    return problems


def _policy_problems(policy: object) -> list[str]:
    """``requireSignatures``: a list of namespaces (``acme`` or ``@acme``)."""
    from splice_build.spec.names import is_valid_name

    if not isinstance(policy, list):
        return ["requireSignatures: must be a list of namespaces"]
    return [
        f"requireSignatures[{i}]: {item!r} is not a valid namespace"
        for i, item in enumerate(policy)
        if not isinstance(item, str) or not is_valid_name(item.removeprefix("@"))
    ]


def _is_spec_version(value: object) -> bool:
    # JSON.parse reads 1 and 1.0 as the same number; a boolean is never a version.
    return isinstance(value, int | float) and not isinstance(value, bool) and value == SPEC_VERSION


# What an INVALID_PROJECT error shows of a splice.json's problems: a checkout's file (up to
# 64 MiB) chooses their number and the names and ranges each one quotes, twice.
MAX_SHOWN_PROBLEMS = 20
MAX_PROBLEM_CHARS = 500


def shown_problems(problems: list[str]) -> list[str]:
    """The first ``MAX_SHOWN_PROBLEMS`` of ``problems``, each cut at ``MAX_PROBLEM_CHARS``,
    then how many more: 200 package names of 5,000 characters made every command in that
    checkout print 2 MB (``--json`` too, in one document). ``splice.lock`` is shown the same
    way (project/lockfile.py)."""
    shown = [p if len(p) <= MAX_PROBLEM_CHARS else p[:MAX_PROBLEM_CHARS] + "…" for p in problems]
    more = len(shown) - MAX_SHOWN_PROBLEMS
    return shown[:MAX_SHOWN_PROBLEMS] + ([f"and {more} more"] if more > 0 else [])


def _show(container: Mapping[str, object], key: str) -> str:
    return json.dumps(container[key]) if key in container else "nothing"


def _registry_problems(registry: object) -> list[str]:
    """``registry`` (its rule's module only for a splice.json that names one: ``splice run``
    reads this file, which most projects write without)."""
    from splice_build.project.registry_url import normalize_registry_url

    if not isinstance(registry, str):
        return ["registry: must be a string"]
    try:
        normalize_registry_url(registry)
    except ProjectError as exc:
        return [f"registry: {exc.message}"]
    return []


def range_change_problems(key: str, range_text: object) -> list[str]:
    """What is wrong with setting ``packages[key]`` to ``range_text`` (None: dropping it)."""
    if range_text is None:
        return _id_problems(key)
    return _package_problems(key, range_text)


def _id_problems(key: str) -> list[str]:
    try:
        canonical = PackageId.parse(key).id
    except SpecError as exc:
        return [f"packages.{key}: invalid package id ({exc.message})"]
    if canonical != key:
        return [f"packages.{key}: invalid package id (write it as {canonical})"]
    return []


def _package_problems(key: str, range_text: object) -> list[str]:
    problems = _id_problems(key)
    if problems:
        return problems
    if not isinstance(range_text, str):
        return [f"packages.{key}: range must be a string"]
    try:
        Range.parse(range_text)
    except SpecError as exc:
        return [f"packages.{key}: invalid range {json.dumps(range_text)} ({exc.message})"]
    return []
