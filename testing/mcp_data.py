"""Test helpers for ``splice mcp --data``: the data server wired to local fake providers.

The CLI cannot be pointed at fake providers (by design: ``_unsafe_endpoints`` is a keyword
of ``Broker`` only), so tests build the same composition as ``cli/commands/mcp.py`` —
``CompositeBackend(DataBackend, InstalledBackend)`` sharing one broker — either in-process
(``data_server``) or as a stdio process (``python -m testing.mcp_data PROJECT ENDPOINTS``,
keys from its environment, Python logging at DEBUG on stderr so that every log line a
provider call can produce is there to inspect).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from splice_build.broker.keys import PROVIDER_VARIABLES, load_keys
from splice_build.mcp.composite import CompositeBackend
from splice_build.mcp.data_backend import DATA_INSTRUCTIONS, DataBackend
from splice_build.mcp.interface import Backend, ServerInfo
from splice_build.mcp.protocol import LATEST_VERSION, Server, Session
from testing.fake_providers import FakeProviders, recognizable_keys

CAPABILITY_SKILLS = ("@splice/web", "@splice/market", "@splice/onchain")
ADDRESS = "0x" + "ab" * 20
TX_HASH = "0x" + "cd" * 32


def fake_data_backend(
    endpoints: Mapping[str, str], keys: Mapping[str, str] | None = None, **options: Any
) -> DataBackend:
    """A ``DataBackend`` whose providers reach local fakes (short time and size limits)."""
    options = {"request_timeout": 1.0, "max_response_bytes": 64 * 1024, **options}
    values = recognizable_keys() if keys is None else dict(keys)
    provider_keys = load_keys(env=values, project_root=None, home=None)
    return DataBackend(keys=provider_keys, _unsafe_endpoints=dict(endpoints), **options)


def data_server(backend: Backend, logs: list[str] | None = None) -> Server:
    sink = logs if logs is not None else []
    return Server(backend, ServerInfo(instructions=DATA_INSTRUCTIONS), log=sink.append)


def rpc(server: Server, method: str, params: Any = None, *, version: str = LATEST_VERSION) -> Any:
    """One request through the JSON-RPC dispatch; returns the whole response message."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        message["params"] = params
    response = server.handle(message, Session(version))
    assert response is not None
    return response


def call(server: Server, name: str, arguments: Mapping[str, Any], **kw: Any) -> dict[str, Any]:
    """The ``tools/call`` result (fails the test on a JSON-RPC error)."""
    response = rpc(server, "tools/call", {"name": name, "arguments": dict(arguments)}, **kw)
    assert "result" in response, response
    return response["result"]


def valid_arguments() -> dict[str, dict[str, Any]]:
    """Arguments each data tool accepts (the fakes answer all of them)."""
    from testing.fake_providers import POOL_ADDRESS, TOKEN_ADDRESS

    return {
        "web_search": {"query": "capital of france"},
        "web_extract": {"urls": ["https://example.com/page"]},
        "web_map": {"url": "https://example.net"},
        "web_similar": {"url": "https://example.org"},
        "web_answer": {"query": "capital of france"},
        "market_get_price": {"token": TOKEN_ADDRESS, "network": "eth"},
        "market_pairs": {"network": "robinhood", "address": TOKEN_ADDRESS},
        "market_ohlcv": {"network": "robinhood", "pool": POOL_ADDRESS, "limit": 2},
        "market_search": {"query": "tst"},
        "onchain_get_balance": {"address": ADDRESS},
        "onchain_transaction": {"hash": TX_HASH},
        "onchain_token": {"address": ADDRESS},
        "github_repository": {"repo": "octo/hello"},
        "github_search": {"query": "hello"},
        "github_raw": {"url": "https://raw.githubusercontent.com/octo/hello/main/README.md"},
        "ai_generate": {"prompt": "Say ok", "maxTokens": 16},
        "ai_models": {},
        "providers_status": {},
    }


def skill_calls() -> list[tuple[str, dict[str, Any]]]:
    """One call of every tool of the capability skills (MCP names, valid inputs)."""
    from testing.fake_providers import POOL_ADDRESS, TOKEN_ADDRESS

    return [
        ("splice_web_search", {"query": "capital of france"}),
        ("splice_web_read", {"urls": ["https://example.com/page"]}),
        ("splice_web_answer", {"question": "capital of france"}),
        ("splice_market_price", {"token": "TST"}),
        ("splice_market_pairs", {"network": "robinhood", "token": TOKEN_ADDRESS}),
        ("splice_market_candles", {"network": "robinhood", "pool": POOL_ADDRESS}),
        ("splice_onchain_balance", {"address": ADDRESS}),
        ("splice_onchain_transaction", {"hash": TX_HASH}),
        ("splice_onchain_token", {"address": ADDRESS}),
    ]


def capability_project(base: Path) -> tuple[Path, dict[str, str]]:
    """``installed_project`` plus the capability skills, their permissions granted."""
    from testing.cli import run_splice
    from testing.mcp_clients import installed_project

    project, env = installed_project(base)
    completed = run_splice(
        "add", *CAPABILITY_SKILLS, "--accept-permissions", cwd=project, env=env, timeout=300
    )
    if completed.code != 0:
        raise AssertionError(f"splice add failed: {completed.stderr}")
    return project, env


def keyless_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without any provider variable."""
    return {name: value for name, value in env.items() if name not in PROVIDER_VARIABLES}


def server_argv(project: Path, fake: FakeProviders) -> list[str]:
    return [sys.executable, "-m", "testing.mcp_data", str(project), json.dumps(fake.endpoints)]


def serve(argv: Sequence[str]) -> int:
    """The stdio server process: the CLI's ``--data`` composition over fake endpoints."""
    import logging

    from splice_build.mcp.backend import INSTRUCTIONS, InstalledBackend
    from splice_build.mcp.transport.stdio import claim_stdout, serve_stdio
    from splice_build.sdk import Splice

    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    project, endpoints = Path(argv[0]), json.loads(argv[1])

    def log(message: str) -> None:
        sys.stderr.write(f"[splice mcp] {message}\n")
        sys.stderr.flush()

    env = dict(os.environ)
    data = DataBackend(
        keys=lambda: load_keys(env=env, project_root=project, home=None),
        _unsafe_endpoints=endpoints,
        request_timeout=1.0,
    )
    from splice_build.mcp.admission import default_max_calls

    with Splice(project, env=env, broker=data.broker) as splice:
        backend = CompositeBackend(data, InstalledBackend(splice), log=log)
        info = ServerInfo(instructions=f"{INSTRUCTIONS}\n\n{DATA_INSTRUCTIONS}")
        serve_stdio(
            Server(backend, info, log=log),
            sys.stdin.buffer,
            claim_stdout(),
            log=log,
            max_calls=default_max_calls(),
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(serve(sys.argv[1:]))
