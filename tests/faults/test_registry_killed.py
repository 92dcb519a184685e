"""The registry server killed with SIGKILL in the middle of a download and of a publish.

A relay on 127.0.0.1 (testing.faults.CuttingProxy) passes the stream through until part of
the 600 kB body has gone by, then holds it while the test SIGKILLs the real
``splice registry serve``; the client then sees the connection die mid-body. The client
must fail coded with nothing installed or cached from the partial bytes; the server's data
directory must hold no partial artifact nor a version without its artifact; and with the
server started again on the same data the same command converges.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from testing.cli import run_splice, splice_executable
from testing.faults import CuttingProxy
from testing.packages import minimal_manifest, write_package
from testing.registry_server import RunningRegistry, registry_server, user_token
from tests.faults.conftest import BIG, GREETER, leftovers, publish_greeter, snapshot

BOB = "@bob/big"
CUT = 200_000  # bytes of the 600 kB body that get through


def _port(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


def _killed_while(
    argv: list[str],
    proxy: CuttingProxy,
    server: RunningRegistry,
    cwd: Path,
    env: dict | None = None,
):
    """Run ``splice ARGV`` through ``proxy``; SIGKILL ``server`` once the cut is reached."""
    import os

    child = subprocess.Popen(
        [splice_executable(), *argv],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proxy.reached.wait(30), "the stream never reached the cut"
        server.kill()
        proxy.release.set()
        out, err = child.communicate(timeout=60)
    finally:
        proxy.close()
        if child.poll() is None:
            child.kill()
            child.wait()
    return child.returncode, out, err


def _registry_files(data: Path) -> dict[str, bytes]:
    """The data directory's artifacts (the SQLite files change with every request)."""
    return {
        k: v
        for k, v in snapshot(data).items()
        if ".sqlite" not in k and not k.endswith(("-wal", "-shm", ".db"))
    }


def test_server_killed_mid_download_leaves_the_project_and_cache_as_they_were(
    tmp_path: Path,
) -> None:
    import os

    home = Path(os.environ["SPLICE_HOME"])
    store = tmp_path / "registry-data"
    publish_greeter(store, tmp_path / "pkgs")
    project = tmp_path / "p"
    project.mkdir()
    assert run_splice("init", cwd=project).code == 0
    with registry_server(store, admin=False) as server:
        assert (
            run_splice("--registry", server.url, "add", f"{GREETER}@1.0.0", cwd=project).code == 0
        )
        before, cache_before = snapshot(project), snapshot(home / "cache")
        proxy = CuttingProxy(_port(server.url), cut_after=CUT, direction="down")
        code, out, err = _killed_while(
            ["--json", "--registry", proxy.url, "add", f"{GREETER}@1.1.0"], proxy, server, project
        )
    assert code == 1, (out, err)
    assert json.loads(out)["error"]["code"] == "REGISTRY_UNREACHABLE", out
    assert "Traceback" not in err
    assert snapshot(project) == before
    assert snapshot(home / "cache") == cache_before  # no partial artifact cached
    assert leftovers(project, home) == []

    with registry_server(store, admin=False) as again:
        done = run_splice("--registry", again.url, "add", f"{GREETER}@1.1.0", cwd=project)
        assert done.code == 0, done.stderr
    assert (project / ".splice/packages/@acme/greeter/data/big.bin").read_bytes() == BIG


def test_server_killed_mid_publish_stores_nothing_and_a_new_publish_converges(
    tmp_path: Path,
) -> None:
    store = tmp_path / "registry-data"
    first = write_package(tmp_path / "big-1", minimal_manifest(namespace="bob", name="big"))
    package = write_package(
        tmp_path / "big-2",
        minimal_manifest(namespace="bob", name="big", version="2.0.0"),
        {"data/big.bin": BIG},
    )
    with registry_server(store) as server:
        token = user_token(server, "bob")
        done = run_splice(
            "--registry", server.url, "publish", str(first), env={"SPLICE_TOKEN": token}
        )
        assert done.code == 0, done.stderr
        files_before = _registry_files(store)
        proxy = CuttingProxy(_port(server.url), cut_after=CUT, direction="up")
        code, out, err = _killed_while(
            ["--json", "--registry", proxy.url, "publish", str(package)],
            proxy,
            server,
            tmp_path,
            env={"SPLICE_TOKEN": token},
        )
    assert code == 1, (out, err)
    assert json.loads(out)["error"]["code"] == "REGISTRY_UNREACHABLE", out
    assert "Traceback" not in err
    assert _registry_files(store) == files_before  # no partial artifact on the server
    assert leftovers(store) == []

    with registry_server(store) as again:
        versions = run_splice("--json", "--registry", again.url, "info", BOB)
        assert versions.code == 0, versions.stderr
        assert "2.0.0" not in json.dumps(versions.json())  # no version without its artifact
        done = run_splice(
            "--registry", again.url, "publish", str(package), env={"SPLICE_TOKEN": token}
        )
        assert done.code == 0, done.stderr
        project = tmp_path / "p"
        project.mkdir()
        assert run_splice("init", cwd=project).code == 0
        added = run_splice("--registry", again.url, "add", f"{BOB}@2.0.0", cwd=project)
        assert added.code == 0, added.stderr
    assert (project / ".splice/packages/@bob/big/data/big.bin").read_bytes() == BIG
