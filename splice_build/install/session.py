"""One registry connection for a whole operation, opened only when something needs it.

A no-op ``splice install`` never opens the registry; an install that finds the registry
unreachable (``REGISTRY_UNREACHABLE``, or ``REGISTRY_UNAVAILABLE`` for an HTTP 503) falls back
to the verified cache for locked versions (docs/compatibility.md#install-pipeline "Offline").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from splice_build.errors import ErrorCode, SpliceError

if TYPE_CHECKING:
    from splice_build.project.home import SpliceHome
    from splice_build.registry.client.interface import RegistryClient

OFFLINE_CODES = frozenset({ErrorCode.REGISTRY_UNREACHABLE, ErrorCode.REGISTRY_UNAVAILABLE})


def is_offline(exc: SpliceError) -> bool:
    """True when ``exc`` means the registry could not be asked at all."""
    return exc.code in OFFLINE_CODES


class RegistrySession:
    """Lazily opens the client for ``url``; close it when the operation ends."""

    def __init__(self, url: str, *, home: SpliceHome, env: Mapping[str, str]) -> None:
        self.url = url
        self._home = home
        self._env = env
        self._client: RegistryClient | None = None

    @property
    def home(self) -> SpliceHome:
        return self._home

    @property
    def client(self) -> RegistryClient:
        if self._client is None:
            from splice_build.registry.client.open import open_registry

            self._client = open_registry(self.url, home=self._home, env=self._env)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


class RegistrySessions:
    """One lazily opened :class:`RegistrySession` per registry URL, for a run that asks
    several registries (``update``, or ``install`` of a lock that pins packages from several);
    close them when the operation ends."""

    def __init__(self, *, home: SpliceHome, env: Mapping[str, str]) -> None:
        self.home = home
        self.env = env
        self._by_url: dict[str, RegistrySession] = {}

    def get(self, url: str) -> RegistrySession:
        if url not in self._by_url:
            self._by_url[url] = RegistrySession(url, home=self.home, env=self.env)
        return self._by_url[url]

    def close(self) -> None:
        for session in self._by_url.values():
            session.close()
