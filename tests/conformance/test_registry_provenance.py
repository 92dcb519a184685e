"""The registry records provenance at publish time: who published and how (account and token
type), when, and the hashes of the artifact and of the manifest it accepted; the record
matches the stored bytes and is served unchanged."""

from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import Path

from splice_build.registry.client.embedded import EmbeddedRegistryClient
from splice_build.spec.canonical import canonical_json
from splice_build.spec.digests import integrity_of
from testing.registry_fixtures import publish


def test_provenance_names_publisher_time_and_hashes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    publish(store, tmp_path / "work", namespace="acme", name="tool", version="1.2.3")
    client = EmbeddedRegistryClient(store)
    try:
        data = client.download("@acme/tool", "1.2.3")
        version = client.version("@acme/tool", "1.2.3")
        served = client.provenance("@acme/tool", "1.2.3")
    finally:
        client.close()
    record = version["provenance"]
    assert record["recorded"] is True
    assert (record["package"], record["version"]) == ("@acme/tool", "1.2.3")
    # The embedded store publishes as its local user without a token ("internal"); a served
    # registry records "token" (tests/registry/test_service.py::test_publish_then_read).
    assert record["publisher"] == {"user": version["publishedBy"], "via": "internal"}
    assert datetime.fromisoformat(record["publishedAt"].replace("Z", "+00:00"))
    assert record["artifact"]["integrity"] == integrity_of(data) == version["integrity"]
    assert record["artifact"]["size"] == len(data) == version["size"]
    manifest_bytes = canonical_json(version["manifest"]).encode("utf-8")
    assert record["manifestSha256"] == hashlib.sha256(manifest_bytes).hexdigest()
    assert served["provenance"] == record
