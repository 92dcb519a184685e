"""The ``splice verify`` report (docs/compatibility.md#verification-pipeline): every check of an artifact, plus ``installed``.

The registry's bytes are run through the same policy as an install (sha256, size, package,
metadata, signature), then ``provenance`` and ``source``, then, when the project locks that
version, ``pinned``: every pin of the lock entry still holds against what the registry shows
now (integrity and size, ``LOCK_MISMATCH``; the signer, ``SIGNER_CHANGED``; the permission
grant, ``PERMISSIONS_NOT_GRANTED``: the codes an install or update of the same answer fails
with), and ``installed``: the installed files are byte-identical to the artifact (files digest
from bytes) and no permission is ungranted. A project's ``requireSignatures`` and
``trustedSigners`` apply as in an install.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from splice_build.errors import ErrorCode, SpliceError
from splice_build.install.checks import NOT_RUN, Candidate, CheckResult, Expected, artifact_policy
from splice_build.install.installed import check_installed
from splice_build.install.session import RegistrySession
from splice_build.install.signature_check import SignatureValid
from splice_build.install.transaction import project_lock
from splice_build.project.layout import ProjectLayout
from splice_build.project.lockfile import LockEntry, load_lockfile
from splice_build.project.project_file import load_project_file
from splice_build.project.state_dir import check_state_dir
from splice_build.spec.digests import files_digest

if TYPE_CHECKING:
    from splice_build.install.installed import InstalledPackage


def _pinned_check(
    entry: LockEntry | None, candidate: Candidate, signature: SignatureValid, verified: bool
) -> CheckResult:
    """The lock's pins against the registry's current answer; the first broken pin fails."""
    expected = candidate.expected
    if entry is None or entry.version != expected.version:
        return CheckResult("pinned", "skipped", "this version is not in splice.lock")
    try:
        known = entry.known(expected.package_id)  # a pin the lock lacks is never "as pinned"
    except SpliceError as exc:
        return CheckResult("pinned", "failed", f"{exc.message} ({exc.hint})", exc.code)
    if entry.integrity != expected.integrity or (
        expected.size is not None and known.size != expected.size
    ):
        return CheckResult(
            "pinned",
            "failed",
            f"splice.lock pins {entry.integrity} ({entry.size} bytes), the registry now shows "
            f"{expected.integrity} ({expected.size} bytes)",
            ErrorCode.LOCK_MISMATCH,
        )
    if not verified:
        return CheckResult("pinned", "skipped", NOT_RUN)
    if entry.signed_by is not None and signature.signed_by != entry.signed_by:
        if signature.signed_by is not None:
            found = f"signed by {signature.signed_by}"
        elif entry.signed_by in signature.revoked:
            found = f"unsigned: the registry marks {entry.signed_by} revoked"
        else:
            found = "unsigned: the registry shows no signature by it"
        return CheckResult(
            "pinned",
            "failed",
            f"splice.lock pins signer {entry.signed_by}, the registry now shows {found}",
            ErrorCode.SIGNER_CHANGED,
        )
    if candidate.manifest is not None:
        from splice_build.install.consent import ungranted_lines

        beyond = ungranted_lines(candidate.manifest.permissions, known.permissions)
        if beyond:
            return CheckResult(
                "pinned",
                "failed",
                "the registry's version asks for permissions splice.lock does not grant: "
                + "; ".join(beyond),
                ErrorCode.PERMISSIONS_NOT_GRANTED,
            )
    signer = f", signer {entry.signed_by}" if entry.signed_by is not None else ""
    return CheckResult(
        "pinned", "passed", f"integrity, size{signer} and grant as pinned in splice.lock"
    )


def _installed_check(
    layout: ProjectLayout, candidate: Candidate, package_id: str, home: Path
) -> CheckResult:
    """The installed copy as ``splice run`` checks it (``home``: SPLICE_HOME, which no grant
    may reach), and byte-identical to the artifact. Like every reader of project state, it
    first finishes or undoes an install a crash cut short (which never changes
    ``splice.lock``, so the ``pinned`` check read the same entry); a link in ``.splice/`` or
    a journal it cannot use fails the check with its code."""
    try:
        check_state_dir(layout)
        if layout.tmp_dir.exists():
            with project_lock(layout):
                pass
    except SpliceError as exc:
        return _failed_installed(exc)
    entry = load_lockfile(layout.root).get(package_id)
    if entry is None or entry.version != candidate.expected.version:
        return CheckResult("installed", "skipped", "this version is not installed in the project")
    if entry.integrity != candidate.expected.integrity:
        return CheckResult(
            "installed",
            "failed",
            f"splice.lock has {entry.integrity}, registry {candidate.expected.integrity}",
            ErrorCode.LOCK_MISMATCH,
        )
    try:
        installed = check_installed(layout, package_id, entry, home=home)
        _require_consented(layout, installed, home)
    except SpliceError as exc:
        return _failed_installed(exc)
    if candidate.files is not None and entry.known(package_id).files != files_digest(
        candidate.files
    ):
        return CheckResult(
            "installed",
            "failed",
            "installed files differ from the artifact",
            ErrorCode.INSTALLED_PACKAGE_MODIFIED,
        )
    return CheckResult(
        "installed",
        "passed",
        f"{installed.directory.relative_to(layout.root).as_posix()} matches the artifact",
    )


def _require_consented(layout: ProjectLayout, installed: InstalledPackage, home: Path) -> None:
    """What this machine's consent asks before a tool of ``installed`` runs, as ``splice
    run`` asks it (install/consent.py ``require_consented``): the check passed a copy that
    ``run``, ``mcp`` and ``list`` refuse, such as one whose file grant a checkout's
    ``docs -> ~/.ssh`` takes out of the project unasked."""
    from splice_build.install.consent import require_consented
    from splice_build.install.consent_record import read_record

    require_consented(
        installed.id,
        installed.version,
        installed.manifest.permissions,
        layout.root,
        installed.id in load_project_file(layout.root).packages,
        read_record(home, layout.root),
    )


def _failed_installed(exc: SpliceError) -> CheckResult:
    text = f"{exc.code}: {exc.message}; {'; '.join(exc.details)}".rstrip("; ")
    return CheckResult(
        "installed", "failed", f"{text} ({exc.hint})" if exc.hint else text, exc.code
    )


def _provenance_check(meta: dict[str, Any], expected: Expected) -> CheckResult:
    """The registry's write-once provenance record must describe exactly these bytes (5.9)."""
    from splice_build.spec.canonical import canonical_json
    from splice_build.spec.digests import sha256_hex

    record = meta.get("provenance")
    if not isinstance(record, dict) or record.get("recorded") is not True:
        return CheckResult("provenance", "skipped", "no provenance recorded at publish")
    artifact = record.get("artifact") if isinstance(record.get("artifact"), dict) else {}
    wanted = {
        "package": expected.package_id,
        "version": expected.version,
        "integrity": expected.integrity,
        "size": expected.size,
    }
    found = {
        "package": record.get("package"),
        "version": record.get("version"),
        "integrity": artifact.get("integrity"),
        "size": artifact.get("size") if expected.size is not None else None,
    }
    if expected.manifest is not None:
        wanted["manifestSha256"] = sha256_hex(canonical_json(expected.manifest).encode())
        found["manifestSha256"] = record.get("manifestSha256")
    wrong = [
        f"{key}: {found[key]!r} != {wanted[key]!r}" for key in wanted if found[key] != wanted[key]
    ]
    if wrong:
        return CheckResult("provenance", "failed", "provenance differs: " + "; ".join(wrong))
    publisher = record.get("publisher") if isinstance(record.get("publisher"), dict) else {}
    return CheckResult(
        "provenance",
        "passed",
        f"recorded at publish by {publisher.get('user')} ({publisher.get('via')})",
    )


