"""Artifact verification as small check objects (docs/compatibility.md#verification-pipeline, one small object per check).

Each check has an ``id`` and ``check(candidate) -> str``: it returns the message of a passed
check, raises :class:`Skipped` when it has nothing to compare, and raises a ``SpliceError``
when the bytes fail it. :class:`AllOf` runs checks in order and stops at the first failure
(later checks are reported as skipped, "not run: an earlier check failed"); an empty
``AllOf`` fails, so no policy can pass by containing nothing.

The order is the spec's: (1) sha256, (2) size, (3) package, (4) metadata, (5) signature.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from splice_build.errors import ErrorCode, InstallError, SpliceError
from splice_build.records import dataclass, field

if TYPE_CHECKING:
    from splice_build.spec.manifest import Manifest

Status = Literal["passed", "failed", "skipped"]
NOT_RUN = "not run: an earlier check failed"


class Skipped(Exception):
    """A check had nothing to compare (for example no registry manifest)."""


@dataclass(frozen=True)
class Expected:
    """What the bytes must be: from registry metadata, or from the lock when offline."""

    package_id: str
    version: str
    integrity: str
    size: int | None = None
    manifest: Mapping[str, Any] | None = None
    require_signed: bool = False


@dataclass
class Candidate:
    """The artifact under verification; the package check fills ``files`` and ``manifest``."""

    data: bytes
    expected: Expected
    files: dict[str, bytes] | None = None
    manifest: Manifest | None = None


@dataclass(frozen=True)
class CheckResult:
    """One line of a verification report; a failed check carries the error code the same
    failure has in install and update (``code``)."""

    id: str
    status: Status
    message: str
    code: ErrorCode | None = None

    def to_json(self) -> dict[str, str]:
        out = {"id": self.id, "status": self.status, "message": self.message}
        if self.code is not None:
            out["code"] = str(self.code)
        return out


class Check(Protocol):
    id: str

    def check(self, candidate: Candidate) -> str: ...


class SignatureCheck(Check, Protocol):
    """The signature step also tells which key it accepted (None: unsigned)."""

    signed_by: str | None


class Sha256Matches:
    """(1) the expected integrity is well formed and the SHA-256 of the bytes equals it."""

    id = "sha256"

    def check(self, candidate: Candidate) -> str:
        from splice_build.spec.digests import integrity_of, is_integrity

        expected = candidate.expected.integrity
        if not is_integrity(expected):
            raise InstallError(ErrorCode.INTEGRITY_MISMATCH, f"malformed integrity {expected!r}")
        actual = integrity_of(candidate.data)
        if actual != expected:
            raise InstallError(
                ErrorCode.INTEGRITY_MISMATCH, f"sha256 mismatch: expected {expected}, got {actual}"
            )
        return f"sha256 matches {expected}"


class SizeMatches:
    """(2) the byte length equals the expected size (skipped when none is known)."""

    id = "size"

    def check(self, candidate: Candidate) -> str:
        expected = candidate.expected.size
        if expected is None:
            raise Skipped("no size recorded")
        if len(candidate.data) != expected:
            raise InstallError(
                ErrorCode.INTEGRITY_MISMATCH,
                f"size mismatch: expected {expected} bytes, got {len(candidate.data)}",
            )
        return f"{expected} bytes"


class PackageIsValid:
    """(3) the archive decodes safely, its files form a valid package of the expected id/version."""

    id = "package"

    def check(self, candidate: Candidate) -> str:
        from splice_build.spec.archive import read_archive
        from splice_build.spec.package import validate_package_files

        files = read_archive(candidate.data)
        manifest = validate_package_files(files)
        expected = candidate.expected
        found = f"{manifest.id}@{manifest.version}"
        if manifest.id != expected.package_id or manifest.version != expected.version:
            raise InstallError(
                ErrorCode.INVALID_PACKAGE,
                f"artifact contains {found}, expected {expected.package_id}@{expected.version}",
            )
        candidate.files = files
        candidate.manifest = manifest
        return f"{len(files)} files, {found}"


class ManifestMatchesMetadata:
    """(4) the registry's manifest, validated, equals the artifact's in canonical JSON."""

    id = "metadata"

    def check(self, candidate: Candidate) -> str:
        from splice_build.spec.canonical import canonical_json
        from splice_build.spec.manifest import Manifest

        recorded = candidate.expected.manifest
        if recorded is None:
            raise Skipped("the registry gave no manifest")
        if candidate.manifest is None:
            raise AssertionError("BUG: metadata check before the package check")
        try:
            registry_manifest = Manifest.from_dict(recorded)
        except SpliceError as exc:
            raise InstallError(
                ErrorCode.INVALID_PACKAGE, f"registry manifest is invalid: {exc.message}"
            ) from exc
        # shared: the schemas are written out, not copied first (canonical_json only reads)
        if canonical_json(registry_manifest.to_json(shared=True)) != canonical_json(
            candidate.manifest.to_json(shared=True)
        ):
            raise InstallError(
                ErrorCode.INVALID_PACKAGE, "artifact manifest differs from the registry metadata"
            )
        return "manifest equals registry metadata"


class SignaturePinnedByLock:
    """(5) offline: the bytes are the lock's (sha256 and size passed), whose signer was checked
    when the lock entry was written; nothing newer can be asked of a registry that is away.
    ``trusted`` (splice.json ``trustedSigners`` of the namespace) must list that signer."""

    id = "signature"

    def __init__(self, pinned_signed_by: str | None, trusted: Sequence[str] = ()) -> None:
        self.signed_by = pinned_signed_by
        self.trusted = tuple(trusted)

    def check(self, candidate: Candidate) -> str:
        subject = f"{candidate.expected.package_id}@{candidate.expected.version}"
        if self.signed_by is not None:
            if self.trusted:  # splice.json trustedSigners bind the lock's pin as well
                from splice_build.install.signature_check import trusted_only

                trusted_only((self.signed_by,), self.signed_by, self.trusted, subject)
            return f"signed by {self.signed_by} (pinned in splice.lock; registry not asked)"
        if candidate.expected.require_signed:
            raise InstallError(
                ErrorCode.SIGNATURE_REQUIRED,
                f"{subject} has no recorded publisher signature and a signature is required",
            )
        raise Skipped("unsigned: splice.lock records no signer")


_CODES_KEPT = {
    ErrorCode.INTEGRITY_MISMATCH,
    ErrorCode.SIGNATURE_INVALID,
    ErrorCode.SIGNATURE_REQUIRED,
    ErrorCode.OFFICIAL_SIGNATURE_REQUIRED,
    ErrorCode.SIGNER_UNTRUSTED,
}


@dataclass
class Verification:
    """The outcome of :meth:`AllOf.report`: one result per check, the first failure kept."""

    results: list[CheckResult] = field(default_factory=list)
    failure: SpliceError | None = None

    @property
    def verified(self) -> bool:
        return self.failure is None

    def raise_for_failure(self) -> None:
        """Raise the first failure as the install error the spec names (2.5 step 4)."""
        if self.failure is None:
            return
        lines = [f"{r.id}: {r.message}" for r in self.results if r.status != "skipped"]
        code = self.failure.code if self.failure.code in _CODES_KEPT else ErrorCode.INVALID_PACKAGE
        message = {
            ErrorCode.INTEGRITY_MISMATCH: "Artifact integrity check failed",
            ErrorCode.INVALID_PACKAGE: "Artifact failed verification",
        }.get(code, self.failure.message)
        hint = self.failure.hint if code is self.failure.code else None
        raise InstallError(code, message, details=lines, hint=hint) from self.failure


class AllOf:
    """Every check, in order; an empty policy fails (it would otherwise pass anything)."""

    def __init__(self, checks: Sequence[Check]) -> None:
        self.checks = tuple(checks)

    def report(self, candidate: Candidate) -> Verification:
        outcome = Verification()
        if not self.checks:
            outcome.failure = InstallError(ErrorCode.INVALID_PACKAGE, "no verification checks")
            outcome.results.append(CheckResult("policy", "failed", outcome.failure.message))
            return outcome
        for check in self.checks:
            if outcome.failure is not None:
                outcome.results.append(CheckResult(check.id, "skipped", NOT_RUN))
                continue
            try:
                message = check.check(candidate)
            except Skipped as skip:
                outcome.results.append(CheckResult(check.id, "skipped", str(skip)))
            except SpliceError as exc:
                outcome.failure = exc
                text = (
                    exc.message if not exc.details else f"{exc.message}: {'; '.join(exc.details)}"
                )
                outcome.results.append(CheckResult(check.id, "failed", text, exc.code))
            else:
                outcome.results.append(CheckResult(check.id, "passed", message))
        return outcome

    def check(self, candidate: Candidate) -> None:
        """Raise the first failure (see :meth:`Verification.raise_for_failure`)."""
        self.report(candidate).raise_for_failure()


def artifact_policy(signature: SignatureCheck) -> AllOf:
    """The install policy of docs/compatibility.md#verification-pipeline, in the spec's order."""
    return AllOf(
        [
            Sha256Matches(),
            SizeMatches(),
            PackageIsValid(),
            ManifestMatchesMetadata(),
            signature,
        ]
    )


@dataclass(frozen=True)
class VerifiedArtifact:
    """Bytes that passed :func:`artifact_policy`, with the package they decode to."""

    data: bytes
    files: Mapping[str, bytes]
    manifest: Manifest
    files_digest: str
    signed_by: str | None


def verify_artifact(data: bytes, expected: Expected, signature: SignatureCheck) -> VerifiedArtifact:
    """Run the install policy; returns the decoded package or raises (2.5 step 4).

    Raises ``InstallError`` with ``INTEGRITY_MISMATCH`` (sha256, size), ``SIGNATURE_REQUIRED``,
    or ``INVALID_PACKAGE`` (archive, package, metadata), details naming every check that ran.
    """
    from splice_build.spec.digests import files_digest

    candidate = Candidate(data, expected)
    artifact_policy(signature).check(candidate)
    if candidate.files is None or candidate.manifest is None:
        raise AssertionError("BUG: verified artifact without package contents")
    return VerifiedArtifact(
        data,
        candidate.files,
        candidate.manifest,
        files_digest(candidate.files),
        signature.signed_by,
    )
