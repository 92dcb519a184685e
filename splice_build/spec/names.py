"""Package ids (``@ns/name``), package references (``@ns/name@range``) and tool references.

docs/compatibility.md#names-and-versions. A name segment is lowercase letters, digits and dashes, starting with a
letter or digit, at most 64 characters; it has no dots because a dot separates a package
from its tool (``example.hello``, ``@splice/example.hello``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from splice_build.errors import ErrorCode, SpecError
from splice_build.records import dataclass
from splice_build.spec.js_text import js_trim

if TYPE_CHECKING:
    from splice_build.spec.semver import Range

_SEGMENT = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
_TOOL_NAME = re.compile(r"[a-z][a-z0-9-]{0,63}")
_ID_SHAPE = re.compile(r"@([^/@\s]+)/([^/@\s]+)")
_ID_EXAMPLE = "Expected @namespace/name, e.g. @splice/example."
_SEGMENT_RULE = "Namespace and name may only contain lowercase letters, digits and dashes."


def is_valid_name(segment: object) -> bool:
    """A namespace or package name segment."""
    return isinstance(segment, str) and _SEGMENT.fullmatch(segment) is not None


def is_valid_tool_name(name: object) -> bool:
    """A tool name: like a segment, but it starts with a letter."""
    return isinstance(name, str) and _TOOL_NAME.fullmatch(name) is not None


def download_path(namespace: str, name: str, version: str) -> str:
    """The registry path of an artifact, relative to the registry's base URL, as the registry
    API's ``download`` field and the lock's ``resolved`` (base URL + this) have it: TS's
    ``downloadPath`` (the version URI-component encoded)."""
    from urllib.parse import quote

    return f"/packages/{namespace}/{name}/{quote(version, safe='')}/download"


def is_valid_package_id(text: object) -> bool:
    """``@ns/name`` exactly, without surrounding whitespace (as in manifests)."""
    if not isinstance(text, str):
        return False
    match = _ID_SHAPE.fullmatch(text)
    return match is not None and is_valid_name(match[1]) and is_valid_name(match[2])


@dataclass(frozen=True)
class PackageId:
    """``@namespace/name``; both segments are valid once constructed."""

    namespace: str
    name: str

    def __post_init__(self) -> None:
        if not (is_valid_name(self.namespace) and is_valid_name(self.name)):
            raise SpecError(
                ErrorCode.INVALID_NAME,
                f"Invalid package name {_quote(f'@{self.namespace}/{self.name}')}. {_SEGMENT_RULE}",
            )

    @classmethod
    def parse(cls, text: str) -> PackageId:
        """Parse ``@ns/name`` (surrounding whitespace ignored); raises SpecError INVALID_NAME."""
        match = _ID_SHAPE.fullmatch(js_trim(text)) if isinstance(text, str) else None
        if match is None:
            raise SpecError(
                ErrorCode.INVALID_NAME, f"Invalid package name {_quote(text)}. {_ID_EXAMPLE}"
            )
        if not (is_valid_name(match[1]) and is_valid_name(match[2])):
            raise SpecError(
                ErrorCode.INVALID_NAME, f"Invalid package name {_quote(text)}. {_SEGMENT_RULE}"
            )
        return cls(match[1], match[2])

    @classmethod
    def from_parts(cls, namespace: str, name: str) -> PackageId:
        return cls(namespace, name)

    @property
    def id(self) -> str:
        return f"@{self.namespace}/{self.name}"

    def __str__(self) -> str:
        return self.id


@dataclass(frozen=True)
class PackageRef:
    """A package and the range of versions wanted: ``@ns/name`` (``latest``) or ``@ns/name@^1.2.0``."""

    package: PackageId
    range: Range

    @classmethod
    def parse(cls, text: str) -> PackageRef:
        """Raises SpecError INVALID_NAME (the id part) or INVALID_RANGE (after the second ``@``)."""
        if not isinstance(text, str):
            raise SpecError(ErrorCode.INVALID_REF, f"Invalid package reference {_quote(text)}")
        trimmed = js_trim(text)
        at = trimmed.find("@", 1)
        id_part, range_text = (trimmed, "latest") if at == -1 else (trimmed[:at], trimmed[at + 1 :])
        package = PackageId.parse(id_part)
        from splice_build.spec.semver import Range  # not needed to parse a bare id

        try:
            rng = Range.parse(range_text)
        except SpecError:
            raise SpecError(
                ErrorCode.INVALID_RANGE,
                f"Invalid version range {_quote(range_text)} in {_quote(text)}. "
                "Use an exact version (1.2.3), ^1.2.3, ~1.2.3, * or latest.",
            ) from None
        return cls(package, rng)

    def __str__(self) -> str:
        return f"{self.package.id}@{self.range}"


@dataclass(frozen=True)
class ToolRef:
    """``<package>.<tool>``: ``package`` is a short name (``example``) or an id (``@splice/example``)."""

    package: str
    tool: str

    def __post_init__(self) -> None:
        if not is_valid_tool_name(self.tool):
            raise SpecError(ErrorCode.INVALID_REF, f"Invalid tool name {_quote(self.tool)}.")
        if not (is_valid_name(self.package) or is_valid_package_id(self.package)):
            raise SpecError(ErrorCode.INVALID_REF, f"Invalid package name {_quote(self.package)}.")

    @classmethod
    def parse(cls, text: str) -> ToolRef:
        """Split at the LAST dot (tool names have none).

        Raises SpecError INVALID_REF, or INVALID_NAME for a malformed ``@ns/name`` package.
        """
        trimmed = js_trim(text) if isinstance(text, str) else ""
        dot = trimmed.rfind(".")
        if dot <= 0 or dot == len(trimmed) - 1:
            raise SpecError(
                ErrorCode.INVALID_REF,
                f"Invalid tool reference {_quote(text)}. Expected <package>.<tool>, e.g. example.hello.",
            )
        package, tool = trimmed[:dot], trimmed[dot + 1 :]
        if not is_valid_tool_name(tool):
            raise SpecError(
                ErrorCode.INVALID_REF, f"Invalid tool name {_quote(tool)} in {_quote(text)}."
            )
        if package.startswith("@"):
            # A qualified package is parsed as an id: a bad one is INVALID_NAME, as in TS.
            return cls(PackageId.parse(package).id, tool)
        if not is_valid_name(package):
            raise SpecError(
                ErrorCode.INVALID_REF, f"Invalid package name {_quote(package)} in {_quote(text)}."
            )
        return cls(package, tool)

    @property
    def qualified(self) -> bool:
        """True when the package is a full ``@ns/name`` id, not a short name."""
        return self.package.startswith("@")

    @property
    def package_id(self) -> PackageId | None:
        """The package id of a qualified reference, else None."""
        return PackageId.parse(self.package) if self.qualified else None

    @property
    def package_name(self) -> str:
        """The package's name segment (``example`` for both forms)."""
        return self.package.rsplit("/", 1)[-1]

    def __str__(self) -> str:
        return f"{self.package}.{self.tool}"