def _record_files_digest(session: RegistrySession, data: bytes, files: Mapping[str, bytes]) -> None:
    """What the verified artifact extracts to, recorded as an install records it
    (install/derived.py): a fact of these bytes, whoever served them."""
    from splice_build.install.cache import ArtifactCache
    from splice_build.spec.digests import integrity_of

    cache = ArtifactCache(session.home.artifacts_dir)
    cache.put_files_digest(integrity_of(data), files_digest(files))


def verification_report(
    session: RegistrySession, layout: ProjectLayout | None, package_id: str, version: str
) -> dict[str, Any]:
    """Download ``package_id@version`` and report every check; raises only for registry errors."""
    client = session.client
    entry = load_lockfile(layout.root).get(package_id) if layout is not None else None
    meta = client.version(package_id, version)
    data = client.download(package_id, version)
    manifest = meta.get("manifest")
    project = load_project_file(layout.root) if layout is not None else None
    expected = Expected(
        package_id,
        version,
        str(meta.get("integrity")),
        meta.get("size") if isinstance(meta.get("size"), int) else None,
        manifest if isinstance(manifest, dict) else None,
        project is not None and project.requires_signature(package_id),
    )
    candidate = Candidate(data, expected)
    signatures = meta.get("signatures")
    signature = SignatureValid(
        signatures if isinstance(signatures, list) else (),
        trusted_signer=entry.signed_by if entry is not None else None,
        trusted=project.trusted_for(package_id) if project is not None else (),
    )
    outcome = artifact_policy(signature).report(candidate)
    if outcome.verified and candidate.files is not None:
        _record_files_digest(session, data, candidate.files)
    results = list(outcome.results)
    results.append(
        _provenance_check(meta, expected)
        if outcome.verified
        else CheckResult("provenance", "skipped", NOT_RUN)
    )
    results.append(
        CheckResult("source", "skipped", "the artifact is served by the registry itself")
    )
    if layout is not None:
        results.append(_pinned_check(entry, candidate, signature, outcome.verified))
        if outcome.verified:
            results.append(_installed_check(layout, candidate, package_id, session.home.path))
        else:
            results.append(CheckResult("installed", "skipped", NOT_RUN))
    verified = all(r.status != "failed" for r in results)
    artifact = meta.get("artifact") if isinstance(meta.get("artifact"), dict) else {}
    return {
        "package": package_id,
        "version": version,
        "verified": verified,
        "publisher": (
            meta.get("publishedBy")
            if not isinstance(meta.get("provenance"), dict)
            else meta["provenance"].get("publisher")
        ),
        "publishedAt": meta.get("publishedAt"),
        "artifact": {
            "integrity": meta.get("integrity"),
            "size": meta.get("size"),
            "filename": artifact.get("filename"),
            "backend": artifact.get("backend"),
            "url": artifact.get("url"),
        },
        "provenance": meta.get("provenance"),
        "checks": [r.to_json() for r in results],
    }
