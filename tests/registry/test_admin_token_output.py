"""`splice registry admin create-token` never prints a token unless asked (docs/cli.md#registry,
docs/registry.md#users-tokens-and-namespaces): `--out FILE` writes it to a new 0600 file and
refuses to overwrite, `--show` prints it on stdout, and without either nothing is created."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.cli import Completed, run_splice
from testing.registry_server import RunningRegistry, registry_server


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningRegistry]:
    data = tmp_path / "data"
    data.mkdir()
    with registry_server(data, admin=False) as running:
        done = run_splice("registry", "admin", "create-user", "alice", "--data", str(data))
        assert done.code == 0, done.stderr
        yield running


def _create_token(server: RunningRegistry, *extra: str) -> Completed:
    return run_splice(
        "registry", "admin", "create-token", "alice", "--data", str(server.data), *extra
    )


def _token_id(done: Completed) -> str:
    return done.stdout.split("token ", 1)[1].split(" ", 1)[0]


def _tokens_of(server: RunningRegistry, token: str) -> list[dict]:
    done = run_splice(
        "token", "list", "--json", "--registry", server.url, env={"SPLICE_TOKEN": token}
    )
    assert done.code == 0, done.stderr
    return done.json()["tokens"]


def test_without_out_or_show_nothing_is_created_or_printed(
    server: RunningRegistry, tmp_path: Path
) -> None:
    refused = _create_token(server, "--json")
    assert refused.code == 2
    error = refused.json()["error"]
    assert error["code"] == "USAGE" and "--out FILE or --show" in error["message"]
    assert "splice_" not in refused.stdout + refused.stderr
    token_file = tmp_path / "alice.token"
    assert _create_token(server, "--out", str(token_file)).code == 0
    assert len(_tokens_of(server, token_file.read_text().strip())) == 1  # the refused one: none


def test_out_writes_a_private_file_and_prints_no_token(
    server: RunningRegistry, tmp_path: Path
) -> None:
    token_file = tmp_path / "alice.token"
    done = _create_token(server, "--out", str(token_file))
    assert done.code == 0, done.stderr
    token = token_file.read_text(encoding="utf-8").strip()
    assert token.startswith("splice_") and len(token) == len("splice_") + 43
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert token not in done.stdout + done.stderr
    assert str(token_file) in done.stdout
    assert f"Created managing token {_token_id(done)} for alice (scope: all) in" in done.stdout
    scoped = _create_token(server, "--namespace", "acme", "--out", str(tmp_path / "acme.token"))
    assert scoped.code == 0, scoped.stderr
    assert (
        f"for alice (scope: @acme) in {tmp_path / 'acme.token'}" in scoped.stdout
    )  # as token create
    whoami = run_splice("whoami", "--registry", server.url, env={"SPLICE_TOKEN": token})
    assert whoami.code == 0 and "alice" in whoami.stdout

    as_json = _create_token(server, "--out", str(tmp_path / "second.token"), "--json")
    assert as_json.code == 0, as_json.stderr
    document = as_json.json()
    assert "token" not in document and document["tokenFile"] == str(tmp_path / "second.token")
    assert "splice_" not in as_json.stdout.replace(document["id"], "")


def test_out_never_overwrites_and_needs_an_existing_directory(
    server: RunningRegistry, tmp_path: Path
) -> None:
    existing = tmp_path / "existing"
    existing.write_text("keep me\n")
    for target, fragment in (
        (existing, "already exists"),
        (tmp_path / "missing" / "t", "does not exist"),
        (tmp_path, "already exists"),
    ):
        done = _create_token(server, "--out", str(target), "--json")
        assert done.code == 2, done.stderr
        assert fragment in done.json()["error"]["message"]
    assert existing.read_text() == "keep me\n"
    token_file = tmp_path / "t"
    assert _create_token(server, "--out", str(token_file)).code == 0
    assert len(_tokens_of(server, token_file.read_text().strip())) == 1  # refusals made none


def test_show_prints_the_token_on_stdout_only(server: RunningRegistry) -> None:
    done = _create_token(server, "--show")
    assert done.code == 0, done.stderr
    token = done.stdout.strip()
    assert token.startswith("splice_") and token not in done.stderr
    assert "shown once" in done.stderr
    assert len(_tokens_of(server, token)) == 1


def test_out_and_show_belong_to_create_token_and_exclude_each_other(
    server: RunningRegistry, tmp_path: Path
) -> None:
    both = _create_token(server, "--show", "--out", str(tmp_path / "t"), "--json")
    assert both.code == 2 and both.json()["error"]["code"] == "USAGE"
    other = run_splice(
        "registry", "admin", "create-user", "bob", "--show", "--data", str(server.data), "--json"
    )
    assert other.code == 2 and other.json()["error"]["message"] == (
        "--show applies to registry admin create-token, not to registry admin create-user"
    )
