"""(5) The signature check of the install policy and signer pinning (docs/compatibility.md#install-pipeline, docs/compatibility.md#signatures).

:class:`SignatureValid` replaces ``checks.SignatureUnchecked`` in the policy: it verifies the
signatures the registry lists for the version (``signatures`` of the version metadata) over
the integrity the sha256 check has already proved. Revoked keys are ignored; any other
signature that does not verify fails closed (``SIGNATURE_INVALID``); unsigned is ``Skipped``
("unsigned: …") unless the candidate requires a signature (``SIGNATURE_REQUIRED``). After a
passing check, ``signed_by`` holds the verified key id that goes into ``splice.lock``.

:func:`first_signer` decides whether a signer the lock does not pin yet may become the pin: a
key of the namespace's ``trustedSigners`` in ``splice.json`` when the project lists any (the
registry's word does not count then), else a key the registry has registered, unrevoked, for
the namespace (docs/signing.md#trusted-signers). :func:`trusted_only` applies
``trustedSigners`` to every signer, the lock's pin included: the signature checks ask it on
every install and verify.

:func:`official_signer` is the rule for the ``@splice`` namespace, from any registry: a valid
signature by the official key shipped in the wheel, or ``OFFICIAL_SIGNATURE_REQUIRED``, with
or without a signature requirement (docs/signing.md#the-official-key).

:func:`signer_pinning` is step (5) of the install: once a lock entry records ``signedBy``,
an update must be signed by that same key unless the user allows the change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from splice_build.errors import ErrorCode, InstallError, SpecError
from splice_build.install.checks import Skipped

if TYPE_CHECKING:
    from splice_build.install.checks import Candidate


class SignatureValid:
    """(5) publisher signatures, verified; ``signed_by`` is set when one is accepted.

    An ``@splice`` package passes only with the shipped official key (:func:`official_signer`),
    which is then the signer, whatever else signed it.

    ``trusted_signer`` is the key pinned by the lock (if any): when it is among the valid
    signers it is the one reported, so a publisher who adds a second key keeps its pin.
    ``trusted`` is the namespace's ``trustedSigners`` of splice.json: when it lists any key, a
    signer it does not list is refused (``SIGNER_UNTRUSTED``), whatever the lock pins.
    """

    id = "signature"

    def __init__(
        self,
        signatures: Sequence[Mapping[str, Any]],
        trusted_signer: str | None = None,
        trusted: Sequence[str] = (),
    ) -> None:
        self.signatures = tuple(signatures)
        self.trusted_signer = trusted_signer
        self.trusted = tuple(trusted)
        self.signed_by: str | None = None
        self.valid: tuple[str, ...] = ()
        self.revoked: tuple[str, ...] = ()

    def check(self, candidate: Candidate) -> str:
        from splice_build.spec.signing import check_signatures

        self.signed_by = None
        self.valid = ()
        self.revoked = ()
        expected = candidate.expected
        subject = f"{expected.package_id}@{expected.version}"
        try:
            outcome = check_signatures(
                self.signatures,
                package_id=expected.package_id,
                version=expected.version,
                integrity=expected.integrity,
                preferred=self.trusted_signer,
            )
        except SpecError as exc:
            raise InstallError(
                ErrorCode.SIGNATURE_INVALID,
                f"Publisher signature of {subject} is invalid",
                details=exc.details,
                hint="Do not install this version; report it to the publisher and the registry.",
            ) from exc
        self.revoked = outcome.ignored_revoked
        self.valid = outcome.valid
        official = official_signer(expected.package_id, outcome.valid, subject)
        if official is not None:
            self.signed_by = official
            return f"verified: signed by {official} (the official @splice key)"
        if outcome.signed_by is None:
            if expected.require_signed:
                raise InstallError(
                    ErrorCode.SIGNATURE_REQUIRED,
                    f"{subject} has no verified publisher signature and a signature is required",
                    details=[outcome.describe()],
                )
            raise Skipped(outcome.describe())
        self.signed_by = outcome.signed_by
        if self.trusted:
            self.signed_by = trusted_only(outcome.valid, outcome.signed_by, self.trusted, subject)
            return f"verified: signed by {self.signed_by} (trusted in splice.json)"
        return outcome.describe()


def trusted_only(valid: Sequence[str], preferred: str, trusted: Sequence[str], subject: str) -> str:
    """The signer among ``valid`` that splice.json ``trustedSigners`` lists (``preferred`` when
    it is one); raises InstallError(SIGNER_UNTRUSTED) when none is. Not even the lock's pin
    outranks the list: a lock edited to pin another key must not make it trusted."""
    signer, _why = first_signer(
        valid, preferred, trusted=trusted, registered=(), require_signed=True, subject=subject
    )
    assert signer is not None  # require_signed: first_signer raises instead
    return signer


def signer_pinning(
    previous_signed_by: str | None, new_signed_by: str | None, allow_change: bool
) -> None:
    """Trust on first use: a pinned signer may not change or disappear silently.

    Raises InstallError(SIGNER_CHANGED) when the lock pinned ``previous_signed_by`` and the
    new version is signed by another key, or unsigned, and ``allow_change`` is False.
    """
    if previous_signed_by is None or previous_signed_by == new_signed_by or allow_change:
        return
    found = f"signed by {new_signed_by}" if new_signed_by else "unsigned"
    raise InstallError(
        ErrorCode.SIGNER_CHANGED,
        f"The publisher signature changed: splice.lock pins {previous_signed_by}, "
        f"the new version is {found}",
        details=[f"pinned: {previous_signed_by}", f"found: {new_signed_by or 'no signature'}"],
        hint=_UNSIGNED_HINT if new_signed_by is None else _ROTATED_HINT,
    )


# A key rotation explains another signer, not a version with none: that one the publisher
# did not sign (or the registry dropped its signature), which accepting would unpin. The
# CLI's flag: the SDK names its argument beside it (sdk_hints.py).
_ALLOW = "--allow-signer-change"
_ROTATED_HINT = f"If the publisher rotated its key on purpose, re-run with {_ALLOW}."
_UNSIGNED_HINT = (
    f"Ask the publisher to sign it (`splice sign`); {_ALLOW} installs it unsigned and drops "
    "the pin."
)


def first_signer(
    valid: Sequence[str],
    preferred: str,
    *,
    trusted: Sequence[str],
    registered: Sequence[str],
    require_signed: bool,
    subject: str,
) -> tuple[str | None, str | None]:
    """``(signer to pin, None)``, or ``(None, why not)`` when no valid signer is trusted.

    Raises InstallError(SIGNER_UNTRUSTED) instead of answering ``None`` when a signature is
    required: an untrusted signature vouches for nothing.
    """
    namespace = subject[1:].split("/", 1)[0]
    allowed, source = (
        (trusted, "splice.json trustedSigners")
        if trusted
        else (registered, f"the keys registered for @{namespace}")
    )
    accepted = [key for key in valid if key in allowed]
    if accepted:
        return (preferred if preferred in accepted else accepted[0]), None
    why = f"{', '.join(valid) or preferred} is not among {source}"
    if require_signed:
        raise InstallError(
            ErrorCode.SIGNER_UNTRUSTED,
            f"{subject} is signed, but not by a key this project trusts: {why}",
            details=[f"signed by: {key}" for key in valid] + [f"trusted: {k}" for k in allowed],
            hint=(
                f"If you know the key belongs to @{namespace}, trust it out of band: "
                f"`splice keys trust @{namespace} <keyId|public-key-file>`."
            ),
        )
    return None, why


def kept_signer(
    package_id: str,
    version: str,
    signer: str | None,
    *,
    require_signed: bool,
    trusted: Sequence[str],
) -> None:
    """This run's signature policy for a kept package (installed before and intact, so not
    verified again): the signer its install recorded must meet it as a fresh install would.
    Raises InstallError(SIGNATURE_REQUIRED) for an unsigned one under a requirement, and
    (SIGNER_UNTRUSTED) for a signer ``trusted`` does not list."""
    subject = f"{package_id}@{version}"
    if signer is None:
        if require_signed:
            raise InstallError(
                ErrorCode.SIGNATURE_REQUIRED,
                f"{subject} is installed without a verified publisher signature and a "
                "signature is required",
                details=["splice.lock records no signer"],
                hint=f"Install a signed version (`splice add {package_id}@<version>`) or "
                f"remove it (`splice remove {package_id}`).",
            )
        return
    if trusted:
        trusted_only((signer,), signer, trusted, subject)


def official_signer(package_id: str, valid: Sequence[str], subject: str) -> str | None:
    """The shipped official key id when ``package_id`` is in ``@splice`` and it signed;
    ``None`` for any other namespace. Raises InstallError(OFFICIAL_SIGNATURE_REQUIRED) for an
    ``@splice`` package that no valid signature by the shipped key covers: no registry, not
    even the embedded one, can vouch for the official namespace with another key."""
    from splice_build.spec.official_key import is_official, official_key

    if not is_official(package_id):
        return None
    key = official_key()
    if key.key_id in valid:
        return key.key_id
    found = ", ".join(valid) if valid else "no valid signature"
    raise InstallError(
        ErrorCode.OFFICIAL_SIGNATURE_REQUIRED,
        f"{subject} is in the official @{key.namespace} namespace but is not signed by the "
        f"official key {key.key_id}",
        details=[f"official key: {key.key_id}", f"found: {found}"],
        hint=f"Only the Splice maintainers publish @{key.namespace}/*; this registry's copy "
        "is not theirs. Do not install it.",
    )
