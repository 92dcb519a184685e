"""The ``MetadataStore`` protocol: what the registry service needs from a database.

The surface is split into small protocols by table family; a back end (SQLite now,
PostgreSQL later) implements all of them in one class. Rows are frozen dataclasses; the
store never decides policy (who may publish), it only keeps the data consistent:

- ``insert_version`` is the one metadata transaction of a publish (namespace claim,
  package upsert, version row with provenance); a duplicate version raises
  ``VERSION_EXISTS`` however the race was lost. The service decides who may publish where
  before it stores the artifact; the transaction checks again, against what it writes
  with, that the publisher's token is still valid and the publisher still the namespace's
  owner or maintainer (``Publisher``): a token revoked or a maintainer removed while the
  publish was in flight (its body arriving, its artifact being stored) publishes nothing.
- the database itself refuses updates of a version's identity, deletes and a second
  provenance write (triggers), so no code path can rewrite history. Signing keys and
  signatures are append-only the same way: a key is revoked once and never changed or
  deleted, a signature is never changed or deleted.

Errors: ``RegistryError`` with ``USER_EXISTS``, ``VERSION_EXISTS``, ``FORBIDDEN`` (namespace
claimed by someone else, or no longer the publisher's, inside the publish transaction),
``UNAUTHENTICATED`` (the publisher's token revoked or expired by then), ``KEY_EXISTS`` (a key
id inserted twice) or ``METADATA_WRITE_FAILED``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from splice_build.records import dataclass


@dataclass(frozen=True)
class User:
    id: int
    name: str
    created_at: str


@dataclass(frozen=True)
class Token:
    """A token row without its hash: nothing read back can reveal the secret."""

    id: str
    user_id: int
    label: str
    created_at: str
    last_used_at: str | None
    revoked_at: str | None
    expires_at: str | None
    namespaces: tuple[str, ...] | None  # None = every namespace the user may publish to
    can_manage: bool


@dataclass(frozen=True)
class NewToken:
    id: str
    user_id: int
    token_hash: str  # lowercase hex SHA-256 of the token string; the token is never stored
    label: str
    created_at: str
    expires_at: str | None
    namespaces: tuple[str, ...] | None
    can_manage: bool


@dataclass(frozen=True)
class Namespace:
    name: str
    owner: str | None  # user name
    reserved: bool
    created_at: str


@dataclass(frozen=True)
class Package:
    id: str  # "@ns/name"
    namespace: str
    name: str
    description: str
    latest_version: str
    created_at: str
    updated_at: str
    kind: str
    hidden: bool
    version_count: int


@dataclass(frozen=True)
class Version:
    package_id: str
    version: str
    manifest: str  # JSON text of the normalized manifest
    integrity: str
    size: int
    artifact_key: str
    published_by: str
    published_at: str
    artifact_backend: str
    artifact_url: str | None
    provenance: str | None  # JSON text, write-once


@dataclass(frozen=True)
class VersionEntry:
    """A version as listings show it: the columns a page needs, not the manifest."""

    version: str
    published_at: str
    integrity: str
    size: int


@dataclass(frozen=True)
class Publisher:
    """Who publishes, and on what right: the publish transaction checks it again."""

    user_id: int
    token_id: str | None = None  # None: the embedded registry's own user, with no token
    claim: bool = False  # True: the namespace was free; the transaction claims it


@dataclass(frozen=True)
class NewVersion:
    """Everything one publish writes, in one transaction."""

    version: Version
    namespace: str
    name: str
    description: str
    kind: str
    publisher: Publisher


@dataclass(frozen=True)
class SearchHit:
    id: str
    description: str
    latest_version: str
    kind: str


@dataclass(frozen=True)
class SigningKeyRow:
    """A publisher key registered for one namespace (docs/compatibility.md#signatures)."""

    key_id: str
    namespace: str
    public_key: str  # raw 32 bytes, standard base64
    added_by: str  # user name
    added_at: str
    revoked_at: str | None


@dataclass(frozen=True)
class SignatureRow:
    package_id: str
    version: str
    key_id: str
    signature: str  # 64 bytes, standard base64
    signed_by: str  # user name
    signed_at: str


@dataclass(frozen=True)
class VersionSignature:
    """A signature joined with its key, as version metadata shows it."""

    key_id: str
    public_key: str
    signature: str
    signed_at: str
    revoked_at: str | None  # the key's revocation, if any


LatestOf = Callable[[Sequence[str]], str]
PageKey = tuple[str, str]  # (published_at, version): where a page of versions ends


class UserStore(Protocol):
    def create_user(self, name: str, *, now: str) -> User: ...
    def user_by_name(self, name: str) -> User | None: ...
    def user_by_id(self, user_id: int) -> User | None: ...


class TokenStore(Protocol):
    def insert_token(self, token: NewToken) -> Token: ...
    def token_by_hash(self, token_hash: str) -> Token | None: ...
    def touch_token(self, token_id: str, *, now: str) -> None: ...
    def tokens_of(self, user_id: int) -> list[Token]: ...
    def token_by_id(self, token_id: str) -> Token | None: ...
    def revoke_token(self, token_id: str, *, now: str) -> bool:
        """Mark revoked; False when unknown or already revoked."""
        ...


class NamespaceStore(Protocol):
    def namespace(self, name: str) -> Namespace | None: ...
    def set_owner(self, name: str, owner_id: int | None, *, now: str) -> Namespace:
        """Create the namespace if needed and set (or clear) its owner."""
        ...

    def maintainers(self, name: str) -> list[str]: ...
    def add_maintainer(self, name: str, user_id: int, *, now: str) -> None: ...
    def remove_maintainer(self, name: str, user_id: int) -> None: ...
    def namespaces_of(self, user_id: int) -> tuple[list[str], list[str]]:
        """(owned, maintained) namespace names, sorted."""
        ...

    def packages_in(self, name: str, *, listed: bool = False) -> list[str]:
        """The ids of the namespace's packages, sorted; ``listed``: only those not hidden."""
        ...

    def reserved_namespaces(self) -> list[str]:
        """The names of the reserved namespaces, sorted (assigned or not)."""
        ...

    def namespace_names(self) -> list[str]:
        """Every namespace's name, sorted (reserved, owned and released ones)."""
        ...


class PackageStore(Protocol):
    def package(self, package_id: str) -> Package | None: ...
    def versions(self, package_id: str) -> list[Version]:
        """All versions ordered by publish time, then version."""
        ...

    def versions_page(
        self, package_id: str, *, after: PageKey | None, limit: int
    ) -> list[VersionEntry]:
        """At most ``limit`` versions in the order of ``versions``, those after ``after``.

        Keyset pagination on immutable columns: a walk sees every version that existed when it
        started exactly once, whatever is published meanwhile, at a cost bounded by ``limit``.
        """
        ...

    def highest_versions(self, package_id: str, *, limit: int) -> list[VersionEntry]:
        """The ``limit`` versions of highest semver precedence, highest first (an index read)."""
        ...

    def version(self, package_id: str, version: str) -> Version | None: ...
    def all_versions(self) -> list[Version]:
        """Every version of every package, ordered by package id, then publish time."""
        ...

    def set_artifact_location(
        self, package_id: str, version: str, *, backend: str, url: str | None
    ) -> bool:
        """Point a version at the store now holding its artifact (the only mutable columns);
        False when the version does not exist."""
        ...

    def insert_version(self, new: NewVersion, *, latest_of: LatestOf, now: str) -> None:
        """The publish transaction; ``latest_of`` picks the package's new "latest" from its
        current one and the new version (it never sees the rest of the history)."""
        ...

    def set_hidden(self, package_id: str, hidden: bool, *, now: str) -> bool: ...
    def search(self, query: str, *, limit: int, kind: str | None) -> list[SearchHit]:
        """Literal substring match on id, or on the description by ``db.search_key`` (Unicode
        canonical caseless matching, alike on every store); exact > prefix > other, then id."""
        ...


class RateLimitStore(Protocol):
    def hit(self, key: str, window_start: int, weight: int = 1) -> int:
        """Count one event (``weight`` of them) in a fixed window and return the window's count.

        Rows of earlier windows are dropped: the key's own, and (once per window) those of
        every key of the same limit (``<limit>:`` prefix), so a client seen once does not
        leave its row behind for ever."""
        ...

    def count(self, key: str, window_start: int) -> int: ...


class SigningStore(Protocol):
    def signing_key(self, key_id: str) -> SigningKeyRow | None: ...
    def signing_keys(self, namespace: str) -> list[SigningKeyRow]:
        """The namespace's keys, revoked ones included, in the order they were added."""
        ...

    def insert_signing_key(self, key: SigningKeyRow) -> None:
        """Raises ``KEY_EXISTS`` when the key id is already registered (any namespace)."""
        ...

    def revoke_signing_key(self, key_id: str, *, now: str) -> bool:
        """Mark revoked; False when unknown or already revoked (a key is revoked once)."""
        ...

    def insert_signature(self, row: SignatureRow) -> None:
        """Keep ``row`` unless this key already signed this version (the first one stays)."""
        ...

    def signatures_of(self, package_id: str, version: str) -> list[VersionSignature]:
        """Every signature of one version with its key, oldest first."""
        ...


class MetadataStore(
    UserStore, TokenStore, NamespaceStore, PackageStore, RateLimitStore, SigningStore, Protocol
):
    """Everything the registry service keeps in its database."""

    def close(self) -> None: ...
