"""`splice publish` refuses a package that holds a credential (docs/publishing.md#secrets): a
published version is immutable and public, and the pack walk leaves out only names starting
with `.` and `node_modules`, so a key file without a dot, or one a `.gitignore` keeps out of
git, would be uploaded. The real binary, publishing to the embedded registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing.cli import run_splice
from testing.credentials import planted, random_text
from testing.packages import minimal_manifest, write_package


def _package(root: Path, files: dict[str, str]) -> Path:
    manifest = minimal_manifest(namespace="acme", name="leaky", version="1.0.0")
    return write_package(root / "leaky", manifest, files)


def _published() -> bool:
    done = run_splice("--json", "info", "@acme/leaky", "--registry", "embedded")
    return done.code == 0


@pytest.mark.parametrize("kind", sorted(planted()))
@pytest.mark.parametrize("where", ["id_key", "config/settings.json"])
def test_a_credential_in_any_file_stops_the_publish(tmp_path: Path, kind: str, where: str) -> None:
    secret = planted()[kind]
    directory = _package(tmp_path, {where: f"first line\nvalue = {secret}\n"})
    (directory / ".gitignore").write_text(f"{where}\n", encoding="utf-8")  # git is not asked
    for dry_run in (["--dry-run"], []):
        done = run_splice("--json", "publish", *dry_run, str(directory), "--registry", "embedded")
        assert done.code == 1, (done.stdout, done.stderr)
        error = done.json()["error"]
        assert error["code"] == "INVALID_PACKAGE"
        assert (
            error["message"]
            == "@acme/leaky@1.0.0 holds what looks like a secret; nothing was uploaded"
        )
        assert error["details"] == [f"{where}:2: {kind}"]
        for piece in secret.splitlines():
            assert piece not in done.stdout + done.stderr
    assert not _published()


def test_a_configured_provider_key_is_found_by_its_value(tmp_path: Path) -> None:
    value = "custom-" + random_text(24)
    directory = _package(tmp_path, {"tools/extra.mjs": f"export const key = '{value}';\n"})
    (directory / ".env").write_text(f"TAVILY_API_KEY={value}\n", encoding="utf-8")
    done = run_splice("--json", "publish", "--dry-run", str(directory))
    assert done.code == 1, (done.stdout, done.stderr)
    assert done.json()["error"]["details"] == [
        "tools/extra.mjs:1: configured value of TAVILY_API_KEY"
    ]
    assert value not in done.stdout + done.stderr


def test_samples_and_allowed_lines_publish(tmp_path: Path) -> None:
    secret = planted()["GitHub token"]
    files = {
        "docs/usage.md": "Set GITHUB_TOKEN=ghp_EXAMPLEEXAMPLEEXAMPLEEXAMPLE0000 first.\n",
        "tests/fixture.txt": f"{secret}  # secret-scan: allow\n",
    }
    directory = _package(tmp_path, files)
    done = run_splice("--json", "publish", str(directory), "--registry", "embedded")
    assert done.code == 0, (done.stdout, done.stderr)
    assert done.json()["files"] == 5
    assert _published()
