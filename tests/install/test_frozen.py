"""`splice install --frozen` of a splice.json the lock does not cover (docs/cli.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpliceError
from splice_build.sdk import Splice
from testing.registry_fixtures import new_project


def test_a_package_the_lock_does_not_cover_says_how_to_lock_it(tmp_path: Path) -> None:
    """LOCK_MISMATCH "splice.lock does not cover splice.json", the package as its detail,
    and no hint: a CI job's author was left to find out that `--frozen` is the one thing to
    drop where the lock is made."""
    project = new_project(tmp_path / "p", {"@acme/greeter": "^1.0.0"})
    with pytest.raises(SpliceError) as refused, Splice(project, hints="cli") as splice:
        splice.install(frozen=True)
    error = refused.value
    assert (error.code, error.details) == (ErrorCode.LOCK_MISMATCH, ("@acme/greeter",))
    assert error.hint == (
        "Lock them where they may be resolved: `splice install` (without --frozen), then "
        "commit splice.lock."
    )
    assert not (project / "splice.lock").exists()
