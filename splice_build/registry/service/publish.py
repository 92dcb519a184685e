"""Publishing a version (docs/compatibility.md#publish-flow): validate, authorize, store the artifact, then
record everything in one metadata transaction, which authorizes again (``db.interface``).

Order matters for crash safety: the artifact is written first (content-addressed, atomic,
idempotent for identical bytes), the metadata commit second. A crash between the two leaves
an orphan artifact and no version row: nothing is visible, and retrying the same publish
finds the identical bytes already stored and completes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from splice_build.errors import ErrorCode, RegistryError, SpecError
from splice_build.records import dataclass
from splice_build.registry.api import API_VERSION, MAX_PUBLISH_BODY
from splice_build.registry.blobs.interface import artifact_key
from splice_build.registry.db.interface import NewVersion, Publisher, Version
from splice_build.registry.service import ratelimit
from splice_build.registry.service.auth import Caller, Principal, authenticate
from splice_build.registry.service.confusables import (
    refuse_confusable_namespace,
    refuse_confusable_package,
)
from splice_build.registry.service.deps import Deps
from splice_build.registry.service.namespaces import authorize_publish
from splice_build.spec import json_text
from splice_build.spec.js_text import well_formed
from splice_build.spec.limits import MAX_FILE_BYTES
from splice_build.spec.names import download_path


@dataclass(frozen=True)
class Decoded:
    manifest: Any  # spec.manifest.Manifest
    normalized: dict[str, Any]
    archive_format: str  # "tar.gz" | "json-bundle"


def decode(body: bytes) -> Decoded:
    """Steps 2-4: a valid package without build metadata, prerelease numbers beyond 2**53 or
    dependencies, else 422."""
    from splice_build.spec import semver
    from splice_build.spec.archive import archive_format, read_archive
    from splice_build.spec.package import validate_package_files

    if len(body) > MAX_PUBLISH_BODY:
        raise RegistryError(
            ErrorCode.PAYLOAD_TOO_LARGE, f"Artifact exceeds {MAX_PUBLISH_BODY} bytes"
        )
    try:
        fmt = archive_format(body)
        manifest = validate_package_files(read_archive(body))
    except SpecError as exc:
        raise RegistryError(
            ErrorCode.INVALID_PACKAGE, exc.message, details=exc.details, hint=exc.hint
        ) from exc
    version = str(manifest.version)
    if "+" in version:
        raise RegistryError(
            ErrorCode.INVALID_PACKAGE,
            "Build metadata cannot be published",
            details=[f"version: {version}"],
        )
    unsafe = semver.unsafe_identifiers(semver.Version.parse(version))
    if unsafe:  # it would compare equal to another version: a range could not tell them apart
        raise RegistryError(
            ErrorCode.INVALID_PACKAGE,
            "Numeric prerelease identifiers above 9007199254740991 cannot be published",
            details=[f"version: {version}", *(f"identifier: {text}" for text in unsafe)],
        )
    dependencies = dict(manifest.dependencies or {})
    if dependencies:
        raise RegistryError(
            ErrorCode.DEPENDENCIES_UNSUPPORTED,
            "This registry does not accept packages with dependencies",
            details=[f"{dep}@{rng}" for dep, rng in sorted(dependencies.items())],
        )
    return Decoded(manifest, manifest.to_json(shared=True), fmt)  # only written out


def publish(deps: Deps, caller: Caller, body: bytes) -> dict[str, Any]:
    """POST /publish → ``{name, version, integrity, size, download}`` (201)."""
    return publish_as(deps, authenticate(deps, caller), body)  # (1)


def publish_as(deps: Deps, principal: Principal, body: bytes) -> dict[str, Any]:
    """``publish`` for a caller already authenticated: the HTTP route authenticates before
    it reads the body, so an unknown client cannot make the server hold a publish's bytes."""
    from splice_build.spec.digests import integrity_of, sha256_hex

    ratelimit.count_publish(deps, principal.user.id)
    decoded = decode(body)  # (2)-(4)
    manifest = decoded.manifest
    namespace, name, version = manifest.namespace, manifest.name, str(manifest.version)
    package_id = f"@{namespace}/{name}"
    right = authorize_publish(deps, principal, namespace)  # (5)
    if right.claim:  # a namespace is created: it may not imitate a reserved one
        refuse_confusable_namespace(deps, namespace, principal.user)
    if deps.meta.package(package_id) is None:  # so is a package name
        refuse_confusable_package(deps, namespace, name)
    sha = sha256_hex(body)  # (6)
    integrity = integrity_of(body)
    existing = deps.meta.version(package_id, version)  # (7)
    if existing is not None:
        raise _exists(package_id, version, existing.integrity, integrity)
    # One walk writes both: the canonical form (manifestSha256) and the stored text
    canonical, stored = json_text.canonical_and_stringified(decoded.normalized)
    _refuse_grown(stored)
    legacy = decoded.archive_format != "tar.gz"
    key = artifact_key(namespace, name, version, sha, legacy=legacy)
    deps.blobs.put(key, body)  # (8) artifact first
    now = deps.now_iso()
    canonical_bytes = canonical.encode("utf-8")
    filename = f"{namespace}-{name}-{version}." + ("splice.json" if legacy else "tar.gz")
    provenance = {
        "schemaVersion": 1,
        "recorded": True,
        "registryApiVersion": API_VERSION,
        "package": package_id,
        "version": version,
        "namespace": namespace,
        "publisher": {"user": principal.user.name, "via": principal.via},
        "publishedAt": now,
        "artifact": {
            "integrity": integrity,
            "size": len(body),
            "format": decoded.archive_format,
            "filename": filename,
        },
        "manifestSha256": sha256_hex(canonical_bytes),
    }
    row = Version(
        package_id=package_id,
        version=version,
        manifest=stored,
        integrity=integrity,
        size=len(body),
        artifact_key=key,
        published_by=principal.user.name,
        published_at=now,
        artifact_backend=deps.blobs.backend,
        artifact_url=deps.blobs.url(key),
        provenance=json_text.stringify(provenance),
    )
    new = NewVersion(
        version=row,
        namespace=namespace,
        name=name,
        description=well_formed(str(manifest.description)),  # a UTF-8 column
        kind="agent" if getattr(manifest, "agent", None) else "skill",
        publisher=Publisher(
            principal.user.id,
            principal.token.id if principal.token is not None else None,
            claim=right.claim,
        ),
    )
    try:
        # (9), which checks (5) again: a token revoked or a maintainer removed since is refused
        deps.meta.insert_version(new, latest_of=_latest, now=now)
    except RegistryError as exc:
        if exc.code is ErrorCode.VERSION_EXISTS:
            won = deps.meta.version(package_id, version)
            if won is not None:
                raise _exists(package_id, version, won.integrity, integrity) from exc
        raise
    return {
        "name": package_id,
        "version": version,
        "integrity": integrity,
        "size": len(body),
        "download": download_path(namespace, name, version),
    }


