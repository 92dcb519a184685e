"""Permissions a package declares and a project grants (docs/compatibility.md#permissions, docs/security.md).

Everything is denied unless declared: ``fs.read`` / ``fs.write`` (project-relative paths, ``.``
is the whole project, writable paths are readable too), ``network`` (lowercase host names,
``*.example.com`` for subdomains only, ``*`` for any *public* host), ``env`` (variable names)
and ``capabilities`` (host capabilities run by the broker, listed in
``schemas/capabilities.json``). Lists are de-duplicated keeping the first occurrence, and
``capabilities`` is left out of the JSON when empty so older manifests and locks serialize
unchanged.

Grants are compared by exact string per list (``ungranted``): ``*`` does not cover a named
host and a named host does not cover ``*``; the only implication is write ⇒ read.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from pathlib import PurePath
from typing import Any

from splice_build.errors import ErrorCode, SpecError
from splice_build.records import dataclass, fields
from splice_build.spec.paths import is_safe_relative_path
from splice_build.spec.project_state import RunMemo, effective_fs_path
from splice_build.spec.validation import SchemaValidator, compile_schema, load_schema

ANY_PUBLIC_HOST = "*"
MAX_HOST_LENGTH = 253
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"

_NO_PERMISSIONS = "none (sandboxed: no file, network, environment or host capability access)"
_ANY_HOST_LINE = "network: any public host (private, loopback and link-local addresses are blocked)"
# A declared host no connection may use (``grants`` refuses it): shown, never counted as one.
_NO_CONNECTION = "network (grants no connection: never a connection's peer): "
_READ, _WRITE, _NETWORK, _ENV, _CAPABILITIES = (
    "read files: ",
    "write files: ",
    "network: ",
    "environment variable: ",
    "host capabilities: ",
)
# How ``summary`` names each kind of ``describe`` line: (first words, one, several).
_KINDS = (
    (_READ, "file path to read", "file paths to read"),
    (_WRITE, "file path to write", "file paths to write"),
    (_NETWORK, "named host", "named hosts"),
    (_ENV, "environment variable", "environment variables"),
)
_CAPABILITY_NOTE = "run by Splice with the host's provider keys: the tool gets results, never keys"
_BILLED_NOTE = "may spend provider credits/money"


@functools.cache
def _host_pattern() -> re.Pattern[str]:
    """Compiled on first use: most manifests name no host, and ~0.09 ms of a cold
    ``splice run`` went to compiling it."""
    return re.compile(rf"(?:\*\.)?{_LABEL}(?:\.{_LABEL})*")


def is_valid_host_pattern(value: str) -> bool:
    """``*``, or a lowercase host name optionally prefixed with ``*.`` (at most 253 characters)."""
    return value == ANY_PUBLIC_HOST or (
        len(value) <= MAX_HOST_LENGTH and _host_pattern().fullmatch(value) is not None
    )


def is_grantable_path(value: str) -> bool:
    """A safe relative path (spec/paths.py) made only of visible characters and the ASCII
    space: a grant is shown to people exactly as it is enforced, so a line break, a tab, a
    control or format character (a bidi override, a zero-width space) or an unusual space
    (U+00A0, U+3000), which would let the consent prompt read differently, fails closed."""
    from splice_build.spec.plain_text import is_plain_line

    return is_safe_relative_path(value) and is_plain_line(value)


@dataclass(frozen=True)
class Capability:
    """One host capability of ``schemas/capabilities.json``."""

    name: str
    billed: bool
    description: str


@functools.cache
def capability_catalogue() -> tuple[Capability, ...]:
    """Every capability a package may request, in the catalogue's order (read once)."""
    path = resources.files("splice_build").joinpath("schemas", "capabilities.json")
    data = json.loads(path.read_text("utf-8"))
    return tuple(
        Capability(c["name"], bool(c["billed"]), c["description"]) for c in data["capabilities"]
    )


@functools.cache
def broker_capabilities() -> frozenset[str]:
    return frozenset(c.name for c in capability_catalogue())


@functools.cache
def billed_capabilities() -> frozenset[str]:
    return frozenset(c.name for c in capability_catalogue() if c.billed)


