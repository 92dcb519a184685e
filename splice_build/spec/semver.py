"""Semantic versions (semver.org 2.0) and the version ranges Splice understands.

docs/compatibility.md#names-and-versions. Ranges are deliberately few: exact ``1.2.3``, caret ``^1.2.3``, tilde
``~1.2.3``, ``*`` and ``latest``. ``*`` and ``latest`` match stable versions only, and a
prerelease satisfies nothing but an exact range naming it, so a prerelease is never picked
up by accident.

Comparison is semver precedence: build metadata is ignored by every comparison, ``==``
included (``1.0.0+a == 1.0.0+b``); ``str()`` keeps it. Numeric prerelease identifiers are
compared as JavaScript numbers (doubles), as the TypeScript Splice compares them, so two
that differ only beyond 2**53 are equal.

A version string has no length limit (only the manifest's ``version`` field has one, 64
characters, checked by the manifest schema); a major, minor or patch number beyond
JavaScript's safe integers is not a version.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum

from splice_build.errors import ErrorCode, SpecError
from splice_build.records import dataclass

_MAX_SAFE_INTEGER = 2**53 - 1  # the TypeScript parser rejects what a JS number cannot hold
_MAX_SAFE_DIGITS = len(str(_MAX_SAFE_INTEGER))
# Numeric prerelease identifiers longer than this stay text (Python's int() refuses very long
# digit strings); they still compare as numbers.
_MAX_EXACT_DIGITS = 4000

_IDENT = r"(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)"
_VERSION = re.compile(
    r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    rf"(?:-({_IDENT}(?:\.{_IDENT})*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)
_RANGE_HELP = "Use an exact version (1.2.3), ^1.2.3, ~1.2.3, * or latest."

Identifier = str | int


@dataclass(frozen=True, eq=False)
class Version:
    """A parsed semantic version; compare with ``<``, ``==``, ``max()`` by semver precedence."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[Identifier, ...] = ()
    build: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Version:
        """Parse ``text`` exactly (no trimming, no ``v`` prefix); raises SpecError INVALID_VERSION."""
        version = _parse(text)
        if version is None:
            from splice_build.spec.names import clipped

            raise SpecError(
                ErrorCode.INVALID_VERSION,
                f"Invalid version {clipped(text)!r}: expected a semantic version such as 1.2.3 or 1.2.3-beta.1",
            )
        return version

    @property
    def is_prerelease(self) -> bool:
        return bool(self.prerelease)

    def _key(self) -> tuple[int, int, int, tuple[tuple[int, float | str], ...]]:
        # A release sorts after all of its prereleases; numeric identifiers sort before
        # alphanumeric ones; a shorter prerelease sorts first when it is a prefix.
        if not self.prerelease:
            return (self.major, self.minor, self.patch, ((1, 0),))
        ids = tuple(_precedence(i) for i in self.prerelease)
        return (self.major, self.minor, self.patch, ((0, 0), *ids))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __lt__(self, other: Version) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() < other._key()

    def __le__(self, other: Version) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() <= other._key()

    def __gt__(self, other: Version) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() > other._key()

    def __ge__(self, other: Version) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() >= other._key()

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(str(i) for i in self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text


def unsafe_identifiers(version: Version) -> list[str]:
    """The numeric prerelease identifiers beyond JavaScript's safe integers.

    Those compare as doubles, so ``1.0.0-9007199254740993`` equals ``1.0.0-9007199254740992``:
    two texts that a range cannot tell apart. Without them (and without build metadata) two
    versions are equal exactly when their texts are; the registry publishes no others.
    """
    return [
        text
        for text in (str(i) for i in version.prerelease)
        if text.isdigit() and (len(text) > _MAX_SAFE_DIGITS or int(text) > _MAX_SAFE_INTEGER)
    ]


def _parse(text: object) -> Version | None:
    if not isinstance(text, str):
        return None
    match = _VERSION.fullmatch(text)
    if match is None:
        return None
    if any(len(match.group(i)) > _MAX_SAFE_DIGITS for i in (1, 2, 3)):
        return None
    major, minor, patch = (int(match.group(i)) for i in (1, 2, 3))
    if max(major, minor, patch) > _MAX_SAFE_INTEGER:
        return None
    prerelease = tuple(
        _identifier(part) for part in (match.group(4).split(".") if match.group(4) else ())
    )
    build = tuple(match.group(5).split(".")) if match.group(5) else ()
    return Version(major, minor, patch, prerelease, build)


def _identifier(part: str) -> Identifier:
    if part.isdigit() and len(part) <= _MAX_EXACT_DIGITS:
        return int(part)
    return part


def _precedence(identifier: Identifier) -> tuple[int, float | str]:
    """Numeric identifiers (as JavaScript numbers) sort before alphanumeric ones."""
    if isinstance(identifier, int):
        try:
            return (0, float(identifier))
        except OverflowError:
            return (0, float("inf"))
    if identifier.isdigit():  # a numeric identifier too long to be kept as an int
        return (0, float(identifier))
    return (1, identifier)


def is_valid_version(text: object) -> bool:
    return _parse(text) is not None


class RangeKind(StrEnum):
    LATEST = "latest"
    ANY = "*"
    EXACT = "exact"
    CARET = "^"
    TILDE = "~"


@dataclass(frozen=True)
class Range:
    """A version range as written in splice.json, a package ref or ``dependencies``."""

    text: str
    kind: RangeKind
    base: Version | None = None

    @classmethod
    def parse(cls, text: str) -> Range:
        """Parse ``text`` exactly; raises SpecError INVALID_RANGE."""
        rng = _parse_range(text)
        if rng is None:
            from splice_build.spec.names import clipped

            raise SpecError(
                ErrorCode.INVALID_RANGE, f"Invalid version range {clipped(text)!r}. {_RANGE_HELP}"
            )
        return rng

    @property
    def is_exact(self) -> bool:
        return self.kind is RangeKind.EXACT

    def satisfies(self, version: Version, *, prereleases: bool = False) -> bool:
        """Whether the range takes ``version``; ``prereleases``: as if a prerelease were
        taken like any version (only to name one in a hint: no range takes it)."""
        if self.kind in (RangeKind.LATEST, RangeKind.ANY):
            return prereleases or not version.is_prerelease
        base = self.base
        assert base is not None, "BUG: a version range without a base version"
        if self.kind is RangeKind.EXACT:
            return version == base
        if (version.is_prerelease and not prereleases) or version < base:
            return False
        if self.kind is RangeKind.TILDE:
            return (version.major, version.minor) == (base.major, base.minor)
        # Caret: changes may not touch the left-most non-zero component.
        if base.major > 0:
            return version.major == base.major
        if base.minor > 0:
            return version.major == 0 and version.minor == base.minor
        return (version.major, version.minor, version.patch) == (0, 0, base.patch)

    def __str__(self) -> str:
        return self.text


def _parse_range(text: object) -> Range | None:
    if not isinstance(text, str):
        return None
    if text == "latest":
        return Range(text, RangeKind.LATEST)
    if text == "*":
        return Range(text, RangeKind.ANY)
    kind = {"^": RangeKind.CARET, "~": RangeKind.TILDE}.get(text[:1], RangeKind.EXACT)
    base = _parse(text if kind is RangeKind.EXACT else text[1:])
    return None if base is None else Range(text, kind, base)


def is_valid_range(text: object) -> bool:
    return _parse_range(text) is not None


def _versions(versions: Iterable[str | Version]) -> Iterable[Version]:
    """Parsed versions; strings that are not versions are skipped (they match no range)."""
    for item in versions:
        version = item if isinstance(item, Version) else _parse(item)
        if version is not None:
            yield version


def max_satisfying(versions: Iterable[str | Version], rng: Range) -> Version | None:
    """The highest version in ``versions`` that ``rng`` accepts (first one wins a tie)."""
    best: Version | None = None
    for version in _versions(versions):
        if rng.satisfies(version) and (best is None or version > best):
            best = version
    return best


def latest_version(versions: Iterable[str | Version]) -> Version | None:
    """The highest stable version, else the highest prerelease, else None."""
    best_stable: Version | None = None
    best_any: Version | None = None
    for version in _versions(versions):
        if best_any is None or version > best_any:
            best_any = version
        if not version.is_prerelease and (best_stable is None or version > best_stable):
            best_stable = version
    return best_stable if best_stable is not None else best_any


def precedence_key(version: Version) -> str:
    """A text whose byte order (SQLite's BINARY, PostgreSQL's ``"C"``) is semver precedence.

    Kept in an indexed column so that a store can read a package's highest versions without
    parsing all of them. Numbers carry their digit count first (``1.10.0`` after ``1.9.0``); a
    release ends in ``~``, above a prerelease's ``-`` (``1.0.0-rc.1`` before ``1.0.0``);
    prerelease identifiers are joined by ``!``, below every identifier character, so a shorter
    prerelease sorts first; numeric identifiers (``0``) sort before alphanumeric ones (``1``).
    Build metadata is left out, as precedence ignores it. One difference from ``<``: numeric
    prerelease identifiers beyond 2**53 order exactly here, where ``<`` compares them as
    JavaScript numbers.
    """
    key = "".join(f"{len(str(n)):02d}{n}" for n in (version.major, version.minor, version.patch))
    if not version.prerelease:
        return key + "~"
    parts = []
    for identifier in version.prerelease:
        text = str(identifier)
        numeric = text.isdigit()
        parts.append(f"0{len(text):04d}{text}" if numeric else f"1{text}")
    return key + "-" + "!".join(parts)
