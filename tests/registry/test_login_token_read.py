"""`splice login` reads one bounded line and takes only a registry token
(docs/registry.md#users-tokens-and-namespaces, ``cli/commands/login.py``).

Before the mend, standard input was read to its first line break however far that was: a
stream without one (50 MB here) was read whole into memory and then sent to the registry as
an ``Authorization`` header. Now anything that is not ``splice_`` and 43 base64url characters
is ``USAGE`` and nothing reaches the registry: the real server behind a proxy on 127.0.0.1
that records every request.
"""

from __future__ import annotations

import os
import resource
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.cli import Completed, run_splice, splice_executable
from testing.counting_proxy import CountingProxy, counting_proxy
from testing.registry_server import registry_server, user_token


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[CountingProxy, str]]:
    root = tmp_path_factory.mktemp("login-read")
    with registry_server(root / "data") as server, counting_proxy(server.url) as proxy:
        yield proxy, user_token(server, "alice")


_TOKEN_SHAPE = "splice_" + "A" * 43

STDIN: dict[str, str | bytes] = {
    "huge-no-newline": "A" * 50_000_000,
    "huge-line": "splice_" + "A" * 10_000_000 + "\n",
    "one-byte-too-long": "splice_" + "A" * 194 + "\n",
    "binary": bytes(range(256)) * 4,
    "latin-1": b"splice_" + b"\xe9" * 43 + b"\n",
    "nul": "splice_" + "A" * 20 + "\x00" + "A" * 22 + "\n",
    "nul-only": "\x00" * 100,
    "token-and-a-space": _TOKEN_SHAPE + " \n",
    "short": "splice_abc\n",
    "other-prefix": "ghp_" + "A" * 46 + "\n",
    "empty": "\n",
    "nothing": "",
    "unicode": "splice_" + "é" * 43 + "\n",
}


def _login(url: str, stdin: str | bytes) -> Completed:
    """`splice login` with these bytes on standard input, its memory capped at 1 GiB."""
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    proc = subprocess.run(
        [splice_executable(), "--json", "--registry", url, "login"],
        input=data,
        capture_output=True,
        env=dict(os.environ),
        timeout=120,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)),
    )
    return Completed(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.mark.parametrize("case", list(STDIN))
def test_login_refuses_what_is_not_a_token_before_sending_anything(
    registry: tuple[CountingProxy, str], case: str
) -> None:
    proxy, _token = registry
    before = len(proxy.requests)
    done = _login(proxy.url, STDIN[case])
    assert done.code == 2, (done.stdout, done.stderr[-2000:])
    error = done.json()["error"]
    assert error["code"] == "USAGE"
    assert error["message"] == "This is not a registry token: nothing was sent"
    assert proxy.requests[before:] == []
    assert not (Path(os.environ["SPLICE_HOME"]) / "credentials.json").exists()


@pytest.mark.parametrize("ending", ["\n", "\r\n", ""])
def test_login_takes_a_token_with_or_without_a_line_break(
    registry: tuple[CountingProxy, str], ending: str
) -> None:
    proxy, token = registry
    done = run_splice("--json", "--registry", proxy.url, "login", input=token + ending)
    assert done.code == 0, done.stderr
    assert done.json() == {"registry": proxy.url, "user": "alice"}


def test_login_reads_no_further_than_the_first_line(registry: tuple[CountingProxy, str]) -> None:
    proxy, token = registry
    done = run_splice(
        "--json", "--registry", proxy.url, "login", input=token + "\n" + "A" * 50_000_000
    )
    assert done.code == 0, done.stderr


def test_login_flag_takes_only_a_token(registry: tuple[CountingProxy, str]) -> None:
    proxy, _token = registry
    before = len(proxy.requests)
    done = run_splice("--json", "--registry", proxy.url, "login", "--token", "x" * 5000)
    assert done.code == 2
    assert done.json()["error"]["code"] == "USAGE"
    assert proxy.requests[before:] == []