def __getattr__(name: str) -> Any:
    # BROKER_CAPABILITIES / BILLED_CAPABILITIES read the catalogue on first use, not at import.
    if name == "BROKER_CAPABILITIES":
        return broker_capabilities()
    if name == "BILLED_CAPABILITIES":
        return billed_capabilities()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _schema() -> SchemaValidator:
    return compile_schema(
        "permissions.schema.json",
        formats={
            "relative-path": is_grantable_path,
            "host-pattern": is_valid_host_pattern,
            "capability": lambda name: name in broker_capabilities(),
        },
    )


@dataclass(frozen=True)
class Permissions:
    """Normalized permissions; build them with ``from_json`` / ``parse_into`` from JSON."""

    fs_read: tuple[str, ...] = ()
    fs_write: tuple[str, ...] = ()
    network: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    capabilities: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, obj: object, *, where: str = "permissions") -> Permissions:
        """Validate and normalize; raises SpecError INVALID_MANIFEST listing every problem."""
        errors: list[str] = []
        permissions = cls.parse_into(obj, errors, where)
        if errors:
            raise SpecError(ErrorCode.INVALID_MANIFEST, f"{where} is invalid", details=errors)
        return permissions

    @classmethod
    def parse_into(cls, obj: object, errors: list[str], where: str = "permissions") -> Permissions:
        """Validate ``obj`` (a JSON value; an absent field is simply ``Permissions()``).

        Problems are appended to ``errors`` as ``<where>.<field>: problem`` lines; the result
        is then empty and must not be used.
        """
        schema = _schema()
        variables = {"capabilities": ", ".join(c.name for c in capability_catalogue())}
        problems = schema.check(obj, root=where, variables=variables)
        if problems:
            errors.extend(schema.ordered(problems))
            return cls()
        assert isinstance(obj, Mapping)

        def at(path: tuple[str, ...]) -> Iterable[str]:
            node: Any = obj
            for key in path:
                node = node.get(key, {})
            return node or ()

        return cls(**{"_".join(leaf): _unique(at(leaf)) for leaf in schema_leaves()})

    @classmethod
    def well_formed(cls, obj: object) -> Permissions:
        """The entries of ``obj`` that are each well formed, where ``parse_into`` found a
        problem: the rules of the project's state judge them too, so that validation says
        every problem at once (a malformed ``./x`` hid the refusal of ``.`` beside it)."""
        if not isinstance(obj, Mapping):
            return cls()
        bad = {problem.path for problem in _schema().check(obj)}
        kept: dict[str, tuple[str, ...]] = {}
        for leaf in schema_leaves():
            node: Any = obj
            for key in leaf:
                node = node.get(key) if isinstance(node, Mapping) else None
            if not isinstance(node, list) or leaf in bad:
                node = []
            kept["_".join(leaf)] = _unique(
                entry
                for index, entry in enumerate(node)
                if isinstance(entry, str) and (*leaf, index) not in bad
            )
        return cls(**kept)

    @property
    def is_empty(self) -> bool:
        return not any(getattr(self, "_".join(leaf)) for leaf in schema_leaves())

    def to_json(self) -> dict[str, Any]:
        """``{"fs": {"read", "write"}, "network", "env"}`` + ``capabilities`` only when non-empty."""
        out: dict[str, Any] = {
            "fs": {"read": list(self.fs_read), "write": list(self.fs_write)},
            "network": list(self.network),
            "env": list(self.env),
        }
        if self.capabilities:
            out["capabilities"] = list(self.capabilities)
        return out

    def describe(
        self,
        root: PurePath | None = None,
        links: Mapping[str, str] | None = None,
        *,
        grants: Callable[[str], bool] | None = None,
    ) -> list[str]:
        """Human lines (``splice info``, consent prompts): one per path, host and variable, and
        one for all host capabilities. With ``root`` (a project's directory) a file line shows
        the exact path the runtime grants, not the entry's text; ``links``: where entries
        leading out of the project were resolved to lead (spec/outside_grants.py), shown as
        they are, never resolved again (what a consent records is what it showed).
        ``grants``: whether a declared host may ever be connected to (the network policy's
        rule, security/addresses.py ``grants_connection``): one it refuses (``0.0.0.0``) is
        said to grant nothing, not listed as a host the user is asked to allow."""
        if self.is_empty:
            return [_NO_PERMISSIONS]

        memo = RunMemo()  # the grants' directories resolved once for these lines

        def shown(entry: str) -> str:
            if root is None:
                return entry
            if links is not None and entry in links:
                return shown_link(root, entry, links[entry])
            return shown_fs_path(root, entry, memo)

        # One maker per list of the schema: a list without one fails here, never goes unshown.
        makers: dict[str, Callable[[tuple[str, ...]], list[str]]] = {
            "fs_read": lambda paths: [f"{_READ}{shown(path)}" for path in paths],
            "fs_write": lambda paths: [f"{_WRITE}{shown(path)}" for path in paths],
            "network": lambda hosts: [_host_line(host, grants) for host in hosts],
            "env": lambda names: [f"{_ENV}{name}" for name in names],
            "capabilities": lambda names: [_capabilities_line(names)] if names else [],
        }
        lines: list[str] = []
        for leaf in schema_leaves():
            name = "_".join(leaf)
            lines += makers[name](getattr(self, name))
        return lines


