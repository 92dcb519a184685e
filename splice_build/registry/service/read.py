"""Anonymous reads: search, package, versions, version metadata, provenance, download.

docs/compatibility.md#registry-api. Hidden packages leave search but stay readable and installable.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Hashable
from typing import Any

from splice_build.errors import ErrorCode, RegistryError
from splice_build.records import dataclass, replace
from splice_build.registry.api import BUNDLE_CONTENT_TYPE, TARGZ_CONTENT_TYPE
from splice_build.registry.blobs.interface import BlobReader
from splice_build.registry.db.interface import Package, PageKey, Version, VersionEntry
from splice_build.registry.service import fields
from splice_build.registry.service.artifacts import artifact_reader, read_artifact
from splice_build.registry.service.deps import Deps
from splice_build.registry.service.signing import version_signatures
from splice_build.spec import json_text, untrusted_json
from splice_build.spec.js_number import js_number
from splice_build.spec.names import download_path

MAX_QUERY = 100
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
KINDS = ("skill", "agent")
PACKAGE_VERSIONS = 50  # versions listed by GET /packages/:ns/:name (the highest ones)
VERSIONS_PAGE = 50  # default page of GET /packages/:ns/:name/versions
VERSIONS_PAGE_MAX = 1000
MAX_CURSOR = 512  # characters; a real cursor is far shorter


@dataclass(frozen=True)
class Artifact:
    """Download response: the bytes plus what the HTTP headers announce."""

    data: bytes
    integrity: str
    filename: str
    content_type: str


@dataclass(frozen=True)
class OpenArtifact:
    """``Artifact`` for the HTTP route, which streams the stored bytes."""

    blob: BlobReader
    integrity: str
    filename: str
    content_type: str


@dataclass(frozen=True)
class Keyed:
    """A document to answer: ``key`` names every row and column it is made of but those the
    store never changes, so equal keys mean equal documents; ``build`` makes it
    (http/answer_cache.py keeps its written bytes by the key)."""

    key: Hashable
    build: Callable[[], Any]
    cost: int = 0  # characters of stored text ``build`` parses (``ratelimit.count_costly_read``)


def search(
    deps: Deps, query: str, *, limit: str | float | None, kind: str | None
) -> dict[str, Any]:
    q = query.strip().lower()[:MAX_QUERY]
    if kind is not None and kind not in KINDS:
        raise fields.bad_request(f"kind must be one of: {', '.join(KINDS)}")
    hits = deps.meta.search(q, limit=_limit(limit), kind=kind)
    results = [
        {
            "name": hit.id,
            "description": hit.description,
            "latest": hit.latest_version,
            "kind": hit.kind,
        }
        for hit in hits
    ]
    return {"query": q, "results": results}


def _limit(value: str | float | None) -> int:
    """The TypeScript registry's rule: ``Math.trunc(Number(limit)) || 20``, clamped to 1..100.

    So a missing, empty, zero, fractional-below-one or non-numeric limit means 20; ``0x10`` is
    16, ``1e2`` is 100, ``-5`` is 1, ``Infinity`` is 100 (docs/compatibility.md, "Registry API").
    """
    number = (
        js_number(value)
        if isinstance(value, str)
        else float(DEFAULT_LIMIT if value is None else value)
    )
    truncated = math.trunc(number) if math.isfinite(number) else number
    if math.isnan(truncated) or truncated == 0:
        return DEFAULT_LIMIT
    return int(min(max(truncated, 1), MAX_LIMIT))


def _package(deps: Deps, namespace: str, name: str) -> Package:
    package_id = fields.package_id(namespace, name)
    row = deps.meta.package(package_id)
    if row is None:
        raise RegistryError(ErrorCode.NOT_FOUND, f"Package {package_id} not found")
    return row


def _version(deps: Deps, namespace: str, name: str, version: str) -> tuple[Package, Version]:
    package = _package(deps, namespace, name)
    row = deps.meta.version(package.id, version)
    if row is None:
        raise RegistryError(ErrorCode.NOT_FOUND, f"Version {package.id}@{version} not found")
    return package, row


def package(deps: Deps, namespace: str, name: str) -> dict[str, Any]:
    """The package with its ``PACKAGE_VERSIONS`` highest versions (docs/registry.md#version-lists).

    ``versions`` keeps the shape every client reads (``[{version, publishedAt}]``, in publish
    order) and holds the versions a range is most likely to want; ``versionCount`` and
    ``versionsTruncated`` tell a client that the rest are on the ``/versions`` pages.
    """
    return _package_document(deps, _package(deps, namespace, name))


def package_document(deps: Deps, namespace: str, name: str) -> Keyed:
    """``package`` by its key: the package's row, whose ``versionCount`` and ``updatedAt`` a
    publish changes (versions are never deleted, so the listed ones change only then)."""
    row = _package(deps, namespace, name)
    return Keyed(("package", row), lambda: _package_document(deps, row))


def _package_document(deps: Deps, row: Package) -> dict[str, Any]:
    highest = deps.meta.highest_versions(row.id, limit=PACKAGE_VERSIONS)
    if all(v.version != row.latest_version for v in highest):
        # Many prereleases above the latest stable version: "latest" must stay resolvable.
        latest = deps.meta.version(row.id, row.latest_version)
        if latest is not None:
            entry = VersionEntry(latest.version, latest.published_at, latest.integrity, latest.size)
            highest = [*highest[: PACKAGE_VERSIONS - 1], entry]
    listed = sorted(highest, key=lambda v: (v.published_at, v.version))
    return {
        "name": row.id,
        "namespace": row.namespace,
        "description": row.description,
        "latest": row.latest_version,
        "versions": [{"version": v.version, "publishedAt": v.published_at} for v in listed],
        "versionCount": row.version_count,
        "versionsTruncated": row.version_count > len(listed),
        "createdAt": row.created_at,
        "updatedAt": row.updated_at,
    }


def versions(
    deps: Deps,
    namespace: str,
    name: str,
    *,
    cursor: str | None = None,
    limit: str | None = None,
) -> dict[str, Any]:
    """One page of versions in publish order; ``nextCursor`` is null on the last page."""
    row = _package(deps, namespace, name)
    size = _page_size(limit)
    page = deps.meta.versions_page(row.id, after=_decode_cursor(cursor), limit=size + 1)
    more = len(page) > size
    page = page[:size]
    return {
        "name": row.id,
        "versions": [
            {
                "version": v.version,
                "publishedAt": v.published_at,
                "integrity": v.integrity,
                "size": v.size,
            }
            for v in page
        ],
        "nextCursor": _encode_cursor(page[-1]) if more else None,
    }


def _page_size(value: str | None) -> int:
    """``limit``: absent means ``VERSIONS_PAGE``; else a decimal integer in 1..VERSIONS_PAGE_MAX."""
    if value is None:
        return VERSIONS_PAGE
    digits = value.lstrip("0") or "0"  # int() refuses thousands of digits: length first
    if (
        not (value.isascii() and value.isdigit())
        or len(digits) > len(str(VERSIONS_PAGE_MAX))
        or not 1 <= int(digits) <= VERSIONS_PAGE_MAX
    ):
        raise fields.bad_request(f"limit must be an integer from 1 to {VERSIONS_PAGE_MAX}")
    return int(digits)


def _encode_cursor(row: VersionEntry) -> str:
    """Opaque to clients: the last row's (publishedAt, version), base64url without padding."""
    text = json.dumps([row.published_at, row.version], separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str | None) -> PageKey | None:
    if cursor is None:
        return None
    invalid = fields.bad_request("Invalid cursor: pass back a nextCursor unchanged")
    if len(cursor) > MAX_CURSOR or not cursor.isascii():
        raise invalid
    try:
        # A client's text like any request body: a lone surrogate ("\\udfff") reached the
        # database's UTF-8 encoder and made the read an internal error.
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        key = untrusted_json.decode(raw, max_bytes=MAX_CURSOR)
    except ValueError as exc:
        raise invalid from exc
    if not (isinstance(key, list) and len(key) == 2 and all(isinstance(k, str) for k in key)):
        raise invalid
    return key[0], key[1]


def _filename(package: Package, row: Version) -> str:
    legacy = row.artifact_key.endswith(".bundle.json")
    suffix = "splice.json" if legacy else "tar.gz"
    return f"{package.namespace}-{package.name}-{row.version}.{suffix}"


def version(deps: Deps, namespace: str, name: str, number: str) -> dict[str, Any]:
    """The version's metadata with its manifest, parsed whole (``version_document`` answers)."""
    package_row, row = _version(deps, namespace, name, number)
    signatures = version_signatures(deps, package_row.id, row.version)
    return _version_document(package_row, row, signatures, json_text.parse)


def version_document(deps: Deps, namespace: str, name: str, number: str) -> Keyed:
    """``version`` to be written out, by its key: the version's row but its manifest, which the
    store never changes (migrations/0002_immutability.sql), and its signatures with their
    keys' revocations; of the package row, only its names.

    The answer is only written (``json_text.dumps``), so a manifest deeper than the C decoder
    reads stays the text publish stored (``json_text.parse_shallow``): parsing a million-level
    ``default`` and writing it again took about 5 s of the server's CPU per anonymous read.
    """
    package_row, row = _version(deps, namespace, name, number)
    signatures = version_signatures(deps, package_row.id, row.version)
    names = (package_row.id, package_row.namespace, package_row.name)
    key = ("version", names, replace(row, manifest=""), json.dumps(signatures))
    return Keyed(
        key,
        lambda: _version_document(package_row, row, signatures, json_text.parse_shallow),
        cost=len(row.manifest),
    )


def _version_document(
    package_row: Package,
    row: Version,
    signatures: list[dict[str, Any]],
    read_manifest: Callable[[str], Any],
) -> dict[str, Any]:
    return {
        "name": package_row.id,
        "version": row.version,
        "manifest": read_manifest(row.manifest),
        "integrity": row.integrity,
        "size": row.size,
        "publishedAt": row.published_at,
        "publishedBy": row.published_by,
        "download": download_path(package_row.namespace, package_row.name, row.version),
        "artifact": {
            "filename": _filename(package_row, row),
            "backend": row.artifact_backend,
            "url": row.artifact_url,
        },
        "provenance": _provenance(package_row, row),
        "signatures": signatures,
    }


def provenance(deps: Deps, namespace: str, name: str, number: str) -> dict[str, Any]:
    package_row, row = _version(deps, namespace, name, number)
    return {
        "name": package_row.id,
        "version": row.version,
        "provenance": _provenance(package_row, row),
        "location": {"backend": row.artifact_backend, "url": row.artifact_url},
    }


def _provenance(package: Package, row: Version) -> dict[str, Any]:
    """The recorded record, or one derived from the row for versions that predate recording."""
    if row.provenance is not None:
        recorded: dict[str, Any] = json.loads(row.provenance)
        return recorded
    legacy = row.artifact_key.endswith(".bundle.json")
    return {
        "schemaVersion": 1,
        "recorded": False,
        "registryApiVersion": None,
        "package": package.id,
        "version": row.version,
        "namespace": package.namespace,
        "publisher": {"user": row.published_by, "via": "unknown"},
        "publishedAt": row.published_at,
        "artifact": {
            "integrity": row.integrity,
            "size": row.size,
            "format": "json-bundle" if legacy else "tar.gz",
            "filename": _filename(package, row),
        },
        "manifestSha256": None,
    }


def download(deps: Deps, namespace: str, name: str, number: str) -> Artifact:
    package_row, row = _version(deps, namespace, name, number)
    return Artifact(data=read_artifact(deps, row), **_described(package_row, row))


def open_download(deps: Deps, namespace: str, name: str, number: str) -> OpenArtifact:
    package_row, row = _version(deps, namespace, name, number)
    return OpenArtifact(blob=artifact_reader(deps, row), **_described(package_row, row))


def _described(package_row: Package, row: Version) -> dict[str, str]:
    """What the headers of a download announce (docs/compatibility.md#registry-api)."""
    legacy = row.artifact_key.endswith(".bundle.json")
    return {
        "integrity": row.integrity,
        "filename": _filename(package_row, row),
        "content_type": BUNDLE_CONTENT_TYPE if legacy else TARGZ_CONTENT_TYPE,
    }
