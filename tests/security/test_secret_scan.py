"""`splice secret-scan`: planted keys of every known format and configured values are found,
reported as path:line and kind without the secret; this repository is clean."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from splice_build.security.secret_scan import KEY_FORMATS, scan_paths, scan_text
from splice_build.spec.pack import pack_directory
from testing.cli import run_splice
from testing.credentials import planted
from testing.credentials import random_text as _random

REPO = Path(__file__).resolve().parents[2]


def _git_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(
        ["git", "-C", str(root), "add", *[n for n in files if not n.startswith("untracked")]],
        check=True,
    )
    return root


def test_every_known_format_is_found_without_showing_it(tmp_path: Path) -> None:
    keys = planted()
    assert set(keys) == set(KEY_FORMATS)
    files = {
        f"src/{i}.txt": f"line one\nvalue = '{value}'\n" for i, value in enumerate(keys.values())
    }
    files["untracked.txt"] = keys["GitHub token"]
    repo = _git_repo(tmp_path / "repo", files)
    report = scan_paths([(repo, "repo")])
    found = {(f.path, f.line, f.kind) for f in report.findings}
    expected = {(f"repo/src/{i}.txt", 2, kind) for i, kind in enumerate(keys)}
    assert found == expected
    done = run_splice("secret-scan", "repo", cwd=tmp_path)
    assert done.code == 1
    assert "repo/src/2.txt:2: GitHub token" in done.stdout
    for value in keys.values():
        for piece in value.splitlines():
            assert piece not in done.stdout + done.stderr


def test_configured_values_build_output_and_packed_packages(tmp_path: Path) -> None:
    value = "custom-" + _random(24)
    project = tmp_path / "project"
    (project / "dist").mkdir(parents=True)
    (project / ".env.local").write_text(f"TAVILY_API_KEY={value}\n", encoding="utf-8")
    (project / "dist" / "bundle.js").write_text(f"const k = '{value}';\n", encoding="utf-8")
    package = project / "pkg"
    (package / "tools").mkdir(parents=True)
    manifest = {
        "specVersion": 1, "namespace": "t", "name": "leaky", "version": "1.0.0", "description": "A leaky package.",
        "tools": [{"name": "t", "description": "A tool.", "entry": "tools/t.mjs", "input": {"type": "object"}}],
    }  # fmt: skip
    (package / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (package / "SKILL.md").write_text("# leaky\n", encoding="utf-8")
    (package / "tools" / "t.mjs").write_text(
        f"export default () => ({{}});\n// {planted()['GitHub token']}\n", encoding="utf-8"
    )
    (project / "leaky.tar.gz").write_bytes(pack_directory(package).archive)
    done = run_splice("secret-scan", "dist", "leaky.tar.gz", "--json", cwd=project)
    assert done.code == 1, done.stderr
    findings = done.json()["findings"]
    assert {
        "path": "dist/bundle.js",
        "line": 1,
        "kind": "configured value of TAVILY_API_KEY",
    } in findings
    assert {"path": "leaky.tar.gz!tools/t.mjs", "line": 2, "kind": "GitHub token"} in findings
    assert value not in done.stdout + done.stderr
    # dist/bundle.js and the package's three members were scanned; two of them hold secrets.
    assert (done.json()["files"], done.json()["filesWithSecrets"], len(findings)) == (4, 2, 2)
    human = run_splice("secret-scan", "dist", "leaky.tar.gz", cwd=project)
    assert human.code == 1
    assert human.stderr.splitlines()[-1] == "2 secrets found in 2 of 4 files scanned"


def test_a_clean_scan_says_how_many_files_it_read(tmp_path: Path) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text("nothing to see\n", encoding="utf-8")
    done = run_splice("secret-scan", ".", cwd=tmp_path)
    assert (done.code, done.stdout) == (0, "No secrets found; 3 files scanned\n")
    machine = run_splice("--json", "secret-scan", ".", cwd=tmp_path)
    assert machine.json() == {"ok": True, "files": 3, "filesWithSecrets": 0, "findings": []}


def test_scanning_a_checkout_never_runs_its_git_config(tmp_path: Path) -> None:
    """An untrusted checkout (an archive of a repository) carries its .git/config, and
    core.fsmonitor is a command git ls-files runs: scanning it ran that command."""
    repo = _git_repo(tmp_path / "repo", {"a.txt": "nothing to see\n"})
    ran = tmp_path / "ran"
    subprocess.run(
        ["git", "-C", str(repo), "config", "core.fsmonitor", f"touch '{ran}'; false"], check=True
    )
    done = run_splice("secret-scan", str(repo))
    assert (done.code, done.stdout) == (0, "No secrets found; 1 file scanned\n"), done.stderr
    assert not ran.exists(), "the checkout's core.fsmonitor command ran"


def test_an_index_entry_under_a_linked_directory_is_not_read(tmp_path: Path) -> None:
    """git lists its index, not the tree: a checkout's index can name ``a/id`` while ``a`` is
    a link to a directory elsewhere (here one holding a key); the scan reads no file through
    a link, so it neither reports nor reads it."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "id").write_text(planted()["PEM private key"] + "\n", encoding="utf-8")
    repo = _git_repo(tmp_path / "repo", {"a.txt": "nothing to see\n"})
    blob = (
        subprocess.run(
            ["git", "-C", str(repo), "hash-object", "-w", "--stdin"],
            input=b"nothing\n",
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    subprocess.run(
        ["git", "-C", str(repo), "update-index", "--add", "--cacheinfo", f"100644,{blob},a/id"],
        check=True,
    )
    (repo / "a").symlink_to(elsewhere, target_is_directory=True)
    report = scan_paths([(repo, "repo")])
    assert (report.findings, report.files) == ((), 1)


@pytest.mark.parametrize("broken", ["empty .git file", "empty .git directory", "another user's"])
def test_a_checkout_git_cannot_read_is_scanned_file_by_file(tmp_path: Path, broken: str) -> None:
    """git refuses an unreadable `.git` (exit 128): the scan falls back to every file, where it
    ended with an internal error."""
    root = tmp_path / "checkout"
    if broken == "another user's":
        if os.geteuid() != 0:
            pytest.skip(reason="only root can hand a repository to another user")
        _git_repo(root, {"tracked.txt": "nothing\n"})
        for path in (root, *root.rglob("*")):
            os.lchown(path, 65534, 65534)  # git: "detected dubious ownership"
    else:
        root.mkdir()
        if broken == "empty .git file":
            (root / ".git").touch()
        else:
            (root / ".git").mkdir()
    (root / "leak.txt").write_text(f"key = {planted()['GitHub token']}\n", encoding="utf-8")
    done = run_splice("--json", "secret-scan", "checkout", cwd=tmp_path)
    assert done.code == 1, (done.stdout, done.stderr)
    assert done.json()["findings"] == [
        {"path": "checkout/leak.txt", "line": 1, "kind": "GitHub token"}
    ]


def test_samples_are_not_findings() -> None:
    samples = [
        "AKIAIOSFODNN7EXAMPLE",
        "sk-ant-abcdefghijklmnopqrstuv",
        "xoxb-1234567890-abcdef",
        "-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTYifQ.c2lnbmF0dXJlLXZhbHVl",
        "token = " + "gh" + "p_" + _random(36) + "  # secret-scan: allow",
    ]
    assert scan_text("\n".join(samples), "x") == []


# The key_files fuzz target's seeds and regression cases are throw-away private keys by
# design (fuzz/README.md); they are the only findings this repository may hold.
FUZZ_KEYS = ("fuzz/corpus/key_files/", "tests/fuzz/cases/key_files/")


def test_this_repository_is_clean() -> None:
    done = run_splice("secret-scan", ".", "--json", cwd=REPO, timeout=120)
    report = done.json()
    assert report["files"] > 100
    others = [
        finding
        for finding in report["findings"]
        if not (
            finding["path"].removeprefix("./").startswith(FUZZ_KEYS)
            and finding["path"].endswith("-private.pem")
            and finding["kind"] == "PEM private key"
        )
    ]
    assert others == [], done.stdout
    assert done.code == (1 if report["findings"] else 0)


def test_a_file_named_like_an_archive_that_is_not_one_is_scanned_as_bytes(
    tmp_path: Path,
) -> None:
    """A malformed ``.tgz`` (a fuzz seed, a truncated download) neither stops the scan nor
    hides what it holds: its bytes are scanned as they are."""
    token = "gh" + "p_" + _random(36)
    (tmp_path / "broken.tgz").write_bytes(b"\x00\x1f\x8b not gzip " + token.encode() + b"\n")
    done = run_splice("secret-scan", ".", "--json", cwd=tmp_path)
    assert done.code == 1, done.stdout + done.stderr
    findings = done.json()["findings"]
    assert [f["path"] for f in findings] == ["./broken.tgz"], findings
    assert token not in done.stdout


@pytest.mark.skipif(os.name == "nt", reason="POSIX file names")
def test_a_file_name_cannot_forge_a_finding_line(tmp_path: Path) -> None:
    """A checkout names its files: one holding a line break is one finding line."""
    name = "a\nsrc/other.py:7: AWS access key id"
    _git_repo(tmp_path / "repo", {name: f"key = '{planted()['GitHub token']}'\n"})
    done = run_splice("secret-scan", "repo", cwd=tmp_path)
    assert done.code == 1, (done.stdout, done.stderr)
    assert done.stdout.splitlines() == [
        "repo/a\\x0asrc/other.py:7: AWS access key id:1: GitHub token"
    ]
    machine = run_splice("--json", "secret-scan", "repo", cwd=tmp_path)
    assert [f["path"] for f in json.loads(machine.stdout)["findings"]] == [f"repo/{name}"]


def test_naming_the_rpc_providers_shared_host_is_no_finding(tmp_path: Path) -> None:
    """ROBINHOOD_RPC_URL's key is its path here; its host labels name a chain and a provider,
    which a README may mention. A host label that is a key is still a finding."""
    key = "9aa3d95b3bc440fa88ea12eaa4456161"
    (tmp_path / "README.md").write_text(
        "We use the arbitrum-mainnet endpoint of our provider.\n", encoding="utf-8"
    )
    (tmp_path / "notes.txt").write_text(f"old host: {key}x.rpc.invalid\n", encoding="utf-8")
    for url in (
        f"https://arbitrum-mainnet.infura.io/v3/{key}",
        f"https://{key}x.rpc.invalid/v2",
    ):
        env = {"ROBINHOOD_RPC_URL": url}
        done = run_splice("secret-scan", "README.md", "notes.txt", cwd=tmp_path, env=env)
        assert done.code == 1, (url, done.stdout, done.stderr)
        assert done.stdout.splitlines() == ["notes.txt:1: configured value of ROBINHOOD_RPC_URL"]


def test_a_directory_nested_thousands_of_levels_deep_is_scanned_to_the_bottom(
    tmp_path: Path,
) -> None:
    """Build output or an unpacked checkout that is not a git repository is walked with a
    stack of its own: a tree deeper than Python's recursion limit is no internal error."""
    from testing.deep_tree import nested, unnested

    root = tmp_path / "out"
    root.mkdir()
    secret = nested(root, 1100) / "leak.txt"
    secret.write_text(f"token = {planted()['GitHub token']}\n", encoding="utf-8")
    try:
        done = run_splice("--json", "secret-scan", "out", cwd=tmp_path)
    finally:
        secret.unlink()
        unnested(root)
    assert done.code == 1, (done.stdout, done.stderr)
    [finding] = done.json()["findings"]
    assert finding == {"path": "out/" + "a/" * 1100 + "leak.txt", "line": 1, "kind": "GitHub token"}


def test_a_file_that_is_not_regular_is_skipped_not_read(tmp_path: Path) -> None:
    """A pre-commit hook or a CI job names the files: a link to ``/dev/zero`` (which reported
    size 0, then was read until the memory ran out) and a FIFO (which blocked the scan for
    ever) are skipped with a warning; the file next to them is still scanned."""
    (tmp_path / "zero.txt").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo.txt")
    (tmp_path / "key.txt").write_text(f"key = {planted()['GitHub token']}\n", encoding="utf-8")
    done = run_splice(
        "secret-scan",
        "--",
        "zero.txt",
        "fifo.txt",
        "key.txt",
        cwd=tmp_path,
        timeout=60,
        address_space=1 << 30,
    )
    assert done.code == 1, done.stderr
    assert "zero.txt: skipped (not a regular file)" in done.stderr
    assert "fifo.txt: skipped (not a regular file)" in done.stderr
    assert done.stdout.splitlines()[0].startswith("key.txt:1: ")