def _host_line(host: str, grants: Callable[[str], bool] | None) -> str:
    if host == ANY_PUBLIC_HOST:
        return _ANY_HOST_LINE
    if grants is not None and not grants(host):
        return f"{_NO_CONNECTION}{host}"
    return f"{_NETWORK}{host}"


def _capabilities_line(names: tuple[str, ...]) -> str:
    """Every host capability on one line, the note on keys and on billing said once."""
    billed = [name for name in names if name in billed_capabilities()]
    line = f"{_CAPABILITIES}{', '.join(names)} ({_CAPABILITY_NOTE})"
    if billed:
        which = "" if len(billed) == len(names) else f"{', '.join(billed)} "
        line += f" — {which}{_BILLED_NOTE}"
    return line


def summary(lines: Sequence[str]) -> str:
    """``describe`` lines counted by kind, e.g. ``2 file paths to read, any public host, 1
    environment variable, host capabilities``.

    The last line of a consent prompt: a package may declare thousands of grants, and what
    they push off the screen (``network: *`` above 5,000 file paths) is still named next to
    the question.
    """
    parts = []
    for prefix, one, several in _KINDS:
        count = sum(1 for line in lines if line.startswith(prefix))
        if prefix == _NETWORK and _ANY_HOST_LINE in lines:
            parts.append("any public host")
            count -= 1
        if count:
            parts.append(f"{count} {one if count == 1 else several}")
    if any(line.startswith(_CAPABILITIES) for line in lines):
        parts.append("host capabilities")
    return ", ".join(parts) or "nothing"


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


@functools.cache
def schema_leaves() -> tuple[tuple[str, ...], ...]:
    """Every list of ``permissions.schema.json`` as its path of keys (``("fs", "read")``,
    ``("network",)``, …), walked from the schema itself: each is the :class:`Permissions`
    field named by joining the path with ``_``, and :func:`ungranted` and :func:`common`
    compare every one of them, so a permission added to the schema cannot be left out of
    consent (a leaf without its field fails here, at first use)."""
    leaves = tuple(_schema_lists())
    names = {"_".join(leaf) for leaf in leaves}
    if names != {f.name for f in fields(Permissions)}:
        raise AssertionError(
            f"BUG: Permissions fields differ from permissions.schema.json {sorted(names)}"
        )
    return leaves


def max_entries(leaf: tuple[str, ...]) -> int:
    """The most entries the list ``leaf`` may hold: its ``maxItems`` in
    ``permissions.schema.json``, the one place that says it. What a run hands on of a list
    (project/grant_record.py's capacity) is sized from it, never from a number of its own."""
    limit = _schema_lists()[leaf].get("maxItems")
    if not isinstance(limit, int):
        raise AssertionError(f"BUG: permissions.schema.json {leaf}: a list without maxItems")
    return limit


