"""``splice update`` of packages from two registries on a full disk changes nothing.

The project lives on a real size-capped tmpfs (testing/faults.py); ``SPLICE_HOME``, where the
artifacts are cached, does not, so every download succeeds and the disk fills up while the
packages are put in place: the first registry's small package fits, the second's 600 kB file
does not. Each package was swapped in and locked by a transaction of its own (and, before
that, by one run per registry), so ``DISK_FULL`` came after the first had been updated and
locked; now every package is staged before one transaction swaps them all in and writes
``splice.lock`` once. Both registries are crafted ones on 127.0.0.1.
"""

from __future__ import annotations

import json
from pathlib import Path

from testing.crafted_registry import crafted_registry
from testing.faults import fill, small_disk, unfill
from tests.faults.conftest import BIG, leftovers, needs_namespaces, snapshot


@needs_namespaces
def test_update_from_two_registries_on_a_full_disk_changes_nothing(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    with (
        crafted_registry(tmp_path / "a") as first,
        crafted_registry(tmp_path / "b") as second,
        small_disk(disk) as ns,
    ):
        first.add_version("@acme/first", "1.0.0")
        first.list_versions("@acme/first", ["1.0.0"])
        second.add_version("@beta/second", "1.0.0")
        second.list_versions("@beta/second", ["1.0.0"])
        project = disk / "p"
        ns.sh(f"mkdir -p {project}")
        (ns.view(project) / "splice.json").write_text('{"specVersion": 1, "packages": {}}\n')
        for registry, name in ((first, "@acme/first"), (second, "@beta/second")):
            added = ns.splice("add", name, cwd=project, env={"SPLICE_REGISTRY": registry.url})
            assert added.code == 0, added.stderr
        first.add_version("@acme/first", "1.1.0")
        first.list_versions("@acme/first", ["1.0.0", "1.1.0"])
        second.add_version("@beta/second", "1.1.0", files={"data/big.bin": BIG})
        second.list_versions("@beta/second", ["1.0.0", "1.1.0"])
        fill(ns, disk, leave=300_000)
        before = snapshot(ns.view(project))
        done = ns.splice("--json", "update", cwd=project)
        assert done.code == 1, (done.stdout, done.stderr)
        assert json.loads(done.stdout)["error"]["code"] == "DISK_FULL", done.stdout
        assert "Traceback" not in done.stderr
        assert snapshot(ns.view(project)) == before
        assert leftovers(ns.view(project)) == []

        unfill(ns, disk)
        again = ns.splice("--json", "update", cwd=project)
        assert again.code == 0, again.stdout + again.stderr
        assert [row["to"] for row in json.loads(again.stdout)] == ["1.1.0", "1.1.0"]
        lock = json.loads((ns.view(project) / "splice.lock").read_text(encoding="utf-8"))
        assert {p["registry"] for p in lock["packages"].values()} == {first.url, second.url}
