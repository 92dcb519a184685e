"""Serve a registry data directory over HTTP with uvicorn (``splice registry serve``).

The listening socket is bound here, before uvicorn starts, so ``--port 0`` works and the
caller learns the real address (``on_listen``) before the first request can arrive.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from pathlib import Path

from splice_build.registry.http.client_address import IPNetwork
from splice_build.registry.service.ratelimit import RateLimits
from splice_build.registry.storage import StorageConfig, open_service

ADMIN_TOKEN_ENV = "SPLICE_REGISTRY_ADMIN_TOKEN_SHA256"


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(
    data: Path,
    *,
    host: str,
    port: int,
    admin_token_sha256: str | None,
    limits: RateLimits,
    on_listen: Callable[[str], None],
    config: StorageConfig | None = None,
    trusted_proxies: Sequence[IPNetwork] = (),
) -> None:
    """Run until interrupted. Blocks; uvicorn handles SIGINT/SIGTERM gracefully.

    ``config`` selects PostgreSQL / S3 back ends (``storage.StorageConfig``); by default the
    store is the data directory. ``trusted_proxies`` are the only peers whose
    ``X-Forwarded-For`` is read (``http.client_address``); uvicorn's own handling is off.
    """
    import uvicorn

    from splice_build.registry.http.app import create_app

    service = open_service(
        data, admin_token_sha256=admin_token_sha256, limits=limits, config=config
    )
    sock = bind(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    config = uvicorn.Config(
        create_app(service, trusted_proxies=trusted_proxies),
        log_level="warning",
        access_log=False,
        lifespan="off",
        proxy_headers=False,
    )
    server = uvicorn.Server(config)
    on_listen(f"http://{shown}:{bound_port}")
    server.run(sockets=[sock])
