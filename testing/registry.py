"""Registry test helpers: real packages packed to artifacts, hostile archives, a service on tmp.

Hostile archives are built with the standard ``tarfile`` module and named after the attack.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from splice_build.registry.db.sqlite import SqliteMetadataStore
from splice_build.registry.service.ratelimit import RateLimits
from splice_build.registry.service.registry_service import RegistryService
from splice_build.spec.pack import pack_directory
from testing.packages import minimal_manifest, write_package
from testing.registry_memory_blobs import MemoryBlobStore

NO_LIMITS = RateLimits(failed_auth=0, publishes=0, requests=0, admin=0, costly_reads=0)


def free(_document: object) -> Callable[[float], None]:
    """A client with no budget of costly reads to spend (``answer_cache.Charge``)."""
    return lambda _seconds: None


def package_dir(
    root: Path, namespace: str = "acme", name: str = "greeter", version: str = "1.0.0", **extra: Any
) -> Path:
    manifest = minimal_manifest(namespace=namespace, name=name, version=version, **extra)
    return write_package(root / f"{namespace}-{name}-{version}", manifest)


def artifact(
    root: Path, namespace: str = "acme", name: str = "greeter", version: str = "1.0.0", **extra: Any
) -> bytes:
    """The deterministic .tar.gz of a small valid package."""
    return pack_directory(package_dir(root, namespace, name, version, **extra)).archive


def _tar_gz(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return gzip.compress(raw.getvalue())


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _valid_members() -> list[tuple[tarfile.TarInfo, bytes | None]]:
    return [
        _file("manifest.json", json.dumps(minimal_manifest(name="evil")).encode()),
        _file("SKILL.md", b"# Evil\n"),
        _file("tools/hello.js", b"export default () => ({});\n"),
    ]


def zip_slip() -> bytes:
    return _tar_gz([*_valid_members(), _file("../../escape.js", b"pwned")])


def symlink_escape() -> bytes:
    link = tarfile.TarInfo("tools/link.js")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    return _tar_gz([*_valid_members(), (link, None)])


def absolute_path() -> bytes:
    return _tar_gz([*_valid_members(), _file("/tmp/abs.js", b"x")])


def file_and_directory() -> bytes:
    """A file ``lib`` and a file ``lib/a.js``: no file system can hold both."""
    return _tar_gz([*_valid_members(), _file("lib", b"x"), _file("lib/a.js", b"y")])


def unicode_duplicate() -> bytes:
    """``café.js`` in NFC and in NFD: one file on macOS."""
    return _tar_gz([*_valid_members(), _file("caf\u00e9.js", b"1"), _file("cafe\u0301.js", b"2")])


def bomb() -> bytes:
    """A small gzip that inflates past the 16 MiB expansion cap."""
    return gzip.compress(b"\0" * (20 * 1024 * 1024))


def not_an_archive() -> bytes:
    return b"this is not a package"


HOSTILE = {
    "zip_slip": zip_slip,
    "symlink_escape": symlink_escape,
    "absolute_path": absolute_path,
    "file_and_directory": file_and_directory,
    "unicode_duplicate": unicode_duplicate,
    "bomb": bomb,
    "not_an_archive": not_an_archive,
}


def memory_service(
    tmp: Path, *, limits: RateLimits = NO_LIMITS, admin_sha256: str | None = None, clock=None
) -> RegistryService:
    """A service over SQLite in ``tmp`` and in-memory blobs."""
    kwargs: dict[str, Any] = {"admin_token_sha256": admin_sha256, "limits": limits}
    if clock is not None:
        kwargs["clock"] = clock
    tmp.mkdir(parents=True, exist_ok=True)
    return RegistryService(SqliteMetadataStore(tmp / "registry.db"), MemoryBlobStore(), **kwargs)