@functools.cache
def _schema_lists() -> dict[tuple[str, ...], Mapping[str, Any]]:
    """Each list of ``permissions.schema.json`` (its ``$ref`` followed): its path of keys
    and its schema."""
    schema = load_schema("permissions.schema.json")
    defs = schema.get("$defs", {})

    def walk(
        node: Mapping[str, Any], path: tuple[str, ...]
    ) -> dict[tuple[str, ...], Mapping[str, Any]]:
        ref = node.get("$ref")
        if isinstance(ref, str):
            node = defs[ref.removeprefix("#/$defs/")]
        if node.get("type") == "array":
            return {path: node}
        if node.get("type") != "object":
            raise AssertionError(f"BUG: permissions.schema.json {path}: not an object or a list")
        return {
            leaf: found
            for key, child in node["properties"].items()
            for leaf, found in walk(child, (*path, key)).items()
        }

    return walk(schema, ())


# A grant of the first list also grants the second (a writable path is readable).
_IMPLIED = {"fs_read": ("fs_write",)}


def _compare(
    requested: Permissions, granted: Permissions, keep: Callable[[bool], bool]
) -> Permissions:
    """Per list of the schema, the requested items whose being granted satisfies ``keep``."""
    out: dict[str, tuple[str, ...]] = {}
    for leaf in schema_leaves():
        name = "_".join(leaf)
        held = {
            item
            for field_name in (name, *_IMPLIED.get(name, ()))
            for item in getattr(granted, field_name)
        }
        out[name] = tuple(item for item in getattr(requested, name) if keep(item in held))
    return Permissions(**out)


def ungranted(requested: Permissions, granted: Permissions) -> Permissions:
    """What ``requested`` asks for beyond ``granted`` (empty when fully granted).

    Exact string membership per list of the schema; a read is also satisfied by a granted
    write."""
    return _compare(requested, granted, lambda held: not held)


def common(requested: Permissions, granted: Permissions) -> Permissions:
    """What of ``requested`` ``granted`` also grants (every list of the schema; a read is
    also granted by a write): the part of a grant both sides agree to."""
    return _compare(requested, granted, lambda held: held)


def shown_fs_path(root: PurePath, entry: str, memo: RunMemo | None = None) -> str:
    """The path a file grant names in the project at ``root``, and where it really leads when a
    symbolic link on the way (``docs -> ~/.ssh`` in a cloned checkout) takes it elsewhere: the
    runtime grants and binds the real path (runtime/runtime.py resolves each grant), so the
    consent prompt names it too, never only the project path the link stands at. ``memo``:
    the real paths the other lines of the same list took (spec/project_state.py)."""
    memo = RunMemo() if memo is None else memo
    effective = effective_fs_path(root, entry)
    try:
        real = memo.real_text(os.fspath(effective))
        real_root = memo.real_text(os.fspath(root))
    except OSError as exc:  # a link renamed as it was read, or unreadable: never accepted
        return f"{effective} (a link that could not be resolved: {exc.strerror})"
    if real == str(effective_fs_path(PurePath(real_root), entry)):
        return str(effective)
    return f"{effective} (a link to {real})"


def shown_link(root: PurePath, entry: str, real: str) -> str:
    """The line of a file grant resolved to ``real`` out of the project (``""``: it could
    not be resolved, spec/outside_grants.py ``UNRESOLVED``)."""
    effective = effective_fs_path(root, entry)
    if not real:
        return f"{effective} (a link that could not be resolved)"
    return f"{effective} (a link to {real})"


def host_allowed(host: str, patterns: Iterable[str]) -> bool:
    """Whether ``host`` matches a declared pattern (whether it is public is checked elsewhere).

    Case-insensitive, one trailing dot ignored; ``*`` matches every host; ``*.x`` matches
    hosts ending in ``.x`` with at least one more label, never ``x`` itself.
    """
    name = host.lower()
    if name.endswith("."):
        name = name[:-1]
    for pattern in patterns:
        if pattern == ANY_PUBLIC_HOST:
            return True
        if pattern.startswith("*."):
            suffix = pattern[1:]
            if name.endswith(suffix) and len(name) > len(suffix):
                return True
        elif name == pattern:
            return True
    return False
