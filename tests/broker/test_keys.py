"""Provider keys: fixed names, fixed places, fixed order; values never shown."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from splice_build.broker.keys import (
    MAX_ENV_FILE_BYTES,
    PROVIDER_VARIABLES,
    load_keys,
    parse_env_file,
)
from testing.fifos import returns_without_waiting
from testing.projects import lock_entry_json, make_project


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_environment_then_nearest_env_files_then_home(tmp_path: Path) -> None:
    repo, project, home = tmp_path / "repo", tmp_path / "repo" / "apps" / "one", tmp_path / "home"
    project.mkdir(parents=True)
    _write(repo / ".env", "TAVILY_API_KEY=from-repo-env\nEXA_API_KEY=from-repo-env\n")
    _write(repo / ".env.local", "TAVILY_API_KEY=from-repo-local\n")
    _write(tmp_path / ".env", "GITHUB_TOKEN=from-above-the-nearest\n")
    _write(
        home / ".env",
        "GEMINI_API_KEY=from-home\nEXA_API_KEY=from-home\nGITHUB_TOKEN=gh-home-value\n",
    )
    keys = load_keys(
        env={"OPENROUTER_API_KEY": "from-env", "TAVILY_API_KEY": ""},
        project_root=project,
        home=home,
    )
    assert keys.get("OPENROUTER_API_KEY") == "from-env"
    assert keys.get("TAVILY_API_KEY") == "from-repo-local"  # .env.local wins; empty env is unset
    assert keys.get("EXA_API_KEY") == "from-repo-env"
    assert keys.get("GEMINI_API_KEY") == "from-home"
    # Only the NEAREST directory with env files counts: the one above it is never read.
    assert keys.get("GITHUB_TOKEN") == "gh-home-value"
    assert keys.sources["TAVILY_API_KEY"] == str(repo / ".env.local")
    assert keys.sources["OPENROUTER_API_KEY"] == "environment"


def test_no_other_variable_is_read(tmp_path: Path) -> None:
    _write(
        tmp_path / ".env", "DATABASE_PASSWORD=hunter2-secret\nexport EXA_API_KEY='quoted value'\n"
    )
    keys = load_keys(
        env={"AWS_SECRET_ACCESS_KEY": "aws-secret-value"}, project_root=tmp_path, home=None
    )
    assert keys.get("EXA_API_KEY") == "quoted value"
    assert set(keys.secret_values()) == {"quoted value"}
    assert "hunter2" not in repr(keys) and "aws-secret" not in repr(keys)
    with pytest.raises(AssertionError):
        keys.get("DATABASE_PASSWORD")


def test_parse_env_file_forms() -> None:
    text = 'TAVILY_API_KEY="a b" # comment\nEXA_API_KEY=plain # note\n# GEMINI_API_KEY=commented\nbad line\n'
    assert parse_env_file(text) == {"TAVILY_API_KEY": "a b", "EXA_API_KEY": "plain"}


def test_parse_env_file_strips_a_value_of_any_whitespace_linearly() -> None:
    """The value is the rest of the line after ``=``, stripped of Unicode whitespace (as the
    former pattern's ``\\s*(.*?)\\s*$`` took it, which scanned a run of spaces before a
    letter once per space: quadratic, a 1 MB line about an hour; the pumped timing of
    tests/fuzz/cases/env_file/ checks the time)."""
    text = (
        "export  TAVILY_API_KEY \t=\u00a0 a \u3000 b \u2007\n"
        "EXA_API_KEY=x" + " " * 1000 + "y\n"
        "exportGEMINI_API_KEY=z\n"
    )
    assert parse_env_file(text) == {
        "TAVILY_API_KEY": "a \u3000 b",
        "EXA_API_KEY": "x" + " " * 1000 + "y",
    }


def test_repr_never_shows_values_and_url_pieces_are_secrets() -> None:
    url = "https://rpc.example.com/v2/abcDEF1234567890xyz?apikey=QQQQQQQQ-secret-query"
    keys = load_keys(
        env={"ROBINHOOD_RPC_URL": url, "GITHUB_TOKEN": "tok-value-123"},
        project_root=None,
        home=None,
    )
    assert "abcDEF" not in repr(keys) and "tok-value" not in repr(keys)
    secrets = keys.secret_values()
    assert (
        url in secrets and "abcDEF1234567890xyz" in secrets and "QQQQQQQQ-secret-query" in secrets
    )
    assert "v2" not in secrets
    assert ("ROBINHOOD_RPC_URL", "abcDEF1234567890xyz") in keys.named_values()


def test_the_list_is_fixed() -> None:
    assert PROVIDER_VARIABLES == (
        "TAVILY_API_KEY",
        "EXA_API_KEY",
        "FIRECRAWL_API_KEY",
        "OPENROUTER_API_KEY",
        "GEMINI_API_KEY",
        "GITHUB_TOKEN",
        "ROBINHOOD_RPC_URL",
    )


def test_a_fifo_as_an_env_file_is_skipped_without_waiting(tmp_path: Path) -> None:
    """``SPLICE_HOME/.env`` is read without an ``is_file`` check first: a FIFO there must be
    refused, not waited on (every capability call loads the keys)."""
    home = tmp_path / "home"
    home.mkdir()
    os.mkfifo(home / ".env")
    _write(tmp_path / "project" / ".env", "EXA_API_KEY=from-project\n")
    keys = returns_without_waiting(
        lambda: load_keys(env={}, project_root=tmp_path / "project", home=home), home / ".env"
    )
    assert keys.get("EXA_API_KEY") == "from-project"
    assert keys.sources == {"EXA_API_KEY": str(tmp_path / "project" / ".env")}


def test_an_env_file_over_the_bound_is_skipped(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _write(home / ".env", "EXA_API_KEY=from-home\n" + "#" * MAX_ENV_FILE_BYTES)
    assert load_keys(env={}, project_root=None, home=home).get("EXA_API_KEY") is None
    _write(home / ".env", "EXA_API_KEY=from-home\n")
    assert load_keys(env={}, project_root=None, home=home).get("EXA_API_KEY") == "from-home"


# 1 GiB of address space: a read of /dev/zero that does not stop ends in MemoryError (exit 1).
HOME_PROBE = """
import resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from splice_build.broker.keys import load_keys
print(load_keys(env={}, project_root=None, home=Path(sys.argv[1])).sources)
"""


def test_a_link_to_dev_zero_as_the_home_env_file_is_skipped(tmp_path: Path) -> None:
    (tmp_path / ".env").symlink_to("/dev/zero")
    done = subprocess.run(
        [sys.executable, "-c", HOME_PROBE, str(tmp_path)],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "{}"


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="making another user's file needs root"
)
def test_an_env_file_of_another_user_is_skipped(tmp_path: Path) -> None:
    """The walk up from a project reaches shared directories (``/tmp``): a ``.env`` someone
    else left there named their own RPC URL and AI key for every project below it."""
    shared = tmp_path / "shared"
    _write(tmp_path / ".env", "EXA_API_KEY=above-the-shared-directory\n")
    _write(shared / ".env", "ROBINHOOD_RPC_URL=https://rpc.attacker.example/v2/k\n")
    _write(tmp_path / "home" / ".env", "OPENROUTER_API_KEY=from-home\n")
    project = shared / "project"
    project.mkdir()
    os.chown(shared / ".env", 65534, 65534)  # nobody
    keys = load_keys(env={}, project_root=project, home=tmp_path / "home")
    assert keys.get("ROBINHOOD_RPC_URL") is None
    # Skipped like an unreadable file: the walk still stops there (no key from further up).
    assert keys.sources == {"OPENROUTER_API_KEY": str(tmp_path / "home" / ".env")}
    os.chown(shared / ".env", os.geteuid(), os.getegid())
    assert load_keys(env={}, project_root=project, home=None).get("ROBINHOOD_RPC_URL")


def test_env_files_a_tool_of_a_project_above_may_write_are_skipped(tmp_path: Path) -> None:
    """A tool of ``repo`` granted ``fs.write: ["packages"]`` wrote ``packages/a/.env.local``
    naming its own RPC URL: the member's ``splice mcp --data`` called it (shown with the
    mcp SDK's client: ``providers_status`` gave its key source as ``.env.local``)."""
    grant = {"fs": {"read": [], "write": ["packages"]}, "network": [], "env": []}
    repo = make_project(
        tmp_path / "repo", lock={"@acme/w": lock_entry_json("@acme/w", permissions=grant)}
    )
    _write(repo / ".env", "TAVILY_API_KEY=tvly-the-users\n")
    planted = "ROBINHOOD_RPC_URL=https://rpc.example.org/planted-by-the-tool\n"
    for member in (make_project(repo / "packages" / "a"), make_project(tmp_path / "b")):
        _write(member / ".env.local", planted)
    home = tmp_path / "home"
    held = load_keys(env={}, project_root=repo / "packages" / "a", home=home)
    assert held.get("ROBINHOOD_RPC_URL") is None and held.sources == {}
    assert load_keys(env={}, project_root=tmp_path / "b", home=home).get("ROBINHOOD_RPC_URL")
    assert load_keys(env={}, project_root=repo, home=home).get("TAVILY_API_KEY") == "tvly-the-users"


