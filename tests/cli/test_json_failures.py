"""Every failure under ``--json`` is exactly one JSON document of the documented shape
(docs/cli.md#exit-codes-and-errors), whatever text the caller puts into it.

Error messages quote what the caller wrote (a package reference, a path, a tool argument, a
URL), and every string is redacted before it is shown. The walk feeds each error path text
built to break a document redacted after serialisation — quotes, backslashes, ``KEY="…``,
``token=…``, control characters, bytes that are not UTF-8 — and parses stdout."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode
from splice_build.skills import skills_root
from testing.cli import Completed, run_splice
from testing.mcp_clients import DEMO_TOKEN
from testing.packages import write_package

EXAMPLE = str(skills_root() / "example")
GITHUB_TOKEN = "ghp_" + "A1b2C3d4" * 5  # a credential format the redactor knows

# Caller-controlled text: each breaks a JSON document that is redacted as text.
HOSTILE = [
    '"',
    "\\",
    '\\"',
    'API_KEY="abc',
    'x" token=abcdefghijklmnopqrstuvwx "',
    'password=\\"hunter2\\"',
    'SECRET="a\\"b"',
    "ctl\x01\x08\x1b[2J\x7f\u2028",
    "\udcff\\",  # the byte 0xff (not UTF-8), then a backslash
    '\\udcff"',
    '"}\n{"ok": true}',
    f"token {GITHUB_TOKEN}",
]

# Where caller text reaches an error message: each path is a function of that text (and of
# the test's directory, for paths that need a file or a package).
PATHS: dict[str, Callable[[str, Path], list[str]]] = {
    "unknown command": lambda s, d: [s],
    "add range": lambda s, d: ["add", f"@x/y@{s}"],
    "add name": lambda s, d: ["add", s],
    "info": lambda s, d: ["info", f"@x/y@{s}"],
    "verify": lambda s, d: ["verify", s],
    "remove": lambda s, d: ["remove", s],
    "update": lambda s, d: ["update", s],
    "sign": lambda s, d: ["sign", s],
    "run ref": lambda s, d: ["run", s],
    "run ref, pairs": lambda s, d: ["run", f"{s}.x", f"{s}={s}"],
    "run --dir": lambda s, d: ["run", "--dir", str(d / s), "example.hello"],
    "run pair": lambda s, d: ["run", "--dir", EXAMPLE, "example.hello", s],
    "run key=value": lambda s, d: ["run", "--dir", EXAMPLE, "example.hello", f"{s}={s}"],
    "run --input": lambda s, d: ["run", "--dir", EXAMPLE, "example.hello", "--input", s],
    "run --input text": lambda s, d: ["run", "--dir", EXAMPLE, "example.hello", "--input", f'"{s}'],
    "run tool": lambda s, d: ["run", "--dir", str(d / "pkg"), f"greeter.{s}"],
    "validate": lambda s, d: ["validate", str(d / s)],
    "pack": lambda s, d: ["pack", str(d / s)],
    "pack --out": lambda s, d: ["pack", str(d / "pkg"), "--out", str(d / s / "x.tgz")],
    "init on a file": lambda s, d: ["init", str(d / "a-file" / s)],
    "publish": lambda s, d: ["publish", str(d / s), "--dry-run"],
    "search": lambda s, d: ["search", s],
    "--registry": lambda s, d: ["--registry", s, "info", "@x/y"],
    "config set": lambda s, d: ["config", "set", "registry", s],
    "help": lambda s, d: ["help", s],
    "workspace add": lambda s, d: ["workspace", "add", str(d / s)],
    "keys trust": lambda s, d: ["keys", "trust", "@ns", s],
    "token revoke": lambda s, d: ["token", "revoke", s],
    "namespace": lambda s, d: ["namespace", s],
    "registry admin": lambda s, d: ["registry", "admin", "create-user", s, "--data", str(d / s)],
    "secret-scan": lambda s, d: ["secret-scan", str(d / s)],
    "sync --root": lambda s, d: ["sync", "--root", str(d / s)],
    "mcp --port": lambda s, d: ["mcp", "--http", "--port", s],
    "mcp --project": lambda s, d: ["mcp", "--http", "--project", str(d / s)],
}

_ERROR_KEYS = {"code", "message", "details", "hint"}
# docs/cli.md: `run --json` prints the whole result envelope, a failure included.
_ENVELOPE_KEYS = {"ok", "package", "tool", "error", "logs", "durationMs"}


def _assert_one_failure_document(done: Completed, what: str) -> None:
    assert "Traceback" not in done.stderr, (what, done.stderr)
    assert done.code in (1, 2), (what, done.code, done.stdout, done.stderr)
    try:
        document = done.json()  # json.loads refuses anything after the first document
    except ValueError as exc:
        raise AssertionError(f"{what}: not one JSON document ({exc}): {done.stdout!r}") from None
    assert isinstance(document, dict) and document["ok"] is False, (what, document)
    assert set(document) in ({"ok", "error"}, _ENVELOPE_KEYS), (what, document)
    error = document["error"]
    assert set(error) <= _ERROR_KEYS | {"skillCode"}, (what, error)
    assert error["code"] in set(ErrorCode) and error["code"] != "INTERNAL_ERROR", (what, error)
    assert isinstance(error["message"], str), (what, error)
    assert all(isinstance(d, str) for d in error.get("details", [])), (what, error)
    assert isinstance(error.get("hint", ""), str), (what, error)
    assert GITHUB_TOKEN not in done.stdout + done.stderr, (what, "secret shown")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    write_package(tmp_path / "pkg")
    (tmp_path / "a-file").write_text("x")
    return tmp_path


@pytest.mark.parametrize("text", HOSTILE, ids=[ascii(s) for s in HOSTILE])
def test_every_error_path_answers_one_json_document(workdir: Path, text: str) -> None:
    # The registry is never reached (refused at once); `mcp --http` gets as far as the project.
    env = {"SPLICE_REGISTRY": "http://127.0.0.1:9", "SPLICE_MCP_TOKEN": DEMO_TOKEN}

    def answer(name: str) -> tuple[str, Completed]:
        argv = PATHS[name](text, workdir)
        return name, run_splice("--json", *argv, cwd=workdir, env=env, timeout=90)

    with ThreadPoolExecutor(max_workers=max(2, min(8, os.cpu_count() or 2))) as pool:
        for name, done in pool.map(answer, PATHS):
            _assert_one_failure_document(done, name)


def test_the_mcp_token_hint_survives_redaction(tmp_path: Path) -> None:
    """The hint on how to make a token reads as an instruction, not as a token being set:
    redaction leaves it whole, in the JSON document and in the human error."""
    done = run_splice("--json", "mcp", "--http", cwd=tmp_path)
    assert done.code == 2
    error = done.json()["error"]
    assert error["code"] == "USAGE"
    assert "[REDACTED]" not in error["hint"]
    assert "secrets.token_urlsafe(32)" in error["hint"]
    human = run_splice("mcp", "--http", cwd=tmp_path, env={"SPLICE_MCP_TOKEN": "short"})
    assert human.code == 2
    assert f"hint: {error['hint']}" in human.stderr


def test_a_secret_in_an_error_is_redacted_inside_valid_json(tmp_path: Path) -> None:
    """Redaction happens on each string before the document is serialised: the secret is
    gone and the text around it is intact."""
    done = run_splice("--json", "add", f'@x/y@API_KEY="abc {GITHUB_TOKEN}', cwd=tmp_path)
    assert done.code == 2
    message = done.json()["error"]["message"]
    assert GITHUB_TOKEN not in message and "[REDACTED]" in message
    assert message.startswith('Invalid version range "API_KEY=')
