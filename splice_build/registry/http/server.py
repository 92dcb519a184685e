"""Serve a registry data directory over HTTP with uvicorn (``splice registry serve``).

The listening socket is bound here, before uvicorn starts, so ``--port 0`` works and the
caller learns the real address (``on_listen``) before the first request can arrive, and
every accepted connection runs with ``TCP_NODELAY`` (``splice_build.listen``).

Every log line of the server process (ours, uvicorn's, Python warnings, tracebacks) goes to
one stderr handler whose formatter redacts the finished line (``LOG_CONFIG``): an exception
text that carries a token or a ``NAME=value`` secret is shown redacted (docs/registry.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from splice_build.client_address import IPNetwork
from splice_build.errors import UsageError
from splice_build.listen import listening_socket
from splice_build.registry.service.ratelimit import RateLimits
from splice_build.registry.storage import StorageConfig, open_service

ADMIN_TOKEN_ENV = "SPLICE_REGISTRY_ADMIN_TOKEN_SHA256"
_UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")

# Applied before the store opens (its first log line is covered too): one handler, on the root
# logger, that every logger reaches (uvicorn's own loggers have none and propagate to it).
LOG_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "redacted": {
            "()": "splice_build.security.log_format.RedactingFormatter",
            "format": "%(levelname)s %(name)s: %(message)s",
        }
    },
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "formatter": "redacted",
            "stream": "ext://sys.stderr",
        }
    },
    "root": {"handlers": ["stderr"], "level": "WARNING"},
    "loggers": {name: {"handlers": [], "propagate": True} for name in _UVICORN_LOGGERS},
}


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
    ``X-Forwarded-For`` is read (``splice_build.client_address``); uvicorn's own handling is off.
    """
    import logging.config

    import uvicorn

    from splice_build.registry.http.app import create_app

    logging.config.dictConfig(LOG_CONFIG)
    logging.captureWarnings(True)  # warnings become log records, redacted like the rest
    try:  # first, so that an address that cannot be used leaves no store behind
        sock = listening_socket(host, port)  # TCP_NODELAY on every accepted connection
    except OSError as exc:  # in use, not an address of this machine, not resolvable
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    service = open_service(
        data, admin_token_sha256=admin_token_sha256, limits=limits, config=config
    )
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    config = uvicorn.Config(
        create_app(service, trusted_proxies=trusted_proxies),
        log_config=None,  # LOG_CONFIG is in place; uvicorn must not install its own handlers
        log_level="warning",
        access_log=False,
        lifespan="off",
        proxy_headers=False,
    )
    server = uvicorn.Server(config)
    on_listen(f"http://{shown}:{bound_port}")
    server.run(sockets=[sock])
