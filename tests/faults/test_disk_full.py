"""A full disk (a real size-capped tmpfs, ENOSPC from the kernel) while adding, installing
and syncing.

The project and SPLICE_HOME live on the small disk; the registry is a real server on
127.0.0.1. The disk is filled up to ``leave`` free bytes so the failing write lands at
different points: the download's cache entry, the staging copy, the graph's database. Each run must end
with DISK_FULL, the project and cache exactly as before, no temp file, and the same command
succeeding once the filler is deleted.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from testing.faults import Namespace, fill, small_disk, unfill
from testing.registry_server import RunningRegistry
from tests.faults.conftest import BIG, GREETER, leftovers, needs_namespaces, snapshot

pytestmark = needs_namespaces

# 0: no write gets a byte; 300 kB: the 600 kB cache entry, then the staging copy of the
# 600 kB file, fail part-way (a half-written file to clean up).
LEAVES = [0, 300_000]


def _setup(ns: Namespace, disk: Path, server: RunningRegistry) -> tuple[Path, Path, dict]:
    home, project = disk / "home", disk / "p"
    ns.sh(f"mkdir -p {home} {project}")
    env = {"SPLICE_HOME": str(home), "SPLICE_REGISTRY": server.url}
    assert ns.splice("init", cwd=project, env=env).code == 0
    done = ns.splice("add", f"{GREETER}@1.0.0", cwd=project, env=env)
    assert done.code == 0, done.stderr
    return home, project, env


def _listed(ns: Namespace, project: Path, env: dict) -> list[tuple[str, str]]:
    done = ns.splice("--json", "list", cwd=project, env=env)
    assert done.code == 0, done.stdout + done.stderr
    return [(row["version"], row["status"]) for row in done.json()]


def _assert_failed_cleanly(
    done, ns: Namespace, disk: Path, before: dict[str, bytes], code: str = "DISK_FULL"
) -> None:
    assert done.code == 1 and done.stdout, (done.stdout, done.stderr)
    assert json.loads(done.stdout)["error"]["code"] == code, done.stdout
    assert "Traceback" not in done.stderr
    assert snapshot(ns.view(disk)) == before
    assert leftovers(ns.view(disk)) == []


@pytest.mark.parametrize("leave", LEAVES)
def test_add_on_a_full_disk_keeps_the_old_version_then_converges(
    served: RunningRegistry, tmp_path: Path, leave: int
) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    with small_disk(disk) as ns:
        _home, project, env = _setup(ns, disk, served)
        fill(ns, disk, leave=leave)
        before = snapshot(ns.view(disk))
        done = ns.splice("--json", "add", f"{GREETER}@1.1.0", cwd=project, env=env)
        _assert_failed_cleanly(done, ns, disk, before)
        assert _listed(ns, project, env) == [("1.0.0", "ok")]  # the old install is intact

        unfill(ns, disk)
        again = ns.splice("--json", "add", f"{GREETER}@1.1.0", cwd=project, env=env)
        assert again.code == 0, again.stdout + again.stderr
        view = ns.view(project)
        assert (view / ".splice/packages/@acme/greeter/data/big.bin").read_bytes() == BIG
        assert json.loads((view / "splice.json").read_text())["packages"] == {GREETER: "1.1.0"}
        assert _listed(ns, project, env) == [("1.1.0", "ok")]
        assert leftovers(ns.view(disk)) == []


@pytest.mark.parametrize("leave", LEAVES)
def test_install_from_the_lock_on_a_full_disk_then_converges(
    served: RunningRegistry, tmp_path: Path, leave: int
) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    with small_disk(disk) as ns:
        home, project, env = _setup(ns, disk, served)
        assert ns.splice("add", f"{GREETER}@1.1.0", cwd=project, env=env).code == 0
        # A fresh clone: splice.json and splice.lock only, an empty cache.
        ns.sh(f"rm -rf {project}/.splice {home}/cache")
        fill(ns, disk, leave=leave)
        before = snapshot(ns.view(disk))
        done = ns.splice("--json", "install", cwd=project, env=env)
        _assert_failed_cleanly(done, ns, disk, before)

        unfill(ns, disk)
        again = ns.splice("--json", "install", cwd=project, env=env)
        assert again.code == 0, again.stdout + again.stderr
        assert (
            ns.view(project) / ".splice/packages/@acme/greeter/data/big.bin"
        ).read_bytes() == BIG
        assert _listed(ns, project, env) == [("1.1.0", "ok")]
        assert leftovers(ns.view(disk)) == []


def test_sync_on_a_full_disk_fails_each_project_coded_then_converges(
    served: RunningRegistry, tmp_path: Path
) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    with small_disk(disk) as ns:
        home, root = disk / "home", disk / "ws"
        env = {"SPLICE_HOME": str(home), "SPLICE_REGISTRY": served.url}
        members = [root / "packages" / f"p{i}" for i in range(3)]
        ns.sh(f"mkdir -p {home} " + " ".join(str(m) for m in members))
        (ns.view(root) / "pyproject.toml").write_text(
            '[tool.splice.workspace]\nmembers = ["packages/*"]\n', encoding="utf-8"
        )
        for member in members:
            (ns.view(member) / "splice.json").write_text(
                json.dumps({"specVersion": 1, "packages": {GREETER: "1.0.0"}}), encoding="utf-8"
            )
        first = ns.splice("--json", "sync", "-j", "2", cwd=root, env=env)
        assert first.code == 0, first.stdout + first.stderr
        for member in members:
            spec = ns.view(member) / "splice.json"
            spec.write_text(spec.read_text().replace('"1.0.0"', '"1.1.0"'), encoding="utf-8")
        fill(ns, disk, leave=4096)
        before = snapshot(ns.view(disk))
        done = ns.splice("--json", "sync", "-j", "2", cwd=root, env=env)
        assert done.code == 1 and done.stdout, (done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        result = done.json()
        if "projects" in result:  # the projects' own writes failed, each alone
            errors = {p["error"]["code"] for p in result["projects"] if p.get("error")}
        else:  # or the graph's final save of its cache did, for the whole run
            errors = {result["error"]["code"]}
        assert errors == {"DISK_FULL"}, done.stdout
        assert snapshot(ns.view(disk)) == before
        assert leftovers(ns.view(disk)) == []

        unfill(ns, disk)
        again = ns.splice("--json", "sync", "-j", "2", cwd=root, env=env)
        assert again.code == 0, again.stdout + again.stderr
        for member in members:
            assert _listed(ns, member, env) == [("1.1.0", "ok")]
        assert leftovers(ns.view(disk)) == []


def test_a_file_size_limit_fails_coded_instead_of_killing_the_install(
    served: RunningRegistry, tmp_path: Path
) -> None:
    """``ulimit -f`` (RLIMIT_FSIZE): Python ignores SIGXFSZ, so the write fails with EFBIG."""
    import resource
    import subprocess

    from testing.cli import splice_executable

    project = tmp_path / "p"
    project.mkdir()
    env = {**os.environ, "SPLICE_REGISTRY": served.url}
    for argv in (["init"], ["add", f"{GREETER}@1.0.0"]):
        assert subprocess.run([splice_executable(), *argv], cwd=project, env=env).returncode == 0
    home = Path(os.environ["SPLICE_HOME"])
    before = snapshot(project), snapshot(home)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))

    done = subprocess.run(
        [splice_executable(), "--json", "add", f"{GREETER}@1.1.0"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit,
    )
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert json.loads(done.stdout)["error"]["code"] == "DISK_FULL", done.stdout
    assert (snapshot(project), snapshot(home)) == before
    assert leftovers(project, home) == []
    again = subprocess.run([splice_executable(), "add", f"{GREETER}@1.1.0"], cwd=project, env=env)
    assert again.returncode == 0
    assert (project / ".splice/packages/@acme/greeter/data/big.bin").read_bytes() == BIG


def test_a_token_file_on_a_full_disk_is_disk_full_and_the_token_revoked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``registry admin create-token --out`` onto a full disk was USAGE (exit 2), hinted to
    read ``splice registry --help``; it is DISK_FULL, exit 1, as every write's."""
    from splice_build.cli.main import main

    disk, data = tmp_path / "disk", tmp_path / "data"
    disk.mkdir()
    data.mkdir()
    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    assert main(["registry", "admin", "create-user", "alice", "--data", str(data)]) == 0
    with small_disk(disk, size="64k") as ns:
        fill(ns, disk)
        out = ["--out", str(disk / "token")]
        done = ns.splice(
            "--json",
            "registry",
            "admin",
            "create-token",
            "alice",
            "--data",
            str(data),
            *out,
            cwd=tmp_path,
        )
        assert leftovers(ns.view(disk)) == []
    assert done.code == 1, done.stdout + done.stderr
    error = done.json()["error"]
    assert error["code"] == "DISK_FULL", error
    assert error["message"].endswith("; the token was revoked"), error
