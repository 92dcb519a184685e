"""Two runtime statements no other test checked: names resolve through the operating system
resolver (hosts file included) and a private answer from it is refused; a package's own
directory is always readable while its neighbours are not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from splice_build.runtime import SpliceRuntime
from testing.hostile_packages import write_package
from testing.hosts_scenarios import HOSTS_FILE, PRIVATE_ADDRESS, PRIVATE_NAME, PUBLIC_NAME
from testing.netns import run_in_private_netns

pytestmark = pytest.mark.node


def test_a_hosts_file_entry_pointing_at_a_private_address_is_refused() -> None:
    """A public answer from the same hosts file is reached (the file is really used); the
    private one is refused, by the host-side session and by a sandboxed tool's fetch."""
    outcome = run_in_private_netns(
        "hosts_file_entries", module="testing.hosts_scenarios", hosts=HOSTS_FILE
    )
    private_url, public_url = outcome["urls"]
    assert PRIVATE_NAME in private_url and PUBLIC_NAME in public_url
    refusal = f'"{PRIVATE_NAME}" is denied: it resolves to {PRIVATE_ADDRESS}'
    for side in ("python", "sandbox"):
        assert refusal in outcome[side][private_url], (side, outcome)
        assert outcome[side][public_url] == "status 200", (side, outcome)
    assert outcome["sandbox"][private_url].startswith("ERR_ACCESS_DENIED ")
    assert all(host.startswith(f"{PUBLIC_NAME}:") for host in outcome["seen"]), outcome
    assert len(outcome["seen"]) == 2


READ_OWN_FILES = (
    "import fs from 'node:fs'; export default (i, ctx) => {"
    " const own = fs.readFileSync(ctx.paths.package + '/SKILL.md', 'utf8').length > 0"
    "   && fs.readdirSync(ctx.paths.package + '/tools').includes('t.mjs')"
    "   && JSON.parse(fs.readFileSync(ctx.paths.package + '/manifest.json', 'utf8')).name;"
    " let neighbour; try { fs.readFileSync(ctx.paths.package + '/../other/SKILL.md'); neighbour = 'read'; }"
    " catch (e) { neighbour = e.code; }"
    " return { own, neighbour }; };"
)


def test_a_package_reads_its_own_directory_and_nothing_next_to_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "splice.json").write_text(json.dumps({"packages": {}}) + "\n")
    write_package(tmp_path / "pkgs", "export default () => 1;", name="other")
    package = write_package(tmp_path / "pkgs", READ_OWN_FILES, name="reader")
    runtime = SpliceRuntime(project_root=project, env={})
    result = runtime.execute(runtime.load(package), "t", {})
    assert result.ok, result.to_json()
    assert result.output == {"own": "reader", "neighbour": "ERR_ACCESS_DENIED"}
