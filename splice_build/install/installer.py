"""Installing one version of one package (docs/compatibility.md#install-pipeline steps 2–8).

(2) metadata — a locked version must match the lock's integrity and size (``LOCK_MISMATCH``);
(3) artifact — from the verified cache or downloaded; a locked install accepts only the lock's
bytes; offline, locked versions come from the cache; (4) verification (``checks``); (5) the
signer must be trusted — when splice.json ``trustedSigners`` lists the namespace, every signer,
the lock's pin included, must be one of them; otherwise a new signer must be registered for
the namespace — then signer pinning; (6) cache put; (7) consent; (8) staged extraction and the
journaled swap that writes ``splice.lock`` and ``splice.json`` (``transaction``).

The caller holds the project lock. Progress is reported as ``(step, message)`` pairs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from splice_build.errors import ErrorCode, InstallError, RegistryError, SpliceError
from splice_build.install import transaction
from splice_build.install.cache import ArtifactCache
from splice_build.install.checks import (
    Expected,
    SignatureCheck,
    SignaturePinnedByLock,
    VerifiedArtifact,
    verify_artifact,
)
from splice_build.install.consent import Accept, require_consent
from splice_build.install.consent_record import read_record, write_record
from splice_build.install.install_report import (
    InstallReport,
    kept_report,
    report_for,
    signature_text,
    stored_signer,
)
from splice_build.install.session import RegistrySession, RegistrySessions, is_offline
from splice_build.install.signature_check import (
    SignatureValid,
    first_signer,
    kept_signer,
    official_signer,
    signer_pinning,
)
from splice_build.project.atomic import write_tree
from splice_build.project.layout import ProjectLayout
from splice_build.project.lockfile import LockEntry, Unknown, load_lockfile
from splice_build.project.project_file import load_project_file
from splice_build.project.registry_url import EMBEDDED_REGISTRY
from splice_build.records import dataclass
from splice_build.spec.digests import integrity_of, is_integrity
from splice_build.spec.tree_digest import tree_digest

if TYPE_CHECKING:
    from splice_build.install.consent_record import ConsentRecord
    from splice_build.project.project_file import ProjectFile
    from splice_build.spec.manifest import Manifest
    from splice_build.spec.permissions import Permissions

Progress = Callable[[str, str], None]


@dataclass(frozen=True)
class InstallOptions:
    """The caller's yes-or-no options, checked when made: a truthy ``"no"`` must never allow
    a signer change (nor pass for consent), so each is a ``bool`` (consent: or a callback)."""

    accept_permissions: Accept = False
    require_signed: bool = False
    allow_signer_change: bool = False

    def __post_init__(self) -> None:
        from splice_build.errors import UsageError

        if not (isinstance(self.accept_permissions, bool) or callable(self.accept_permissions)):
            raise UsageError("accept_permissions must be True, False or a callback")
        for name in ("require_signed", "allow_signer_change"):
            if not isinstance(getattr(self, name), bool):
                raise UsageError(f"{name} must be True or False")


@dataclass(frozen=True)
class Target:
    """What to install: an exact version, the range to record, and the lock entry to honour.

    ``pinned`` is the lock entry when the version is the locked one: then only its bytes
    are accepted. ``range_text`` None leaves ``splice.json`` as it is. ``registry``: the
    registry URL to fetch it from when it is not the run's own (``update``, ``install`` or
    ``sync`` of a project whose lock pins packages from several registries); None: the
    installer's session. ``offline``: the registry could not be asked, so the version is the
    lock's (``add``'s fallback, install/resolve.py ``locked_offline``); its report says so
    whether the copy is kept or restored from the verified cache.
    """

    package_id: str
    version: str
    range_text: str | None
    pinned: LockEntry | None = None
    registry: str | None = None
    offline: bool = False


@dataclass(frozen=True)
class Fetched:
    """Artifact bytes (not yet verified) and the registry metadata, if the registry was asked.

    ``stored_signatures``: without metadata, the signature entries kept with the cached
    artifact (None: none were stored), verified again by the signature check.
    """

    data: bytes
    metadata: dict[str, Any] | None
    from_cache: bool
    offline: bool
    stored_signatures: tuple[Mapping[str, Any], ...] | None = None


@dataclass(frozen=True)
class Checked:
    """A package verified, its signer trusted and its permissions consented to: what
    :meth:`Installer.swap_in` puts in place, with the lock entry it records."""

    target: Target
    fetched: Fetched
    verified: VerifiedArtifact
    entry: LockEntry
    previous: str | None
    signature: str


def signer_from_cache(entry: LockEntry) -> bool:
    """The lock entry pins no signer, so a kept package's is the one stored with its cached
    artifact in SPLICE_HOME (:meth:`Installer.check_kept`): the embedded registry's entries
    never pin one. No recorded no-op state can stand for that file (tasks/noop.py)."""
    return entry.signed_by is None and entry.registry == EMBEDDED_REGISTRY


class Installer:
    """Installs targets into one project (see the module docstring)."""

    def __init__(
        self,
        layout: ProjectLayout,
        cache: ArtifactCache,
        session: RegistrySession,
        options: InstallOptions,
        progress: Progress,
        others: RegistrySessions | None = None,
        lock_decides: Callable[[ProjectFile], bool] | None = None,
    ) -> None:
        """``others``: the sessions of registries other than ``session``'s; ``lock_decides``:
        whether a locked package of the project is fetched from its lock entry's registry
        (project/registry_url.py ``lock_decides``; None: never, every package asks
        ``session``)."""
        self.layout = layout
        self.cache = cache
        self.session = session
        self._others = others
        self._lock_decides = lock_decides
        self.options = options
        self.progress = progress
        # The directory the runtime joins fs grants to (it resolves links the same way).
        self._root = Path(os.path.realpath(layout.root))
        self._consent_record: tuple[ConsentRecord | None] | None = None  # (read,) once read
        # package id -> its file grants leading out of the project, as its consent saw them
        self._links_seen: dict[str, dict[str, str]] = {}

    def session_for(self, registry: str | None) -> RegistrySession:
        """The session of ``registry`` (a :attr:`Target.registry`): the run's own for None.

        One run covers every registry a command needs, so that all its packages are checked
        before any is swapped in (tasks/loader.py); a run given no other sessions refuses a
        target of another registry rather than asking the wrong one."""
        if registry is None or registry == self.session.url:
            return self.session
        if self._others is None:
            raise InstallError(ErrorCode.INTERNAL_ERROR, f"no session for {registry}")
        return self._others.get(registry)

    def locked_registry(self, project: ProjectFile, entry: LockEntry) -> str | None:
        """The :attr:`Target.registry` of the locked version ``entry``: the registry it came
        from when nothing before the lock in the precedence names one (docs/cli.md#which-registry),
        so a fresh clone installs a lock that pins packages from several registries; None: the
        run's own. Raises ``INVALID_CONFIG`` for a ``registry`` that is no registry URL."""
        if entry.registry is None or self._lock_decides is None:
            return None
        if not self._lock_decides(project):
            return None
        from splice_build.project.registry_url import normalize_registry_url

        return normalize_registry_url(entry.registry)

    # (2) ----------------------------------------------------------------------------------
    def _metadata(self, target: Target) -> dict[str, Any] | None:
        """The registry's VersionResponse, or None when offline with a locked version."""
        try:
            meta = self.session_for(target.registry).client.version(
                target.package_id, target.version
            )
        except RegistryError as exc:
            if target.pinned is not None and is_offline(exc):
                return None
            if target.pinned is not None and exc.code is ErrorCode.PACKAGE_NOT_FOUND:
                raise _lock_mismatch(target, "the registry no longer has this version") from exc
            if exc.code is ErrorCode.PACKAGE_NOT_FOUND:
                raise self._not_served(target, exc, "version answer") from exc
            raise
        integrity = meta.get("integrity")
        if not is_integrity(integrity):
            raise RegistryError(
                ErrorCode.REGISTRY_ERROR,
                f"Registry returned an invalid integrity for {target.package_id}",
            )
        pinned = target.pinned
        if pinned is not None:
            size = meta.get("size")
            if integrity != pinned.integrity or (
                pinned.size_if_known is not None and size != pinned.size_if_known
            ):
                raise _lock_mismatch(target, f"registry has {_pin(integrity, size)}")
        return meta

    # (3) ----------------------------------------------------------------------------------
    def _artifact(
        self, target: Target, integrity: str, size: int | None, offline: bool
    ) -> tuple[bytes, bool]:
        cached = self.cache.get(integrity, size)
        if cached is not None:
            return cached, True
        if offline:
            raise RegistryError(
                ErrorCode.REGISTRY_UNREACHABLE,
                f"The registry is unreachable and {target.package_id}@{target.version} is not in the local cache",
            )
        self.progress("downloading", f"Downloading {target.package_id}@{target.version}...")
        try:
            data = self.session_for(target.registry).client.download(
                target.package_id, target.version
            )
        except RegistryError as exc:
            if exc.code is ErrorCode.PACKAGE_NOT_FOUND:
                raise self._not_served(target, exc, "download") from exc
            raise
        pinned = target.pinned
        if pinned is not None and (
            integrity_of(data) != pinned.integrity
            or (pinned.size_if_known is not None and len(data) != pinned.size_if_known)
        ):
            # Invariant 2: a locked version installs only with the lock's bytes.
            raise _lock_mismatch(
                target, f"the registry served {integrity_of(data)} ({len(data)} bytes)"
            )
        return data, False

    def _not_served(self, target: Target, exc: RegistryError, answer: str) -> RegistryError:
        """``PACKAGE_NOT_FOUND`` for a version the registry listed (or the lock pins) whose
        ``answer`` (its version answer, its download) is a 404: the message names
        ``id@version`` and the registry, the registry's own text is a detail. That text alone
        was the message ("not here"), naming no package in an update of several."""
        from splice_build.install.resolve import registry_named

        registry = registry_named(self.session_for(target.registry).url)
        return RegistryError(
            ErrorCode.PACKAGE_NOT_FOUND,
            f"{target.package_id}@{target.version} is listed by {registry} but its {answer} "
            "was not found",
            details=[f"registry: {exc.message}", *exc.details],
            hint="The registry may be behind or misbehaving: try again later, or pick another "
            f"version with `splice add {target.package_id}@<version>`.",
        )

    def fetch(self, target: Target) -> Fetched:
        """(2)(3) the artifact bytes, with registry metadata when the registry was asked.

        A locked version already in the verified cache needs no registry at all (this is the
        offline restore path), its stored signatures going with it; otherwise the metadata is
        checked against the lock first.
        """
        pinned = target.pinned
        if pinned is not None:
            cached = self.cache.get(pinned.integrity, pinned.size_if_known)
            if cached is not None:
                return self._from_cache(target, pinned, cached)
        meta = self._metadata(target)
        if meta is None:
            assert pinned is not None
            data, from_cache = self._artifact(
                target, pinned.integrity, pinned.size_if_known, offline=True
            )
            return Fetched(data, None, from_cache, offline=True)
        size = meta.get("size") if isinstance(meta.get("size"), int) else None
        data, from_cache = self._artifact(target, str(meta["integrity"]), size, offline=False)
        return Fetched(data, meta, from_cache, offline=False)

    def _from_cache(self, target: Target, pinned: LockEntry, cached: bytes) -> Fetched:
        """The cached locked artifact, with the signatures stored next to it.

        Nothing stored from the lock entry's registry (a cache written before signatures were
        kept, or the same bytes last installed from another registry): the registry's
        signatures are asked for and verified (and then stored), and only when the registry
        cannot answer does the lock's pin stand alone.
        """
        stored = self.cache.signatures(
            pinned.integrity, target.package_id, target.version, pinned.registry
        )
        if stored is None:
            try:
                meta = self._metadata(target)
            except SpliceError:
                meta = None  # the lock's bytes are in hand; the registry's view is not needed
            if meta is not None:
                return Fetched(cached, meta, from_cache=True, offline=False)
        return Fetched(cached, None, from_cache=True, offline=False, stored_signatures=stored)

    def _expected(self, target: Target, fetched: Fetched) -> Expected:
        meta = fetched.metadata
        if meta is None:
            assert target.pinned is not None
            pinned = target.pinned
            return Expected(
                target.package_id,
                target.version,
                pinned.integrity,
                pinned.size_if_known,
                None,
                self._require_signed(target),
            )
        manifest = meta.get("manifest")
        return Expected(
            target.package_id,
            target.version,
            str(meta["integrity"]),
            meta.get("size") if isinstance(meta.get("size"), int) else None,
            manifest if isinstance(manifest, dict) else None,
            self._require_signed(target),
        )

    def _require_signed(self, target: Target) -> bool:
        """``--require-signed``, or the namespace is listed in splice.json ``requireSignatures``."""
        if self.options.require_signed:
            return True
        return load_project_file(self.layout.root).requires_signature(target.package_id)

    def check(self, target: Target, fetched: Fetched) -> Checked:
        """(4)–(7) verify, trust the signer, cache, and ask consent; nothing in the project
        changes. A command installing several packages checks them all before it swaps any
        in (tasks/loader.py), so a refusal of one leaves the others as they were too."""
        expected = self._expected(target, fetched)
        lock = load_lockfile(self.layout.root)
        current = lock.get(target.package_id)
        self.progress("verifying", f"Verifying {expected.integrity}...")
        signature = self._signature_check(target, fetched, current)
        verified = verify_artifact(fetched.data, expected, signature)
        signed_by = self._recorded_signer(target, fetched, verified.signed_by)
        subject = f"{target.package_id}@{target.version}"
        official = official_signer(
            target.package_id,
            signature.valid
            if isinstance(signature, SignatureValid)
            else tuple(k for k in (verified.signed_by,) if k is not None),
            subject,
        )
        if official is not None:  # the shipped key is trusted for @splice, and pinned
            signed_by = official
        pinned = current.signed_by if current is not None else None
        untrusted: str | None = None
        changing = pinned is None or self.options.allow_signer_change  # else SIGNER_CHANGED below
        if (
            official is None
            and signed_by is not None
            and signed_by != pinned
            and changing
            and isinstance(signature, SignatureValid)
            and not signature.trusted  # then the check itself accepted only a trusted key
        ):
            signed_by, untrusted = first_signer(
                signature.valid,
                signed_by,
                trusted=(),
                registered=self._registered_keys(target),
                require_signed=expected.require_signed,
                subject=subject,
            )
        signer_pinning(pinned, signed_by, self.options.allow_signer_change)
        if not fetched.from_cache:
            self.cache.put(fetched.data)
        # What these bytes extract to, derived here: a lock entry's files digest is trusted
        # on this machine only once it is this one (install/derived.py).
        self.cache.put_files_digest(expected.integrity, verified.files_digest)
        self._keep_signatures(target, fetched, verified)
        self._consent_to(
            target.package_id,
            verified.manifest.permissions,
            self._granted_here(target.package_id, current),
            subject,
        )
        if fetched.metadata is not None:
            registry: str | None = self.session_for(target.registry).url
            resolved = _download_url(registry, target)
        else:
            assert target.pinned is not None
            resolved, registry = target.pinned.resolved, target.pinned.registry
        entry = LockEntry(
            version=target.version,
            integrity=expected.integrity,
            resolved=resolved,
            registry=registry,
            size=len(fetched.data),
            files=verified.files_digest,
            permissions=verified.manifest.permissions,
            signed_by=signed_by,
        )
        signature_line = signature_text(
            official or verified.signed_by,
            signed_by,
            untrusted,
            pinned_only=isinstance(signature, SignaturePinnedByLock),
        )
        previous = (
            current.version if current is not None and current.version != target.version else None
        )
        return Checked(target, fetched, verified, entry, previous, signature_line)

    def swap_in(
        self, checked: Sequence[Checked], granted: Mapping[str, Permissions]
    ) -> dict[str, InstallReport]:
        """(8) every checked package staged, then all swapped in with their lock entries in
        one journaled transaction: one ``splice.lock`` write commits them all, so a failure
        while staging or swapping any of them (a full disk, a file in the way) leaves every
        one as it was, as a refusal by a check does. ``granted`` is recorded
        (:meth:`record_consent`) at the commit, before the transaction ends: a call checking
        a new copy in between would find no grant for it."""
        staged: list[tuple[Checked, Path]] = []
        try:
            for one in checked:
                staged.append((one, self._stage(one)))
        except BaseException:
            for _one, path in staged:
                transaction.discard_staging(self.layout, path)
            raise
        lock_after = load_lockfile(self.layout.root)
        ranges: dict[str, str | None] = {}
        swaps = []
        for one, path in staged:
            package_id = one.target.package_id
            lock_after = lock_after.with_entry(package_id, one.entry)
            if one.target.range_text is not None:
                ranges[package_id] = one.target.range_text
            swaps.append(transaction.swap_for(self.layout, package_id, path))
        transaction.apply(
            self.layout, swaps, lock_after, ranges, on_commit=lambda: self.record_consent(granted)
        )
        return {
            one.target.package_id: report_for(
                one.verified.manifest,
                one.entry,
                already=False,
                previous=one.previous,
                from_cache=one.fetched.from_cache,
                offline=one.fetched.offline or one.target.offline,
                signature=one.signature,
                root=self._root,
            )
            for one in checked
        }

    def keep(self, target: Target, manifest: Manifest, entry: LockEntry) -> InstallReport:
        """The intact locked copy stays; only a changed range is written to ``splice.json``.

        Raises the signature policy's errors first (:meth:`check_kept`), writing nothing."""
        project = load_project_file(self.layout.root)
        self.check_kept(target.package_id, entry, project)
        if (
            target.range_text is not None
            and project.packages.get(target.package_id) != target.range_text
        ):
            from splice_build.project.project_file import save_project_file

            save_project_file(
                self.layout.root, project.with_package(target.package_id, target.range_text)
            )
        return self.kept_report(target.package_id, manifest, entry, offline=target.offline)

    def check_kept(self, package_id: str, entry: LockEntry, project: ProjectFile) -> None:
        """A kept package is not verified again: the signer its install recorded must meet
        this run's signature policy (``--require-signed``, ``requireSignatures``,
        ``trustedSigners``) as a fresh install would; raises :func:`kept_signer`'s errors."""
        require = self.options.require_signed or project.requires_signature(package_id)
        trusted = project.trusted_for(package_id)
        if not (require or trusted):
            return
        signer = entry.signed_by
        if signer_from_cache(entry):
            signer = stored_signer(
                self.cache.signatures(entry.integrity, package_id, entry.version, entry.registry)
            )
        kept_signer(package_id, entry.version, signer, require_signed=require, trusted=trusted)

    def consent_kept(
        self, package_id: str, manifest: Manifest, entry: LockEntry, project: ProjectFile
    ) -> None:
        """A kept copy of a package ``splice.json`` does not list asks for every permission
        its manifest declares, as installing it does (its lock entry grants nothing:
        docs/security.md#consent-on-this-machine); ``PERMISSIONS_NOT_ACCEPTED`` without
        consent. A listed package's copy asks for what its manifest declares beyond what
        this machine recorded granting it (install/consent_record.py): the copy, and the
        lock naming it, may both have come with a pull request, and its artifact may have
        been verified here for another project. Without a record for it, it was checked
        within its lock entry's grant: only a file grant leading out of the project is asked
        for (spec/outside_grants.py)."""
        granted = self._kept_grant(package_id, manifest, project)
        self._consent_to(package_id, manifest.permissions, granted, f"{package_id}@{entry.version}")

    def _consent_to(
        self, package_id: str, requested: Permissions, granted: Permissions | None, subject: str
    ) -> None:
        """:func:`require_consent` to ``requested`` beyond ``granted`` and to each file grant
        leading out of the project that this machine's record does not hold as it leads now;
        what those lead to, resolved once before the question and shown as resolved, is what
        :meth:`record_consent` records as accepted."""
        from splice_build.spec.outside_grants import outside_links

        seen = outside_links(self._root, requested)
        require_consent(
            requested,
            granted,
            self.options.accept_permissions,
            subject,
            root=self._root,
            home=self.session.home.path,
            links=self._accepted_links(package_id),
            found=seen,
        )
        self._links_seen[package_id] = seen

    def kept_consent(
        self, package_id: str, manifest: Manifest, project: ProjectFile
    ) -> tuple[str, ...]:
        """The lines :meth:`consent_kept` would ask for (accepted or not): the install runs,
        and records what is accepted; ``sync --check`` lists them."""
        from splice_build.install.consent import ungranted_lines

        granted = self._kept_grant(package_id, manifest, project)
        return tuple(
            ungranted_lines(
                manifest.permissions, granted, self._root, self._accepted_links(package_id)
            )
        )

    def _kept_grant(
        self, package_id: str, manifest: Manifest, project: ProjectFile
    ) -> Permissions | None:
        """The grant a kept copy of ``package_id`` is compared with (:meth:`consent_kept`):
        nothing for a package ``splice.json`` does not list, what this machine recorded for
        it, else its manifest's own (checked within its lock entry's grant)."""
        if package_id not in project.packages:
            return None
        granted = self._consented(package_id)
        return manifest.permissions if granted is None else granted

    def kept_report(
        self, package_id: str, manifest: Manifest, entry: LockEntry, *, offline: bool = False
    ) -> InstallReport:
        """The report of an intact locked package that stays as it is."""
        return kept_report(
            lambda: self.cache, self._root, package_id, manifest, entry, offline=offline
        )

    def _keep_signatures(
        self, target: Target, fetched: Fetched, verified: VerifiedArtifact
    ) -> None:
        """Store the registry's signatures (checked just now; none for an unsigned package)
        with the artifact, for later restores."""
        if fetched.metadata is None:
            return
        signatures = fetched.metadata.get("signatures")
        self.cache.put_signatures(
            integrity_of(fetched.data),
            target.package_id,
            target.version,
            self.session_for(target.registry).url,
            signatures if isinstance(signatures, list) and verified.signed_by is not None else [],
        )

    def _signature_check(
        self, target: Target, fetched: Fetched, current: LockEntry | None
    ) -> SignatureCheck:
        """(5) the registry's signatures; from the cache, the signatures stored with the
        artifact (verified again, the lock's pin preferred); with none stored, the signer the
        lock recorded."""
        trusted = load_project_file(self.layout.root).trusted_for(target.package_id)
        if fetched.metadata is None:
            assert target.pinned is not None
            if fetched.stored_signatures is not None:
                return SignatureValid(
                    fetched.stored_signatures,
                    trusted_signer=target.pinned.signed_by,
                    trusted=trusted,
                )
            return SignaturePinnedByLock(target.pinned.signed_by, trusted)
        signatures = fetched.metadata.get("signatures")
        return SignatureValid(
            signatures if isinstance(signatures, list) else (),
            trusted_signer=current.signed_by if current is not None else None,
            trusted=trusted,
        )

    def _registered_keys(self, target: Target) -> tuple[str, ...]:
        """The unrevoked key ids the target's registry lists for the package's namespace
        (none when it does not know the namespace)."""
        namespace = target.package_id[1:].split("/", 1)[0]
        try:
            answer = self.session_for(target.registry).client.keys(namespace)
        except RegistryError as exc:
            if exc.code is ErrorCode.PACKAGE_NOT_FOUND:
                return ()
            raise
        return tuple(k["keyId"] for k in answer["keys"] if k.get("revokedAt") is None)

    def _recorded_signer(
        self, target: Target, fetched: Fetched, verified: str | None
    ) -> str | None:
        """The ``signedBy`` written to splice.lock.

        The embedded registry is this machine's own store: a key that signs in it is local
        to the machine, so pinning it in a committed lock would refuse every fresh clone. Its
        signatures are still verified. (The official ``@splice`` key is the same everywhere
        and is pinned by ``install``: docs/signing.md#the-official-key.)
        """
        if fetched.metadata is not None:
            registry = self.session_for(target.registry).url
        else:
            assert target.pinned is not None
            registry = target.pinned.registry
        return None if registry == EMBEDDED_REGISTRY else verified

    def consent_needed(self, target: Target) -> tuple[str, ...]:
        """What installing the locked ``target`` would ask consent for: the lock's grant
        beyond :meth:`_granted_here` (``sync --check`` reports it; nothing is fetched)."""
        from splice_build.install.consent import ungranted_lines

        pinned = target.pinned
        if pinned is None or isinstance(pinned.permissions, Unknown):
            return ()
        granted = self._granted_here(target.package_id, pinned)
        links = self._accepted_links(target.package_id)
        return tuple(ungranted_lines(pinned.permissions, granted, self._root, links))

    def _granted_here(self, package_id: str, current: LockEntry | None) -> Permissions | None:
        """The grant consent compares with: the lock's, narrowed to what this machine
        granted the package (docs/security.md#consent-on-this-machine).

        ``splice.lock`` comes with the checkout: a pull request can pin a new version and
        widen its grant in one diff. What this machine agreed to is recorded in SPLICE_HOME
        after each install of the project (install/consent_record.py), out of the checkout's
        reach, so a lock wider than that asks again. A project without a record for the
        package (installed before records were kept) falls back to the grant its installed
        copy runs under (its manifest was within the lock's grant when installed); without
        an installed copy either (a fresh clone) the lock is the project's reviewed record
        for the packages ``splice.json`` lists. A copy whose manifest cannot be read, or
        names another package, grants nothing (fail closed: removing the directory is what
        makes a fresh clone). A lock entry ``splice.json`` does not list grants nothing
        either: no reviewed file but the lock shows it.
        """
        from splice_build.install.installed import read_installed_manifest
        from splice_build.spec.permissions import common

        grant = _recorded_grant(current)
        if grant is None or package_id not in load_project_file(self.layout.root).packages:
            return None
        consented = self._consented(package_id)
        if consented is not None:
            return common(grant, consented)
        directory = self.layout.package_dir(package_id)
        if not os.path.lexists(directory):
            return grant
        try:
            installed = read_installed_manifest(directory)
        except (SpliceError, OSError):
            return None
        return common(grant, installed.permissions) if installed.id == package_id else None

    def _consented(self, package_id: str) -> Permissions | None:
        """What this machine recorded granting ``package_id`` in this project, or None
        (install/consent_record.py ``ConsentRecord.grant_for``)."""
        record = self.consent_record()
        return None if record is None else record.grant_for(package_id)

    def _accepted_links(self, package_id: str) -> Mapping[str, str] | None:
        """The file grants of ``package_id`` this machine accepted leading out of the
        project, with where they led (install/consent_record.py), or None: no record."""
        record = self.consent_record()
        return None if record is None else record.links_for(package_id)

    def consent_record(self) -> ConsentRecord | None:
        """This project's record of what this machine granted its packages, or None; read
        once for the run (an installer serves one run, under the project's lock) and again
        after :meth:`record_consent` writes it."""
        if self._consent_record is None:
            self._consent_record = (read_record(self.session.home.path, self._root),)
        return self._consent_record[0]

    def record_consent(self, granted: Mapping[str, Permissions]) -> None:
        """After a successful install of the project: record ``granted`` (the permissions of
        each installed copy the run checked or kept) over the last record, without the
        packages ``splice.lock`` no longer names, each with the file grants leading out of
        the project its consent saw (none for a package this run did not ask about). The
        caller holds the project lock."""
        last = self.consent_record()
        kept = last is not None and not last.corrupt
        merged = {**(last.grants if kept else {}), **granted}
        links = {
            **(last.links if kept else {}),
            **{k: self._links_seen.get(k, {}) for k in granted},
        }
        locked = load_lockfile(self.layout.root).packages
        write_record(
            self.session.home.path,
            self._root,
            {k: v for k, v in merged.items() if k in locked},
            links,
        )
        self._consent_record = None

    def _relative_dir(self, package_id: str) -> str:
        return self.layout.package_dir(package_id).relative_to(self.layout.root).as_posix()

    def _stage(self, checked: Checked) -> Path:
        """(8) write the files to staging and check them as written (the swap follows)."""
        target, verified = checked.target, checked.verified
        self.progress("installing", f"Installing {self._relative_dir(target.package_id)}...")
        staged = transaction.staging_dir(self.layout, target.package_id)
        try:
            _write_files(staged, verified)
            if tree_digest(staged) != verified.files_digest:
                raise InstallError(
                    ErrorCode.INVALID_PACKAGE,
                    f"staged files of {target.package_id} do not match the artifact",
                )
        except BaseException:
            transaction.discard_staging(self.layout, staged)
            raise
        return staged


def _recorded_grant(current: LockEntry | None) -> Permissions | None:
    """The grant consent compares with: an entry that records none (``UNKNOWN``) asks for
    every permission again, as on a first install."""
    if current is None or isinstance(current.permissions, Unknown):
        return None
    return current.permissions


def _write_files(directory: Path, verified: VerifiedArtifact) -> None:
    """Write the staging copy, durable: the swap renames it into place before the lock
    commits it (docs/lifecycle.md#crash-safety)."""
    write_tree(directory, verified.files)


def _download_url(registry: str, target: Target) -> str:
    """The lock's ``resolved``: the registry's base URL and the path the client downloads
    from, never the registry's own ``download`` field (which could name another host, a
    ``file:`` URL or a path outside the registry)."""
    from splice_build.spec.names import download_path

    namespace, name = target.package_id[1:].split("/")
    return registry + download_path(namespace, name, target.version)


def _pin(integrity: str, size: object) -> str:
    """An integrity and its size as a detail says them; a size not given is said so (an old
    lock entry records none, a registry's version answer may give none)."""
    return f"{integrity} ({size} bytes)" if isinstance(size, int) else f"{integrity} (no size)"


def _lock_mismatch(target: Target, reason: str) -> InstallError:
    pinned = target.pinned
    assert pinned is not None
    return InstallError(
        ErrorCode.LOCK_MISMATCH,
        f"{target.package_id}@{target.version} does not match splice.lock",
        details=[f"splice.lock: {_pin(pinned.integrity, pinned.size_if_known)}", reason],
        hint="Nothing was changed. If the change is expected, remove the entry and re-add the package.",
    )
