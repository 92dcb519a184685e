"""What a power cut could lose: every rename of ``add``, ``update``, ``install`` (restoring
from the cache), ``remove`` and ``sync`` checked against testing/power_cut.py's model.

A kill cannot show a missing ``fsync`` (the kernel keeps what it was handed), so these run
the real commands in process, through the SDK against a real registry on 127.0.0.1, and
check the order of their writes and ``fsync`` calls: contents before names, the journal
before any change, everything before the commit point (docs/lifecycle.md#crash-safety).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from splice_build.sdk import Splice
from testing.power_cut import power_cut_model
from testing.registry_server import RunningRegistry
from tests.faults.conftest import GREETER

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/fd")


def _splice(tmp_path: Path, server: RunningRegistry) -> Splice:
    home = tmp_path / "home"
    return Splice.init(tmp_path / "p", registry=server.url, home=home, env={})


def test_no_step_of_an_add_update_and_remove_depends_on_unsynced_data(
    served: RunningRegistry, tmp_path: Path
) -> None:
    splice = _splice(tmp_path, served)
    steps = [
        ("add (first package, new scope)", lambda: splice.add([f"{GREETER}@1.0.0"])),
        ("add (a range only)", lambda: splice.add([f"{GREETER}@^1.0.0"])),
        ("update (new subdirectory)", lambda: splice.update()),
        ("remove", lambda: splice.remove([GREETER])),
    ]
    for name, step in steps:
        with power_cut_model(splice.project_root, splice.home.path) as model:
            step()
        assert model.broken == [], name


def test_no_step_of_a_restore_from_the_cache_depends_on_unsynced_data(
    served: RunningRegistry, tmp_path: Path
) -> None:
    splice = _splice(tmp_path, served)
    splice.add([f"{GREETER}@1.1.0"])
    shutil.rmtree(splice.layout.packages_dir)

    with power_cut_model(splice.project_root, splice.home.path) as model:
        splice.install()

    assert model.broken == []
    assert [p.id for p in splice.installed()] == [GREETER]