# The normalized manifest adds what a file may leave out (``runtime`` and the empty lists of
# ``permissions``: 92 bytes, spec/manifest.py): a manifest.json at the file limit stays
# publishable. Anything beyond is numbers written out longer.
MAX_STORED_MANIFEST_BYTES = MAX_FILE_BYTES + 1024


def _refuse_grown(stored: str) -> None:
    """The stored manifest is held to the file's own bound (``MAX_FILE_BYTES``, with room for
    the normalized form's defaults): its text is written as ``JSON.stringify`` writes it, so
    ``1e20`` (4 characters) is stored as its 21 digits, and a 2 MiB file of them was a 9.2 MB
    manifest whose version answer (16 MB) no server keeps (http/answer_cache.py), written
    again for every read at 0.6 s of CPU."""
    size = len(stored.encode("utf-8", "surrogatepass"))
    if size > MAX_STORED_MANIFEST_BYTES:
        raise RegistryError(
            ErrorCode.INVALID_PACKAGE,
            "manifest.json written out as the registry stores it exceeds "
            f"{MAX_STORED_MANIFEST_BYTES} bytes",
            details=[f"stored: {size} bytes"],
            hint="Numbers are stored as JavaScript writes them (1e20 as its 21 digits): "
            "make manifest.json smaller.",
        )


def _latest(versions: Sequence[str]) -> str:
    from splice_build.spec.semver import latest_version

    best = latest_version(versions)
    if best is None:
        raise AssertionError(f"BUG: no valid version among {list(versions)}")
    return str(best)


def _exists(package_id: str, version: str, published: str, submitted: str) -> RegistryError:
    same = published == submitted
    message = (
        f"{package_id}@{version} is already published with identical bytes; versions are immutable"
        if same
        else f"{package_id}@{version} is already published; versions are immutable"
    )
    return RegistryError(
        ErrorCode.VERSION_EXISTS,
        message,
        details=[f"published: {published}", f"submitted: {submitted}"],
        hint="Bump the version in manifest.json and publish again.",
    )
