"""The verification policy: order, fail-closed skipping, and the codes each failure maps to."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpliceError
from splice_build.install.checks import AllOf, Candidate, Expected, artifact_policy, verify_artifact
from splice_build.install.signature_check import SignatureValid
from splice_build.spec.archive import pack_archive
from splice_build.spec.digests import integrity_of
from testing.packages import minimal_manifest

HELLO = b"export default function hello(input) { return { message: `Hello, ${input.name}.` }; }\n"


def _files(**overrides: object) -> dict[str, bytes]:
    return {
        "manifest.json": json.dumps(minimal_manifest(**overrides)).encode(),
        "SKILL.md": b"# Greeter\n\nSays hello.\n",
        "tools/hello.js": HELLO,
    }


def _expected(data: bytes, **kw: object) -> Expected:
    fields: dict[str, object] = {
        "package_id": "@acme/greeter",
        "version": "1.0.0",
        "integrity": integrity_of(data),
        "size": len(data),
        "manifest": minimal_manifest(),
    }
    fields.update(kw)
    return Expected(**fields)  # type: ignore[arg-type]


def test_a_valid_artifact_passes_every_check() -> None:
    data = pack_archive(_files())
    verified = verify_artifact(data, _expected(data), SignatureValid(()))
    assert verified.manifest.id == "@acme/greeter"
    assert set(verified.files) == {"manifest.json", "SKILL.md", "tools/hello.js"}
    report = artifact_policy(SignatureValid(())).report(Candidate(data, _expected(data)))
    assert [(r.id, r.status) for r in report.results] == [
        ("sha256", "passed"),
        ("size", "passed"),
        ("package", "passed"),
        ("metadata", "passed"),
        ("signature", "skipped"),
    ]


def test_tampered_bytes_fail_sha256_and_skip_the_rest() -> None:
    data = pack_archive(_files())
    tampered = pack_archive({**_files(), "SKILL.md": b"# Evil\n\nNot the published text.\n"})
    report = artifact_policy(SignatureValid(())).report(Candidate(tampered, _expected(data)))
    assert report.results[0].status == "failed"
    assert all(r.status == "skipped" and "not run" in r.message for r in report.results[1:])
    with pytest.raises(SpliceError) as info:
        verify_artifact(tampered, _expected(data), SignatureValid(()))
    assert info.value.code is ErrorCode.INTEGRITY_MISMATCH


def test_wrong_size_is_an_integrity_mismatch() -> None:
    data = pack_archive(_files())
    with pytest.raises(SpliceError) as info:
        verify_artifact(data, _expected(data, size=len(data) + 1), SignatureValid(()))
    assert info.value.code is ErrorCode.INTEGRITY_MISMATCH


def test_lying_metadata_is_an_invalid_package() -> None:
    data = pack_archive(_files())
    lie = minimal_manifest(description="Something else entirely.")
    with pytest.raises(SpliceError) as info:
        verify_artifact(data, _expected(data, manifest=lie), SignatureValid(()))
    assert info.value.code is ErrorCode.INVALID_PACKAGE
    assert any(d.startswith("metadata:") for d in info.value.details)


def test_impostor_manifest_is_an_invalid_package() -> None:
    data = pack_archive(_files(namespace="evil"))
    with pytest.raises(SpliceError) as info:
        verify_artifact(data, _expected(data, manifest=None), SignatureValid(()))
    assert info.value.code is ErrorCode.INVALID_PACKAGE
    assert "@evil/greeter@1.0.0" in " ".join(info.value.details)


def test_unsafe_archive_is_an_invalid_package() -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escape.js")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    data = buffer.getvalue()
    with pytest.raises(SpliceError) as raised:
        verify_artifact(data, _expected(data), SignatureValid(()))
    assert raised.value.code is ErrorCode.INVALID_PACKAGE


def test_require_signed_refuses_an_unsigned_artifact() -> None:
    data = pack_archive(_files())
    with pytest.raises(SpliceError) as info:
        verify_artifact(data, _expected(data, require_signed=True), SignatureValid(()))
    assert info.value.code is ErrorCode.SIGNATURE_REQUIRED


def test_an_empty_policy_fails(tmp_path: Path) -> None:
    data = pack_archive(_files())
    with pytest.raises(SpliceError):
        AllOf([]).check(Candidate(data, _expected(data)))
