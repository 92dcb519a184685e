"""The ``splice verify`` report (interfaces.md 5.9): every check of an artifact, plus ``installed``.

The registry's bytes are run through the same policy as an install (sha256, size, package,
metadata, signature), then ``provenance`` and ``source`` (reported as skipped: this build keeps
no provenance check), then ``installed`` when the project has that version: the lock's integrity
equals the registry's, the installed files are byte-identical to the artifact (files digest
from bytes), and no permission is ungranted.
"""

from __future__ import annotations

from typing import Any

from splice_build.errors import SpliceError
from splice_build.install.checks import NOT_RUN, Candidate, CheckResult, Expected, artifact_policy
from splice_build.install.installed import check_installed
from splice_build.install.session import RegistrySession
from splice_build.project.layout import ProjectLayout
from splice_build.project.lockfile import load_lockfile
from splice_build.spec.digests import files_digest


def _installed_check(layout: ProjectLayout, candidate: Candidate, package_id: str) -> CheckResult:
    entry = load_lockfile(layout.root).get(package_id)
    if entry is None or entry.version != candidate.expected.version:
        return CheckResult("installed", "skipped", "this version is not installed in the project")
    if entry.integrity != candidate.expected.integrity:
        return CheckResult(
            "installed",
            "failed",
            f"splice.lock has {entry.integrity}, registry {candidate.expected.integrity}",
        )
    try:
        installed = check_installed(layout, package_id, entry)
    except SpliceError as exc:
        return CheckResult(
            "installed",
            "failed",
            f"{exc.code}: {exc.message}; {'; '.join(exc.details)}".rstrip("; "),
        )
    if (
        candidate.files is not None
        and entry.files is not None
        and entry.files != files_digest(candidate.files)
    ):
        return CheckResult("installed", "failed", "installed files differ from the artifact")
    return CheckResult(
        "installed",
        "passed",
        f"{installed.directory.relative_to(layout.root).as_posix()} matches the artifact",
    )


def verification_report(
    session: RegistrySession, layout: ProjectLayout | None, package_id: str, version: str
) -> dict[str, Any]:
    """Download ``package_id@version`` and report every check; raises only for registry errors."""
    client = session.client
    meta = client.version(package_id, version)
    data = client.download(package_id, version)
    manifest = meta.get("manifest")
    expected = Expected(
        package_id,
        version,
        str(meta.get("integrity")),
        meta.get("size") if isinstance(meta.get("size"), int) else None,
        manifest if isinstance(manifest, dict) else None,
    )
    candidate = Candidate(data, expected)
    outcome = artifact_policy().report(candidate)
    results = list(outcome.results)
    results.append(CheckResult("provenance", "skipped", "provenance is not checked by this client"))
    results.append(
        CheckResult("source", "skipped", "the artifact is served by the registry itself")
    )
    if layout is not None:
        if outcome.verified:
            results.append(_installed_check(layout, candidate, package_id))
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
