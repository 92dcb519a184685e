"""Local fake data providers: one HTTP server on 127.0.0.1 that answers as every provider.

Each provider host is served under its own prefix (``http://127.0.0.1:PORT/api.tavily.com``);
``FakeProviders.endpoints`` is the mapping a test passes to ``Broker(_unsafe_endpoints=…)``,
the broker's test-only injection. ``behave(host, mode)`` switches one host to a failure
mode; error bodies echo whatever credential the request carried (header, path or query), so
a broker that forwarded them would leak them, and the key-leak tests would see it.

Modes: ``ok``; ``status:<code>``; ``slow`` (answers after ``slow_seconds``); ``slow-after:<n>``
(answers its first ``n`` requests at once, the later ones as ``slow``); ``oversize``
(a body of ``oversize_bytes``); ``garbage`` (not JSON); ``redirect:<url>`` (a 302 to ``url``);
``body:<text>`` (a 200 whose body is exactly ``text``, for answers JSON does not allow);
``broken-head`` (a 200 whose head holds a line that is no header, then one echoing the
credentials: urllib3 logs both, with the request URL).
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

RPC_HOST = "rpc.robinhood.test"
HOSTS = (
    "api.tavily.com",
    "api.exa.ai",
    "api.firecrawl.dev",
    "api.dexscreener.com",
    "api.geckoterminal.com",
    RPC_HOST,
    "api.github.com",
    "raw.githubusercontent.com",
    "openrouter.ai",
    "generativelanguage.googleapis.com",
)
TOKEN_ADDRESS = "0x" + "1f" * 20
POOL_ADDRESS = "0x" + "2e" * 20


@dataclass(frozen=True)
class Seen:
    """One request as the fake received it (credentials included, for assertions)."""

    host: str
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


def _abi_string(text: str) -> str:
    raw = text.encode()
    padded = raw + b"\0" * (-len(raw) % 32)
    return "0x" + (32).to_bytes(32, "big").hex() + len(raw).to_bytes(32, "big").hex() + padded.hex()


_ETH_CALLS = {
    "0x06fdde03": _abi_string("Test Token"),
    "0x95d89b41": _abi_string("TST"),
    "0x313ce567": "0x" + (18).to_bytes(32, "big").hex(),
    "0x18160ddd": "0x" + (10**21).to_bytes(32, "big").hex(),
}


def _rpc(item: dict[str, Any]) -> dict[str, Any]:
    method, params = item.get("method"), item.get("params") or []
    tx_hash = params[0] if params else None
    results: dict[str, Callable[[], Any]] = {
        "eth_getBalance": lambda: hex(1_500_000_000_000_000_000),
        "eth_blockNumber": lambda: "0x4d2",
        "eth_getTransactionByHash": lambda: (
            None
            if str(tx_hash).endswith("00")
            else {
                "hash": tx_hash,
                "from": "0x" + "a" * 40,
                "to": "0x" + "b" * 40,
                "value": "0x10",
                "blockNumber": "0x4d0",
            }
        ),
        "eth_getTransactionReceipt": lambda: {"status": "0x1", "gasUsed": "0x5208"},
        "eth_getCode": lambda: "0x6080",
        "eth_call": lambda: _ETH_CALLS.get(params[0].get("data"), "0x"),
    }
    return {"jsonrpc": "2.0", "id": item.get("id"), "result": results[str(method)]()}


def _pair(symbol: str, network: str = "robinhood") -> dict[str, Any]:
    return {
        "chainId": network,
        "dexId": "fakeswap",
        "pairAddress": POOL_ADDRESS,
        "baseToken": {"address": TOKEN_ADDRESS, "symbol": symbol, "name": f"{symbol} token"},
        "quoteToken": {"address": "0x" + "3d" * 20, "symbol": "USDC", "name": "USD Coin"},
        "priceUsd": "1.25",
        "priceNative": "0.0004",
        "liquidity": {"usd": 50000},
        "volume": {"h24": 1234},
        "url": "https://dexscreener.com/robinhood/x",
    }


_REPO = {
    "full_name": "octo/hello",
    "name": "hello",
    "owner": {"login": "octo"},
    "description": "A repo",
    "html_url": "https://github.com/octo/hello",
    "default_branch": "main",
    "language": "Python",
    "license": {"spdx_id": "MIT"},
    "topics": ["demo"],
    "stargazers_count": 5,
    "forks_count": 1,
    "open_issues_count": 0,
    "archived": False,
    "fork": False,
    "private": False,
    "visibility": "public",
}
# What GitHub also answers with when the request's token can see a private repository.
_PRIVATE_REPO = {**_REPO, "full_name": "octo/secret-plans", "name": "secret-plans"}
_PRIVATE_REPO |= {"private": True, "visibility": "private"}


def _repository_search(query: dict[str, list[str]]) -> dict[str, Any]:
    """GitHub's search as a token that can see a private repository gets it: that one too,
    and in the count, unless the query says ``is:public`` outside a quoted phrase (a phrase
    left open runs to the end of the query)."""
    unquoted = query.get("q", [""])[0].split('"')[0::2]
    public = any("is:public" in part.split() for part in unquoted)
    items = [_REPO] if public else [_REPO, _PRIVATE_REPO]
    return {"total_count": len(items), "incomplete_results": False, "items": items}


# (host, method, path pattern) → function(match, query, body) → JSON body or bytes.
Route = tuple[str, str, re.Pattern[str], Callable[[re.Match[str], dict[str, list[str]], Any], Any]]
ROUTES: list[Route] = [
    (
        "api.tavily.com",
        "POST",
        re.compile(r"/search"),
        lambda m, q, b: {
            "answer": "Paris is the capital of France.",
            "results": [
                {
                    "url": "https://example.com/a",
                    "title": "A",
                    "content": "alpha " * 50,
                    "raw_content": "full alpha",
                }
            ],
        },
    ),
    (
        "api.tavily.com",
        "POST",
        re.compile(r"/extract"),
        lambda m, q, b: {
            "results": [{"url": url, "raw_content": f"text of {url}"} for url in b["urls"]],
            "failed_results": [],
        },
    ),
    (
        "api.exa.ai",
        "POST",
        re.compile(r"/(search|contents|findSimilar)"),
        lambda m, q, b: {
            "results": [{"url": "https://example.org/e", "title": "E", "text": "exa text"}],
        },
    ),
    (
        "api.exa.ai",
        "POST",
        re.compile(r"/answer"),
        lambda m, q, b: {
            "answer": "Exa says Paris.",
            "citations": [{"url": "https://example.org/c", "title": "C"}],
        },
    ),
    (
        "api.firecrawl.dev",
        "POST",
        re.compile(r"/v1/search"),
        lambda m, q, b: {
            "data": [{"url": "https://example.net/f", "title": "F", "description": "firecrawl"}],
        },
    ),
    (
        "api.firecrawl.dev",
        "POST",
        re.compile(r"/v1/scrape"),
        lambda m, q, b: {
            "data": {"markdown": f"# {b['url']}", "metadata": {"title": "Scraped"}},
        },
    ),
    (
        "api.firecrawl.dev",
        "POST",
        re.compile(r"/v1/map"),
        lambda m, q, b: {"links": ["https://example.net/1"]},
    ),
    (
        "api.dexscreener.com",
        "GET",
        re.compile(r"/latest/dex/search"),
        lambda m, q, b: {
            "pairs": [_pair(q["q"][0].upper()), _pair(q["q"][0].upper(), "eth")],
        },
    ),
    (
        "api.dexscreener.com",
        "GET",
        re.compile(r"/token-pairs/v1/([^/]+)/([^/]+)"),
        lambda m, q, b: [
            _pair("TST", m.group(1)),
        ],
    ),
    (
        "api.geckoterminal.com",
        "GET",
        re.compile(r"/api/v2/simple/networks/([^/]+)/token_price/([^/]+)"),
        lambda m, q, b: {"data": {"attributes": {"token_prices": {m.group(2).lower(): "2.5"}}}},
    ),
    (
        "api.geckoterminal.com",
        "GET",
        re.compile(r"/api/v2/networks/([^/]+)/tokens/([^/]+)/pools"),
        lambda m, q, b: {
            "data": [
                {
                    "attributes": {
                        "address": POOL_ADDRESS,
                        "name": "TST / USDC",
                        "base_token_price_usd": "2.5",
                        "reserve_in_usd": "900",
                    }
                }
            ]
        },
    ),
    (
        "api.geckoterminal.com",
        "GET",
        re.compile(r"/api/v2/networks/([^/]+)/pools/([^/]+)/ohlcv/([a-z]+)"),
        lambda m, q, b: {
            "data": {
                "attributes": {
                    "ohlcv_list": [[1767225600, 1, 2, 0.5, 1.5, 100]]
                    * int(q.get("limit", ["1"])[0])
                }
            }
        },
    ),
    (RPC_HOST, "POST", re.compile(r"/.*"), lambda m, q, b: [_rpc(item) for item in b]),
    (
        "api.github.com",
        "GET",
        re.compile(r"/repos/([^/]+)/([^/]+)"),
        lambda m, q, b: _PRIVATE_REPO if m.group(2) == _PRIVATE_REPO["name"] else _REPO,
    ),
    (
        "api.github.com",
        "GET",
        re.compile(r"/search/repositories"),
        lambda m, q, b: _repository_search(q),
    ),
    ("raw.githubusercontent.com", "GET", re.compile(r"/.+"), lambda m, q, b: b"# raw readme\n"),
    (
        "openrouter.ai",
        "POST",
        re.compile(r"/api/v1/chat/completions"),
        lambda m, q, b: {
            "id": "gen-1",
            "model": b["model"],
            "choices": [{"message": {"content": '{"ok": true}'}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4},
        },
    ),
    (
        "openrouter.ai",
        "GET",
        re.compile(r"/api/v1/models"),
        lambda m, q, b: {
            "data": [{"id": "fake/model", "name": "Fake Model", "context_length": 8192}],
        },
    ),
    (
        "generativelanguage.googleapis.com",
        "POST",
        re.compile(r"/v1beta/models/([^/:]+):generateContent"),
        lambda m, q, b: {
            "candidates": [{"content": {"parts": [{"text": '{"ok": true}'}]}}],
            "usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 5},
        },
    ),
    (
        "generativelanguage.googleapis.com",
        "GET",
        re.compile(r"/v1beta/models"),
        lambda m, q, b: {
            "models": [{"name": "models/gemini-fake", "displayName": "Gemini Fake"}],
        },
    ),
]


@dataclass
class FakeProviders:
    """The server's state: per-host behaviour and every request seen."""

    port: int = 0
    modes: dict[str, str] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    slow_seconds: float = 2.0
    oversize_bytes: int = 128 * 1024
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def endpoints(self) -> dict[str, str]:
        return {host: f"http://127.0.0.1:{self.port}/{host}" for host in HOSTS}

    def behave(self, host: str, mode: str) -> None:
        self.modes[host] = mode

    def reset(self) -> None:
        with self.lock:
            self.modes.clear()
            self.seen.clear()

    def requests_to(self, host: str) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if s.host == host]


