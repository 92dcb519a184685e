"""The repository's `.pre-commit-hooks.yaml` run by the real `pre-commit` tool.

A temporary git repository uses a hook source holding this checkout's hooks file (committed
there, since pre-commit checks out a `rev`), with `splice` found on PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from splice_build.project.layout import ProjectLayout
from testing.cli import run_splice
from testing.registry_fixtures import embedded_store, new_project, publish

REPO = Path(__file__).resolve().parents[2]
# The test extra installs pre-commit: a missing one fails these tests rather than skipping them.
PRE_COMMIT = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def _init(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q")
    _git(path, "config", "user.email", "test@example.com")
    _git(path, "config", "user.name", "test")
    return path


def _hook_source(tmp_path: Path) -> tuple[Path, str]:
    source = _init(tmp_path / "hooks")
    shutil.copy(REPO / ".pre-commit-hooks.yaml", source / ".pre-commit-hooks.yaml")
    _git(source, "add", ".")
    _git(source, "commit", "-q", "-m", "hooks")
    return source, _git(source, "rev-parse", "HEAD")


def _pre_commit(repo: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    return subprocess.run(
        [PRE_COMMIT, "run", "--all-files", "--color", "never"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_hooks_pass_then_catch_tampering_and_secrets(tmp_path: Path) -> None:
    home = Path(os.environ["SPLICE_HOME"])
    publish(embedded_store(home), tmp_path / "pkgs")
    source, rev = _hook_source(tmp_path)
    repo = _init(tmp_path / "repo")
    (repo / ".gitignore").write_text(".splice/\n")
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {source}\n  rev: {rev}\n  hooks:\n"
        "  - id: splice-verify\n  - id: splice-secret-scan\n"
    )
    project = new_project(repo / "app")
    assert run_splice("add", "@acme/greeter", cwd=project).code == 0
    _git(repo, "add", ".")

    clean = _pre_commit(repo, tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "splice verify" in clean.stdout and "Passed" in clean.stdout

    hello = ProjectLayout(project).package_dir("@acme/greeter") / "tools" / "hello.js"
    hello.write_text("export default () => ({ message: 'pwned' });\n")
    key = "AKIA" + "Q7RZ3M9TX2WPLK4H"  # split: this file itself must scan clean
    (repo / "config.env").write_text(f"AWS_ACCESS_KEY_ID={key}\n")
    _git(repo, "add", "config.env")
    dirty = _pre_commit(repo, tmp_path)
    assert dirty.returncode == 1
    assert "app: would restore @acme/greeter@1.0.0" in dirty.stdout
    assert "config.env:1: AWS access key id" in dirty.stdout
    assert key not in dirty.stdout


def test_a_file_named_like_an_option_does_not_turn_the_scan_off(tmp_path: Path) -> None:
    """pre-commit appends the file names to the hook's command: a file a checkout calls
    ``--help`` would otherwise make ``splice secret-scan`` print its help and pass."""
    source, rev = _hook_source(tmp_path)
    repo = _init(tmp_path / "repo")
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {source}\n  rev: {rev}\n  hooks:\n  - id: splice-secret-scan\n"
    )
    key = "AKIA" + "Q7RZ3M9TX2WPLK4H"  # split: this file itself must scan clean
    (repo / "config.env").write_text(f"AWS_ACCESS_KEY_ID={key}\n")
    (repo / "--help").write_text("an ordinary file\n")
    _git(repo, "add", "--", ".")
    done = _pre_commit(repo, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "config.env:1: AWS access key id" in done.stdout
    assert "usage:" not in done.stdout
