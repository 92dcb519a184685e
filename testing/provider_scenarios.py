"""Real data providers against local servers that answer under the providers' real names.

Run by ``testing.netns.run_in_private_netns(..., module="testing.provider_scenarios",
hosts=HOSTS_FILE)``: inside a private network and mount namespace, ``/etc/hosts`` maps every
provider host to ``PROVIDER_ADDRESS`` and ``elsewhere.test`` to ``ELSEWHERE_ADDRESS``, two
public addresses on ``lo``. The providers' clients therefore keep their production allow-list
(exactly their own host name), the production resolver and the production address policy;
only the scheme and port of a base URL are changed (``Broker(_unsafe_endpoints=…)``), and the
TLS scenario changes nothing at all. Each scenario prints one JSON line.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from testing.fake_providers import HOSTS, POOL_ADDRESS, RPC_HOST, TOKEN_ADDRESS, recognizable_keys

PROVIDER_ADDRESS = "11.0.0.10"  # public (not in any refused range); exists only on lo here
ELSEWHERE_ADDRESS = "11.0.0.66"
ELSEWHERE = "elsewhere.test"
HOSTS_FILE = {**dict.fromkeys(HOSTS, PROVIDER_ADDRESS), ELSEWHERE: ELSEWHERE_ADDRESS}

# One call per provider host: the capability that makes the provider reach that host.
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "api.tavily.com": ("web.search", {"query": "q"}),
    "api.exa.ai": ("web.search", {"query": "q"}),
    "api.firecrawl.dev": ("web.search", {"query": "q"}),
    "api.dexscreener.com": ("market.search", {"query": "tst"}),
    "api.geckoterminal.com": ("market.ohlcv", {"network": "eth", "pool": POOL_ADDRESS}),
    RPC_HOST: ("onchain.balance", {"address": TOKEN_ADDRESS}),
    "api.github.com": ("github.repository", {"repo": "octo/hello"}),
    "raw.githubusercontent.com": (
        "github.raw",
        {"url": "https://raw.githubusercontent.com/octo/hello/main/README.md"},
    ),
    "openrouter.ai": ("ai.models", {}),
    "generativelanguage.googleapis.com": ("ai.models", {}),
}


def provider_hosts_of(provider: Any) -> tuple[str, ...]:
    """The hosts a provider may reach: its own list, or the host of its key URL (JSON-RPC)."""
    return (RPC_HOST,) if provider.key_is_endpoint else tuple(provider.hosts)


def _broker(name: str, **options: Any) -> Any:
    """A real Broker serving exactly one real provider (no fallback hides a refusal)."""
    from splice_build.broker import Broker
    from splice_build.broker.keys import load_keys
    from splice_build.broker.providers import PROVIDERS

    keys = load_keys(env=recognizable_keys(), project_root=None, home=None)
    return Broker(keys=keys, providers={name: PROVIDERS[name]}, request_timeout=3.0, **options)


def _call(broker: Any, host: str) -> dict[str, Any]:
    capability, args = CALLS[host]
    return broker.call({"package": "@t/p", "tool": "t", "capability": capability, "args": args})


def _seen_host(headers: Mapping[str, str]) -> str:
    return headers.get("host", "").rsplit(":", 1)[0]


def provider_hosts() -> dict[str, Any]:
    """Every host of every provider: a plain call reaches it; a redirect to any other provider
    host, to ``elsewhere.test`` or to a public IP literal is refused before connecting."""
    from splice_build.broker.providers import PROVIDERS
    from testing.fake_providers import fake_providers
    from testing.netservers import serve

    out: dict[str, Any] = {}
    with fake_providers(PROVIDER_ADDRESS) as fake, serve(ELSEWHERE_ADDRESS) as elsewhere:
        endpoints = {host: f"http://{host}:{fake.port}/{host}" for host in HOSTS}
        targets = {host: f"http://{host}:{fake.port}/{host}/stolen" for host in HOSTS}
        targets[ELSEWHERE] = f"http://{ELSEWHERE}:{elsewhere.port}/stolen"
        targets[ELSEWHERE_ADDRESS] = f"http://{ELSEWHERE_ADDRESS}:{elsewhere.port}/stolen"
        for name, provider in PROVIDERS.items():
            for host in provider_hosts_of(provider):
                fake.reset()
                control = _call(_broker(name, _unsafe_endpoints=endpoints), host)
                plain = [
                    {"host": _seen_host(s.headers), "authorization": "authorization" in s.headers}
                    for s in fake.seen
                ]
                refused: dict[str, str] = {}
                for target, url in targets.items():
                    if target == host:
                        continue
                    fake.reset()
                    fake.behave(host, f"redirect:{url}")
                    result = _call(_broker(name, _unsafe_endpoints=endpoints), host)  # no cache
                    attempts = result.get("attempts") or [{}]
                    refused[target] = f"{result['status']} {attempts[0].get('error', '')}"
                    wrong = {_seen_host(s.headers) for s in fake.seen} - {host}
                    if wrong:
                        refused[target] += f" REACHED {sorted(wrong)}"
                out[f"{name} {host}"] = {
                    "control": control["status"],
                    "plain": plain,
                    "refused": refused,
                }
        out["elsewhere seen"] = len(elsewhere.seen)
    return out


@contextlib.contextmanager
def _interceptor(names: list[str]) -> Iterator[dict[str, int]]:
    """A TLS endpoint on PROVIDER_ADDRESS:443 presenting a certificate for ``names`` signed by
    its own CA, as an intercepting proxy does; counts handshakes and completed requests."""
    from testing.netservers import make_certificates

    counts = {"connections": 0, "requests": 0}
    with tempfile.TemporaryDirectory() as tmp:
        cert, key, _ca = make_certificates(Path(tmp), names)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
    listener = socket.create_server((PROVIDER_ADDRESS, 443))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                raw, _ = listener.accept()
            except OSError:
                continue
            counts["connections"] += 1
            raw.settimeout(5)
            try:
                with context.wrap_socket(raw, server_side=True) as tls:
                    if tls.recv(65536):
                        counts["requests"] += 1
                        tls.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield counts
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def provider_tls() -> dict[str, Any]:
    """Every provider host behind TLS interception: the call fails, the provider is reported
    degraded, and no request is ever sent without verification."""
    from splice_build.broker.providers import PROVIDERS

    out: dict[str, Any] = {}
    with _interceptor(list(HOSTS)) as counts:
        for name, provider in PROVIDERS.items():
            for host in provider_hosts_of(provider):
                broker = _broker(name)  # production base URLs: https://<host>/…
                before = broker.status()[0]["state"]
                connections = counts["connections"]
                result = _call(broker, host)
                attempts = result.get("attempts") or [{}]
                out[f"{name} {host}"] = {
                    "before": before,
                    "status": result["status"],
                    "error": attempts[0].get("error", ""),
                    "after": broker.status()[0]["state"],
                    "connections": counts["connections"] - connections,
                }
        out["requests"] = counts["requests"]
    return out


if __name__ == "__main__":
    scenario, *arguments = sys.argv[1:]
    print(json.dumps(globals()[scenario](*arguments)))
