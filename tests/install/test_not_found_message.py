"""A package the registry does not have is named with the registry a person can read."""

from __future__ import annotations

from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, RegistryError
from splice_build.install.resolve import published_versions
from splice_build.registry.client.embedded import EmbeddedRegistryClient


def test_a_package_missing_from_the_embedded_registry_names_it_in_words(tmp_path: Path) -> None:
    # The message read "was not found in embedded:", the pseudo URL, like a cut-off sentence.
    client = EmbeddedRegistryClient(tmp_path / "store")
    try:
        with pytest.raises(RegistryError) as raised:
            published_versions(client, "@acme/nothing")
    finally:
        client.close()
    assert raised.value.code is ErrorCode.PACKAGE_NOT_FOUND
    assert raised.value.message == "Package @acme/nothing was not found in the embedded registry"