def test_an_env_file_a_tool_of_a_project_above_may_write_is_skipped(tmp_path: Path) -> None:
    """The grant may be the file itself: a tool of ``repo`` granted ``fs.write:
    ["packages/.env"]`` wrote there the RPC URL the member ``packages/a``'s broker read as
    its own (the nearest ``.env`` above the member)."""
    grant = {"fs": {"read": [], "write": ["packages/.env"]}, "network": [], "env": []}
    repo = make_project(
        tmp_path / "repo", lock={"@acme/w": lock_entry_json("@acme/w", permissions=grant)}
    )
    member = make_project(repo / "packages" / "a")
    _write(repo / "packages" / ".env", "ROBINHOOD_RPC_URL=https://rpc.example.org/planted\n")
    held = load_keys(env={}, project_root=member, home=tmp_path / "home")
    assert held.get("ROBINHOOD_RPC_URL") is None and held.sources == {}


def test_the_grants_above_a_directory_and_its_env_files_are_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One look at the locks and grant records above for the directory and its two files
    (it was one per path, each reading every lock and record above again); a file linked
    to a project beside it is still judged by the grants above its own real path."""
    from splice_build.project import tool_written

    grant = {"fs": {"read": [], "write": ["shared"]}, "network": [], "env": []}
    beside = make_project(
        tmp_path / "beside", lock={"@acme/w": lock_entry_json("@acme/w", permissions=grant)}
    )
    _write(beside / "shared" / ".env", "ROBINHOOD_RPC_URL=https://rpc.example.org/planted\n")
    member = make_project(tmp_path / "repo" / "a")
    _write(member / ".env", "TAVILY_API_KEY=tvly-the-users\n")
    _write(member / ".env.local", "ROBINHOOD_RPC_URL=https://rpc.example.org/the-users\n")
    looks: list[object] = []
    drop = tool_written.drop_tool_written
    monkeypatch.setattr(
        tool_written, "drop_tool_written", lambda *a, **k: looks.append(a[0]) or drop(*a, **k)
    )
    held = load_keys(env={}, project_root=member, home=tmp_path / "home")
    assert held.get("TAVILY_API_KEY") == "tvly-the-users" and len(looks) == 1
    (member / ".env.local").unlink()
    (member / ".env.local").symlink_to(beside / "shared" / ".env")
    assert load_keys(env={}, project_root=member, home=tmp_path / "home").sources == {}


def test_a_key_in_the_rpc_host_name_stays_out_of_debug_logs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Some RPC endpoints carry the key as a host label; urllib3 logs every new connection's
    host at DEBUG ("Starting new HTTPS connection (1): <key>.rpc…:443")."""
    from splice_build.broker import Broker

    label = "k3y0123456789abcdefxyz"
    url = f"https://{label}.rpc-provider.invalid/v2"
    keys = load_keys(env={"ROBINHOOD_RPC_URL": url}, project_root=None, home=None)
    assert ("ROBINHOOD_RPC_URL", label) in keys.named_values()
    caplog.set_level(logging.DEBUG)
    result = Broker(keys=keys, request_timeout=5).call(
        {
            "package": "p",
            "tool": "t",
            "capability": "onchain.balance",
            "args": {"address": "0x" + "1f" * 20},
        }
    )
    assert result["status"] == "ERROR"  # .invalid never resolves
    assert "Starting new HTTPS connection" in caplog.text
    assert label not in caplog.text + json.dumps(result)
