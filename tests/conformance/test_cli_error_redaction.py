"""CLI error output is redacted: a secret a user pastes into an argument never comes back on
stdout or stderr, in text or --json mode (the real binary, offline)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing.cli import run_splice

# Built here so that no file holds a key format (the repository's own secret scan).
SECRETS = {
    "github": "gh" + "p_" + "A1b2" * 9,
    "splice": "spl" + "ice_" + "Zq9" * 14 + "x",
    "aws": "AK" + "IA" + "QWERTYUIOPASDFGH",
}
COMMANDS = [
    ("add", "{secret}"),
    ("add", "@acme/x@{secret}"),
    ("info", "@acme/{secret}"),
    ("run", "{secret}.tool"),
]


@pytest.mark.parametrize("json_mode", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_a_secret_in_an_argument_is_redacted_from_errors(
    tmp_path: Path, kind: str, json_mode: bool
) -> None:
    secret = SECRETS[kind]
    assert run_splice("init", cwd=tmp_path).code == 0
    for command in COMMANDS:
        args = [part.format(secret=secret) for part in command]
        done = run_splice(*(["--json"] if json_mode else []), *args, cwd=tmp_path)
        assert done.code != 0, (args, done)
        out = done.stdout + done.stderr
        assert secret not in out, (args, out)
        assert "[REDACTED]" in out, (args, out)
        assert done.json()["error"]["code"] if json_mode else out.startswith("error: "), out