def _quote(value: object) -> str:
    """A name for a message: the text of a string (as ``str``, whatever its subclass says),
    only the type of anything else, so a caller's ``__str__`` never runs."""
    if isinstance(value, str):
        return f'"{clipped(value)}"'
    return f"(a {type(value).__name__}, not a string)"


# What a message quotes of a refused name, range or version (semver.py too): an SDK caller's
# string of megabytes was copied whole into the error, twice for a range of a reference.
MAX_QUOTED_CHARS = 256


def clipped(value: object) -> str:
    """``value`` (as ``str``, whatever its subclass says) cut at ``MAX_QUOTED_CHARS``, with
    its length; anything else named by its type, so a caller's ``__repr__`` never runs."""
    if not isinstance(value, str):
        return f"a {type(value).__name__}"
    text = str.__str__(value)
    if len(text) <= MAX_QUOTED_CHARS:
        return text
    return f"{text[:MAX_QUOTED_CHARS]}… ({len(text)} characters)"


def did_you_mean(given: str, names: Iterable[str]) -> str:
    """``Did you mean X? `` for the one of ``names`` closest to ``given`` (a hint's start),
    else ``""``: a mistyped package or tool is answered as the parser answers a mistyped
    command (``did you mean 'install'?``)."""
    close = closest(given, names)
    return f"Did you mean {close}? " if close is not None else ""


def closest(given: str, names: Iterable[str]) -> str | None:
    """The one of ``names`` closest to ``given`` (``difflib``'s), else None: for a mistyped
    name, tool, or key of a file (project/project_file.py, project/workspace.py). A package
    (``@ns/name``, ``@ns/name.tool``) is compared by what follows its namespace, when both
    have one: the shared ``@splice/`` made any package of the namespace close, so
    ``splice update @splice/nope`` was hinted ``Did you mean @splice/files?``."""
    import difflib  # only on such an error: a command that succeeds never needs it

    names = list(names)
    if given.startswith("@") and names and all(name.startswith("@") for name in names):
        by_rest: dict[str, str] = {}
        for name in names:  # the first of names sharing a rest, as the list gives them
            by_rest.setdefault(name.partition("/")[2], name)
        close = difflib.get_close_matches(given.partition("/")[2], list(by_rest), n=1)
        return by_rest[close[0]] if close else None
    close = difflib.get_close_matches(given, names, n=1)
    return close[0] if close else None


def guessed(given: str, names: Iterable[str], quote: Callable[[str], str] = repr) -> str:
    """`` (did you mean 'X'?)`` for the one of ``names`` closest to ``given``, else ``""``:
    the end of a note on an unknown key of a file (``quote``: how that file's notes quote)."""
    close = closest(given, names)
    return f" (did you mean {quote(close)}?)" if close is not None else ""
