"""Serve a registry data directory over HTTP with uvicorn (``splice registry serve``).

The listening socket is bound here, before uvicorn starts, so ``--port 0`` works and the
caller learns the real address (``on_listen``, once SIGTERM stops the server cleanly:
splice_build/stopping.py), and every accepted connection runs with ``TCP_NODELAY`` (``splice_build.listen``). The store is
opened (and migrated) here too, once, before any worker starts: with ``workers > 1`` this
process then only supervises worker processes serving the same socket (``http.workers``).

Every log line of the server process (ours, uvicorn's, Python warnings, tracebacks) goes to
one stderr handler whose formatter redacts the finished line (``LOG_CONFIG``): an exception
text that carries a token or a ``NAME=value`` secret is shown redacted (docs/registry.md).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from splice_build.client_address import IPNetwork
from splice_build.connections import HEAD_SECONDS
from splice_build.listen import cannot_listen, listening_socket
from splice_build.records import dataclass
from splice_build.registry.client.deadline import DEFAULT_DEADLINE
from splice_build.registry.service.ratelimit import RateLimits
from splice_build.registry.service.registry_service import RegistryService
from splice_build.registry.storage import StorageConfig, open_service

ADMIN_TOKEN_ENV = "SPLICE_REGISTRY_ADMIN_TOKEN_SHA256"


@dataclass(frozen=True)
class ServeDeadlines:
    """``head``: seconds for a request head, from the connection opening or the previous
    answer on it (splice_build/connections.py); ``body``: the base of a request body's
    deadline, once its head is in (``body.body_seconds``). The defaults are what a client
    with the default deadlines needs (docs/registry.md#deadlines)."""

    head: float = HEAD_SECONDS
    body: float = DEFAULT_DEADLINE


DEFAULT_DEADLINES = ServeDeadlines()

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
    workers: int = 1,
    deadlines: ServeDeadlines = DEFAULT_DEADLINES,
) -> None:
    """Run until SIGTERM (then return, splice_build/stopping.py) or SIGINT (raised again
    once stopped); either stops gracefully.

    ``config`` selects PostgreSQL / S3 back ends (``storage.StorageConfig``); by default the
    store is the data directory. ``trusted_proxies`` are the only peers whose
    ``X-Forwarded-For`` is read (``splice_build.client_address``); uvicorn's own handling is off.
    ``workers`` > 1 serves from that many processes sharing the store (``http.workers``).
    ``deadlines``: how long a request head and body may take (docs/registry.md#connections).
    """
    import logging.config

    logging.config.dictConfig(LOG_CONFIG)
    logging.captureWarnings(True)  # warnings become log records, redacted like the rest
    try:  # first, so that an address that cannot be used leaves no store behind
        sock = listening_socket(host, port)  # TCP_NODELAY on every accepted connection
    except OSError as exc:  # in use, not an address of this machine, not resolvable
        raise cannot_listen(host, port, exc) from exc

    def open_store() -> RegistryService:
        return open_service(
            data, admin_token_sha256=admin_token_sha256, limits=limits, config=config
        )

    def run(service: RegistryService, on_ready: Callable[[], None] = lambda: None) -> None:
        _serve(service, trusted_proxies, deadlines, sock, on_ready)

    with sock:
        service = open_store()  # creates and migrates the store, once
        bound_host, bound_port = sock.getsockname()[:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        url = f"http://{shown}:{bound_port}"
        if workers == 1:
            run(service, on_ready=lambda: on_listen(url))
            return
        import uvicorn  # noqa: F401  (imported before the forks: every worker starts at once)

        from splice_build.registry.http import app  # noqa: F401
        from splice_build.registry.http.workers import supervise

        service.deps.meta.close()  # no connection (nor a pool's threads) crosses a fork
        supervise(workers, lambda: run(open_store()), on_ready=lambda: on_listen(url))


def _serve(
    service: RegistryService,
    trusted_proxies: Sequence[IPNetwork],
    deadlines: ServeDeadlines,
    sock: socket.socket,
    on_ready: Callable[[], None],
) -> None:
    """uvicorn on ``sock`` with the connection limits both servers share
    (splice_build/connections.py, docs/registry.md#connections)."""
    import logging

    from splice_build.connections import serve_limited
    from splice_build.registry.http.app import create_app
    from splice_build.registry.http.body import BODY_READS
    from splice_build.stopping import REGISTRY_GRACE_SECONDS, Stop

    app = create_app(service, trusted_proxies=trusted_proxies, body_deadline=deadlines.body)
    config = {
        "app": app,
        "log_config": None,  # LOG_CONFIG is in place; uvicorn must not install its own handlers
        "log_level": "warning",
        "access_log": False,
        "lifespan": "off",
        "proxy_headers": False,
        "server_header": False,  # uvicorn's "server: uvicorn" names the software to everyone
    }
    warn = logging.getLogger("uvicorn.error").warning
    # SIGTERM: requests in flight finish, exit 0; bodies still arriving at the cut are 503.
    stop = Stop(grace=REGISTRY_GRACE_SECONDS, cut=getattr(app.state, BODY_READS).end)
    serve_limited(config, sock, warn, stop, on_ready, head_seconds=deadlines.head)