def _credentials(seen: Seen) -> str:
    """Everything secret-looking the request carried, for error bodies to echo."""
    parts = [
        v for k, v in seen.headers.items() if k in ("authorization", "x-api-key", "x-goog-api-key")
    ]
    return " ".join([*parts, seen.path, json.dumps(seen.query)])


def _handler(state: FakeProviders) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return None

        def _serve(self) -> None:
            url = urlsplit(self.path)
            host, _, rest = url.path.lstrip("/").partition("/")
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            seen = Seen(
                host,
                self.command,
                "/" + rest,
                parse_qs(url.query),
                {k.lower(): v for k, v in self.headers.items()},
                body,
            )
            with state.lock:
                state.seen.append(seen)
            mode = state.modes.get(host, "ok")
            if mode == "slow":
                time.sleep(state.slow_seconds)
            if mode.startswith("slow-after:"):
                with state.lock:
                    earlier = sum(s.host == host for s in state.seen) - 1
                if earlier >= int(mode.split(":")[1]):
                    time.sleep(state.slow_seconds)
            if mode.startswith("status:"):
                message = {"error": f"rejected credentials {_credentials(seen)}"}
                return self._send(int(mode.split(":")[1]), json.dumps(message).encode())
            if mode == "oversize":
                return self._send(200, b"[" + b"0," * (state.oversize_bytes // 2) + b"0]")
            if mode == "broken-head":
                self.close_connection = True
                head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nno header\r\n"
                echo = f"x-echo: {_credentials(seen)}\r\n".encode("latin-1", "replace")
                return self.wfile.write(head + echo + b"content-length: 2\r\n\r\n{}")
            if mode == "garbage":
                return self._send(200, f"<html>{_credentials(seen)}</html>".encode())
            if mode.startswith("body:"):
                return self._send(200, mode.removeprefix("body:").encode("utf-8", "surrogatepass"))
            if mode.startswith("redirect:"):
                return self._send(302, b"", location=mode.removeprefix("redirect:"))
            for route_host, method, pattern, answer in ROUTES:
                match = pattern.fullmatch(seen.path)
                if route_host == host and method == self.command and match:
                    out = answer(match, seen.query, body)
                    data = out if isinstance(out, bytes) else json.dumps(out).encode()
                    return self._send(200, data, github=host == "api.github.com")
            self._send(404, json.dumps({"error": f"no route {_credentials(seen)}"}).encode())

        def _send(
            self, status: int, data: bytes, *, github: bool = False, location: str | None = None
        ) -> None:
            self.send_response(status)
            if location is not None:
                self.send_header("location", location)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            if github:
                self.send_header("x-ratelimit-limit", "60")
                self.send_header("x-ratelimit-remaining", "59")
                self.send_header("x-ratelimit-reset", "1767225600")
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(data)  # a client that timed out has gone away

        do_GET = do_POST = _serve

    return Handler


@contextlib.contextmanager
def fake_providers(address: str = "127.0.0.1") -> Iterator[FakeProviders]:
    """Serve every fake provider on an ephemeral port of ``address`` until the block ends."""
    state = FakeProviders()
    server = ThreadingHTTPServer((address, 0), _handler(state))
    server.daemon_threads = True
    state.port = server.server_address[1]
    # Looked at every 50 ms for the shutdown (the default 0.5 s was the end of every block).
    thread = threading.Thread(
        target=server.serve_forever, args=(0.05,), name="fake-providers", daemon=True
    )
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def skill_runtime(project_root: Any, broker: Any) -> Any:
    """A ``SpliceRuntime`` at ``project_root`` (created with a ``splice.json``) using ``broker``."""
    from pathlib import Path

    from splice_build.runtime import SpliceRuntime

    root = Path(project_root)
    root.mkdir(parents=True, exist_ok=True)
    (root / "splice.json").write_text('{"specVersion": 1, "packages": {}}\n', encoding="utf-8")
    return SpliceRuntime(project_root=root, env={}, broker=broker)


#: Recognizable values for every provider variable (built here so no file holds a key format).
def recognizable_keys() -> dict[str, str]:
    marker = "LEAKCANARY"
    return {
        "TAVILY_API_KEY": f"tvly-{marker}-tavily-0001",
        "EXA_API_KEY": f"exa-{marker}-0002-exa",
        "FIRECRAWL_API_KEY": f"fc-{marker}-0003-firecrawl",
        "OPENROUTER_API_KEY": "sk-" + f"or-v1-{marker}0004openrouter",
        "GEMINI_API_KEY": "AI" + f"za{marker}0005gemini",
        "GITHUB_TOKEN": "gh" + f"p_{marker}0006github",
        "ROBINHOOD_RPC_URL": f"https://{RPC_HOST}/v2/{marker}0007rpcpathkey?apikey={marker}0008query",
    }


def broker_for(fake: FakeProviders, env: dict[str, str] | None = None, **options: Any) -> Any:
    """A real ``Broker`` whose providers reach ``fake`` (short time and size limits)."""
    from splice_build.broker import Broker
    from splice_build.broker.keys import load_keys

    options = {"request_timeout": 1.0, "max_response_bytes": 64 * 1024, **options}
    keys = load_keys(
        env=env if env is not None else recognizable_keys(), project_root=None, home=None
    )
    return Broker(keys=keys, _unsafe_endpoints=fake.endpoints, **options)
