"""Choosing a version for a package range (docs/compatibility.md#install-pipeline "add").

``@ns/name`` means the newest stable version, saved as ``^x.y.z``; ``@ns/name@<range>`` keeps
the locked version if it satisfies the range and the registry still has it, else takes the
highest match; ``latest`` and ``*`` are saved as ``^<version>``, other ranges as given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from splice_build.errors import ErrorCode, InstallError, RegistryError, SpliceError
from splice_build.project.registry_url import EMBEDDED_REGISTRY
from splice_build.records import dataclass
from splice_build.spec.semver import Range, RangeKind, Version, latest_version, max_satisfying

# The most versions a version walk takes (docs/registry.md#version-lists): far beyond any real
# history, and a bound on what a registry that never ends its pages can make a client read.
MAX_LISTED_VERSIONS = 100_000
# The versions an error names as available: the highest, then how many more.
MAX_SHOWN_VERSIONS = 20

if TYPE_CHECKING:
    from splice_build.project.lockfile import LockEntry
    from splice_build.registry.client.interface import RegistryClient


@dataclass(frozen=True)
class Resolution:
    """The version chosen for a package and the range to record in ``splice.json``."""

    package_id: str
    version: str
    range_text: str


def published_versions(client: RegistryClient, package_id: str) -> tuple[list[str], str | None]:
    """The versions the registry lists and the latest of them; ``PACKAGE_NOT_FOUND`` passes
    through.

    The latest is computed from the list, as TS's ``latestVersion`` does (the highest stable
    version, else the highest prerelease), never taken from the answer's ``latest``: the
    registry's own pointer is only a claim, and one naming an older listed version made
    ``outdated`` and ``update`` report that one as the latest."""
    info = package_answer(client, package_id)
    entries = info.get("versions", [])
    if info.get("versionsTruncated") is True:  # the rest are on the /versions pages
        entries = all_version_entries(client, package_id)
    versions = [str(v["version"]) for v in entries if isinstance(v, dict)]
    latest = latest_version(versions)
    return versions, None if latest is None else str(latest)


def available_detail(versions: list[str]) -> str:
    """``available: …`` for an error: the ``MAX_SHOWN_VERSIONS`` highest of a registry's
    ``versions``, then how many more. A registry may list ``MAX_LISTED_VERSIONS`` of up to
    256 characters each: listed whole, they made one error line of megabytes, cut only where
    the CLI cuts any output (1 MiB)."""
    from splice_build.spec.semver import is_valid_version

    if not versions:
        return "available: none"
    parsed = sorted((Version.parse(v) for v in versions if is_valid_version(v)), reverse=True)
    shown = ", ".join(str(v) for v in parsed[:MAX_SHOWN_VERSIONS])
    more = len(parsed) - min(len(parsed), MAX_SHOWN_VERSIONS)
    return f"available: {shown}" + (f" and {more} more" if more else "")


def no_matching_version(
    package_id: str, range_text: str, versions: list[str], command: str = "add"
) -> InstallError:
    """``NO_MATCHING_VERSION`` for a range none of ``versions`` matches (``add``, a sync of a
    ``splice.json`` range, ``info``, ``verify``): the versions there are, and the hint of
    what to type with one (``command``: the one that asked; ``add`` writes a new range). It
    had no hint, and the SDK's names the call."""
    from splice_build.spec.names import clipped

    prerelease = _prerelease_in_range(range_text, versions)
    hint = (
        f"A prerelease is taken only by its exact version: `splice {command} "
        f"{package_id}@{prerelease}`."
        if prerelease is not None
        else f"Pick one of the versions available: `splice {command} {package_id}@<version>`."
    )
    return InstallError(
        ErrorCode.NO_MATCHING_VERSION,
        f"No version of {package_id} matches {clipped(range_text)}",
        details=[available_detail(versions)],
        hint=hint,
    )


def _prerelease_in_range(range_text: str, versions: list[str]) -> str | None:
    """The highest of ``versions`` that ``range_text`` would take were prereleases taken like
    any version (``^1.0.0-rc.1`` and ``1.0.0-rc.2``), as its text: a range takes none
    (docs/compatibility.md), and the hint "pick one of the versions available" left the user
    at the prerelease they had written."""
    from splice_build.errors import SpecError
    from splice_build.spec.semver import Range, Version, is_valid_version

    try:
        rng = Range.parse(range_text)
    except SpecError:
        return None
    parsed = [(Version.parse(text), text) for text in versions if is_valid_version(text)]
    taken = [
        (v, text) for v, text in parsed if v.is_prerelease and rng.satisfies(v, prereleases=True)
    ]
    return max(taken, key=lambda item: item[0])[1] if taken else None  # the first of equals


def package_answer(client: RegistryClient, package_id: str) -> dict[str, Any]:
    """The registry's answer for ``package_id``; ``PACKAGE_NOT_FOUND`` names the registry
    asked and hints at ``splice search``, whichever command asked (``info`` said only
    "Package … not found" with the detail "registry code: NOT_FOUND")."""
    try:
        return client.package(package_id)
    except RegistryError as exc:
        if exc.code is ErrorCode.PACKAGE_NOT_FOUND:
            raise RegistryError(
                exc.code,
                f"Package {package_id} was not found in {registry_named(client.base_url)}",
                hint="Search with `splice search <words>`.",
            ) from exc
        raise


