"""A package granted as many write paths as a manifest may list runs, through the real
`splice` binary and a registry served on 127.0.0.1; a run its grants cannot take is refused
before anything is made.

The record of write grants (project/grant_record.py) held 512 entries while a manifest may
list 1,000 (permissions.schema.json): such a package installed, then every run was
``NOT_WRITABLE``, after the runtime had made its 1,000 directories. Node's command line,
one ``--allow-fs-*`` flag a grant, is the other place the lists go: long ones did not fit,
and the start failed (``TOOL_CRASHED``) after the directories were made too."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from splice_build.project.grant_record import RECORD_NAME, max_entries, read_records
from splice_build.runtime.isolation.support import detect
from splice_build.runtime.isolation.view_room import MOST_VIEW_PATHS
from splice_build.spec.paths import MAX_RELATIVE_PATH
from testing.cli import Completed, run_splice
from testing.isolation import os_layer_missing
from testing.manifests import MOST_ENTRIES, deep_grants
from testing.packages import minimal_manifest, write_package
from testing.registry_fixtures import new_project, publish
from testing.registry_server import RunningRegistry, registry_server

pytestmark = pytest.mark.node

WIDE = [f"out/d{number}" for number in range(MOST_ENTRIES)]


def _longest(prefix: str, number: int) -> str:
    """A grant of ``MAX_RELATIVE_PATH`` UTF-16 units, three bytes each in UTF-8."""
    segment = "\u4e00" * ((MAX_RELATIVE_PATH - 2) // 3)
    head = f"{prefix}{number:04d}"
    return "/".join([head + segment[len(head) :], segment, segment])


LONG = {
    "write": [_longest("w", n) for n in range(MOST_ENTRIES)],
    "read": [_longest("r", n) for n in range(MOST_ENTRIES)],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningRegistry]:
    root = tmp_path_factory.mktemp("write-grants")
    publish(root / "data", root / "work", name="wide", permissions={"fs": {"write": WIDE}})
    publish(root / "data", root / "work", name="narrow", permissions={"fs": {"write": ["notes"]}})
    with registry_server(root / "data", admin=False) as running:
        yield running


def _run(server: RunningRegistry, project: Path, tool: str) -> Completed:
    return run_splice("--registry", server.url, "--json", "run", tool, "name=x", cwd=project)


def test_a_package_granted_the_most_write_paths_runs(
    server: RunningRegistry, tmp_path: Path
) -> None:
    """It runs, and its grants fill the record: another package's run is then refused, and
    its grant ``notes`` was made before the refusal."""
    project = new_project(tmp_path / "p")
    added = run_splice(
        "--registry", server.url, "add", "@acme/wide", "@acme/narrow", "--accept-permissions",
        cwd=project,
    )  # fmt: skip
    assert added.code == 0, added.stderr
    done = _run(server, project, "wide.hello")
    assert done.code == 0, done.stdout + done.stderr
    assert done.json()["output"] == {"message": "Hello, x."}
    recorded = read_records(project / ".splice" / RECORD_NAME)
    assert sorted(entry.grant for entry in recorded) == sorted(WIDE)
    assert len(recorded) == max_entries()
    refused = _run(server, project, "narrow.hello")
    assert (refused.code, refused.json()["error"]["code"]) == (1, "NOT_WRITABLE"), refused.stdout
    assert not (project / "notes").exists()


def test_grants_over_what_node_may_be_started_with_are_refused_before_anything_is_made(
    tmp_path: Path,
) -> None:
    """1,000 read and 1,000 write paths of the longest a grant may be: Node's command line
    would not fit, and ``splice run --dir`` says so before it makes any of the directories."""
    package = write_package(
        tmp_path / "long",
        files={  # as its author writes it: escaped, it is over the 2 MiB a file may be
            "manifest.json": json.dumps(
                minimal_manifest(name="long", permissions={"fs": LONG}), ensure_ascii=False
            )
        },
    )
    work = tmp_path / "work"
    work.mkdir()
    done = run_splice("--json", "run", "--dir", str(package), "long.hello", "name=x", cwd=work)
    assert (done.code, done.json()["error"]["code"]) == (1, "RUNTIME_UNSUPPORTED"), done.stdout
    assert "Node command line" in done.json()["error"]["message"]
    assert list(work.iterdir()) == []


def test_deep_read_and_write_grants_fit_the_file_view(tmp_path: Path) -> None:
    """34 grants 128 directories deep, half read, half written: the tool's file view makes
    every directory on the way to each (4,352), past the 4,096 inodes its tmpfs held, and
    holding each open it needed a descriptor apiece. The start failed (``TOOL_CRASHED``,
    "Exception occurred in preexec_fn") after the write grants were made; the tmpfs is now
    sized from the view, and the view holds as many descriptors as one path is deep, so the
    tool runs under a hard open-file limit of 1,024."""
    read, write = deep_grants(34)[:17], deep_grants(34)[17:]
    package = write_package(
        tmp_path / "deep",
        minimal_manifest(name="deep", permissions={"fs": {"read": read, "write": write}}),
    )
    work = tmp_path / "work"
    for grant in read:
        (work / grant).mkdir(parents=True)
    done = run_splice(
        "--json", "run", "--dir", str(package), "deep.hello", "name=x",
        cwd=work, open_files=(1024, 1024),
    )  # fmt: skip
    assert done.code == 0, done.stdout + done.stderr
    assert done.json()["isolation"]["fileView"] == "minimal"
    assert done.json()["output"] == {"message": "Hello, x."}


def test_grants_over_what_a_file_view_may_hold_are_refused_before_anything_is_made(
    tmp_path: Path,
) -> None:
    """Grants whose directories would take the file view past ``MOST_VIEW_PATHS`` (each is
    kernel memory in every tool process: the schema's most took 312 MiB and 10 s a start) are
    refused before any of them is made, naming the bound, rather than made and then failing
    the start."""
    if not detect().file_view:
        os_layer_missing("no file view here: no bound to reach")
    grants = deep_grants(MOST_VIEW_PATHS // 128 + 4)
    package = write_package(
        tmp_path / "deep", minimal_manifest(name="deep", permissions={"fs": {"write": grants}})
    )
    work = tmp_path / "work"
    work.mkdir()
    done = run_splice("--json", "run", "--dir", str(package), "deep.hello", "name=x", cwd=work)
    assert (done.code, done.json()["error"]["code"]) == (1, "RUNTIME_UNSUPPORTED"), done.stdout
    assert f"over the {MOST_VIEW_PATHS} a tool's view may hold" in done.json()["error"]["message"]
    assert list(work.iterdir()) == []
