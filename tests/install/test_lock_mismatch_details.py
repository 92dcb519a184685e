"""``LOCK_MISMATCH`` says what the lock pins in words: a lock entry that records no size (an
older lock, or one written by hand) was shown as 'splice.lock: sha256-… (None bytes)'."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpliceError
from splice_build.sdk import Splice
from testing.registry_fixtures import embedded_store, new_project, publish

OTHER_BYTES = "sha256-" + "0" * 64


def test_a_lock_entry_without_a_size_is_named_without_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    published = publish(embedded_store(home), tmp_path / "pkgs")
    project = new_project(tmp_path / "project")
    Splice(project, registry="embedded:", home=home).add(["@acme/greeter"])
    lock_path = project / "splice.lock"
    lock = json.loads(lock_path.read_text())
    entry = lock["packages"]["@acme/greeter"]
    del entry["size"]
    entry["integrity"] = OTHER_BYTES
    lock_path.write_text(json.dumps(lock))
    shutil.rmtree(project / ".splice")
    with pytest.raises(SpliceError) as caught:
        Splice(project, registry="embedded:", home=home).install()
    assert caught.value.code is ErrorCode.LOCK_MISMATCH
    assert caught.value.details == (
        f"splice.lock: {OTHER_BYTES} (no size)",
        f"registry has {published['integrity']} ({published['size']} bytes)",
    )