def registry_named(url: str) -> str:
    """The registry at ``url`` as a message names it: ``embedded:`` read as a cut-off
    sentence."""
    return "the embedded registry" if url == EMBEDDED_REGISTRY else url


def all_version_entries(client: RegistryClient, package_id: str) -> list[Any]:
    """Every page of the package's versions (docs/registry.md#version-lists), in order.

    The walk is bounded whatever the registry answers: each page must bring versions not
    listed before under a cursor not used before, and the whole list holds at most
    ``MAX_LISTED_VERSIONS``; otherwise ``REGISTRY_ERROR``, never an endless walk."""
    entries: list[Any] = []
    listed: set[str] = set()
    cursors: set[str | None] = {None}
    cursor: str | None = None
    while True:
        page = client.versions(package_id, cursor=cursor)
        versions = [str(entry["version"]) for entry in page.get("versions", [])]
        entries += page.get("versions", [])
        following = page.get("nextCursor")
        problem = _walk_problem(versions, listed, following, cursors)
        if problem is not None:
            from splice_build.registry.client.answers import malformed

            raise malformed(f"/packages/{package_id[1:]}/versions", [problem])
        if not isinstance(following, str):
            return entries
        cursors.add(following)
        cursor = following


def _walk_problem(
    versions: list[str], listed: set[str], following: object, cursors: set[str | None]
) -> str | None:
    """Why a page of the version walk cannot be taken (``listed`` grows by its versions)."""
    for version in versions:
        if version in listed:
            return f"versions: {version} is listed twice"
        listed.add(version)
    if len(listed) > MAX_LISTED_VERSIONS:
        return f"versions: more than {MAX_LISTED_VERSIONS} versions"
    if isinstance(following, str) and following in cursors:
        return "nextCursor: a cursor given before (the pages would never end)"
    if isinstance(following, str) and not versions:
        return "nextCursor: a page with no versions is not the last (the pages would never end)"
    return None


def saved_range(rng: Range, version: str) -> str:
    """The range written to ``splice.json`` for a chosen version."""
    if rng.kind in (RangeKind.LATEST, RangeKind.ANY):
        return f"^{version}"
    return rng.text


def wanted_version(versions: list[str], rng: Range, current: str | None) -> Version | None:
    """The highest listed version ``rng`` accepts, never older than ``current`` (the locked
    version) when ``rng`` accepts that one, and never another text of the same precedence.

    Registries never take a version back, so a list without the locked version, or whose
    best match is older, is a rollback (or a mirror that is behind): ``outdated``, ``add``
    and ``update`` keep the locked version rather than downgrade to what it offers
    (docs/security.md#rollback-and-freeze). Installing the kept version still needs its
    locked bytes (``LOCK_MISMATCH`` otherwise). A listed version equal to the locked one in
    precedence but not in text (``1.0.0+b`` for ``1.0.0``, or a numeric prerelease
    identifier beyond 2**53, spec/semver.py) is no newer: taking it would install other
    bytes under a version the range and the lock already hold, with no lock pin to match."""
    best = max_satisfying(versions, rng)
    locked = None if current is None else Version.parse(current)
    if locked is not None and rng.satisfies(locked) and (best is None or best <= locked):
        return locked
    return best


def resolve(
    client: RegistryClient,
    package_id: str,
    rng: Range,
    locked: LockEntry | None,
    *,
    prefer_locked: bool = True,
) -> Resolution:
    """Pick the version of ``package_id`` for ``rng`` (:func:`wanted_version`); raises
    ``NO_MATCHING_VERSION``."""
    versions, _latest = published_versions(client, package_id)
    if (
        prefer_locked
        and locked is not None
        and locked.version in versions
        and rng.satisfies(Version.parse(locked.version))
    ):
        return Resolution(package_id, locked.version, saved_range(rng, locked.version))
    best = wanted_version(versions, rng, locked.version if locked is not None else None)
    if best is None:
        raise no_matching_version(package_id, rng.text, versions)
    return Resolution(package_id, str(best), saved_range(rng, str(best)))


def locked_offline(
    exc: SpliceError,
    package_id: str,
    rng: Range,
    locked: LockEntry | None,
    project_range: str | None,
) -> Resolution | None:
    """``add``'s resolution when the registry cannot be asked (``exc`` is offline): the locked
    version when ``rng`` accepts it, as TS's ``addPackage`` falls back (its bytes then come
    from the verified cache, pinned by the lock); None otherwise.

    The range saved is the one given (``*`` as ``^<locked>``, as online); a bare id
    (``latest``) keeps the project's range when it accepts the locked version, else
    ``^<locked>``. Unlike TS, a bare id never keeps a locked prerelease offline: ``latest``
    does not accept one, and a lock outside its range is never written."""
    from splice_build.install.session import is_offline

    if locked is None or not is_offline(exc):
        return None
    version = Version.parse(locked.version)
    if not rng.satisfies(version):
        return None
    saved = saved_range(rng, locked.version)
    if (
        rng.kind is RangeKind.LATEST
        and project_range is not None
        and Range.parse(project_range).satisfies(version)
    ):
        saved = project_range
    return Resolution(package_id, locked.version, saved)
