"""A hostile registry on 127.0.0.1 that answers only what a test wrote: JSON and artifacts.

The real registry refuses to publish some versions (build metadata, prerelease numbers beyond
2**53: docs/compatibility.md#publish-flow); a hostile one lists and serves them all the same.
``CraftedRegistry.add_version`` packs a real package directory (any version text) and serves
its version answer and its bytes; ``list_versions`` sets the package answer, which may
disagree with what the version answers hold. Answers can be changed while it serves.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from testing.netservers import serve_handler
from testing.packages import minimal_manifest, write_package

_WHEN = "2026-01-01T00:00:00.000Z"


def package_path(package_id: str, *rest: str) -> str:
    """The registry path of ``package_id`` (and of a version or download below it)."""
    namespace, name = package_id[1:].split("/")
    return "/packages/" + "/".join(quote(part, safe="") for part in (namespace, name, *rest))


class CraftedRegistry:
    """The answers by path: ``(content type, body)``; anything else is a 404."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.url = ""
        self._answers: dict[str, tuple[str, bytes]] = {}
        self._guard = threading.Lock()

    def answer(self, path: str) -> tuple[str, bytes] | None:
        with self._guard:
            return self._answers.get(path)

    def serve(self, path: str, content_type: str, body: bytes) -> None:
        """Answer ``path`` with ``body`` from now on."""
        with self._guard:
            self._answers[path] = (content_type, body)

    def withdraw(self, path: str) -> None:
        """Answer ``path`` with a 404 from now on."""
        with self._guard:
            self._answers.pop(path, None)

    def add_version(
        self,
        package_id: str,
        version: str,
        *,
        files: Mapping[str, str | bytes] | None = None,
        permissions: Mapping[str, Any] | None = None,
    ) -> str:
        """Pack ``package_id@version`` and serve it; its integrity."""
        from splice_build.spec.digests import integrity_of
        from splice_build.spec.pack import pack_directory

        namespace, name = package_id[1:].split("/")
        overrides: dict[str, Any] = {"namespace": namespace, "name": name, "version": version}
        if permissions is not None:
            overrides["permissions"] = dict(permissions)
        manifest = minimal_manifest(**overrides)
        folder = self.work / quote(f"{namespace}-{name}-{version}", safe="")
        archive = pack_directory(write_package(folder, manifest, files)).archive
        integrity = integrity_of(archive)
        answer = {
            "name": package_id,
            "version": version,
            "manifest": manifest,
            "integrity": integrity,
            "size": len(archive),
            "publishedAt": _WHEN,
            "publishedBy": "mallory",
            "download": package_path(package_id, version, "download"),
            "signatures": [],
        }
        self.serve(
            package_path(package_id, version), "application/json", json.dumps(answer).encode()
        )
        self.serve(package_path(package_id, version, "download"), "application/gzip", archive)
        return integrity

    def list_versions(self, package_id: str, versions: Sequence[str]) -> None:
        """The package answer: ``versions`` in this order, the last one ``latest``."""
        namespace = package_id[1:].split("/")[0]
        answer = {
            "name": package_id,
            "namespace": namespace,
            "description": "Crafted.",
            "latest": versions[-1],
            "versions": [{"version": v, "publishedAt": _WHEN} for v in versions],
            "versionCount": len(versions),
            "versionsTruncated": False,
            "createdAt": _WHEN,
            "updatedAt": _WHEN,
        }
        self.serve(package_path(package_id), "application/json", json.dumps(answer).encode())
        keys = {"namespace": namespace, "keys": []}
        self.serve(f"/namespaces/{namespace}/keys", "application/json", json.dumps(keys).encode())


@contextmanager
def crafted_registry(work: Path) -> Iterator[CraftedRegistry]:
    """A :class:`CraftedRegistry` serving on 127.0.0.1 for the block."""
    registry = CraftedRegistry(work)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            return

        def do_GET(self) -> None:
            found = registry.answer(urlsplit(self.path).path)
            status = 200 if found is not None else 404
            content_type, body = found or (
                "application/json",
                b'{"error": {"code": "PACKAGE_NOT_FOUND", "message": "not here"}}',
            )
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serve_handler(Handler) as url:
        registry.url = url
        yield registry
