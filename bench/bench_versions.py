"""Publish and package reads against a package's history (issue #24, item 2).

One real ``splice registry serve`` (SQLite) holds ``@bench/small`` with 10 versions and
``@bench/big`` with 5,000, which are read, and their twins ``small-w`` and ``big-w``, which are
published to (so the reads stay at exactly 10 and 5,000 versions). The history is written
straight into the store before the server starts; those artifacts are never read. Each row is a median over alternating requests on
one kept-alive connection per package, the big package against the small one in the same run:
the target is ≤ 1.5× (docs/registry.md#version-lists).

``SPLICE_BENCH_BEFORE_TREE=<dir>`` (a checkout of an older commit) also serves the same
store with that tree's code, for the before rows.
"""

from __future__ import annotations

import http.client
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from bench.common import Row, median

SMALL, BIG = 10, 5000
BEFORE_TREE_ENV = "SPLICE_BENCH_BEFORE_TREE"


def _fill(data: Path, package: str, count: int) -> None:
    from splice_build.registry.db.interface import NewVersion, Publisher, Version
    from splice_build.registry.storage import StorageConfig, open_metadata
    from splice_build.spec.semver import latest_version

    store = open_metadata(data, StorageConfig())
    try:
        user = store.user_by_name("bench") or store.create_user("bench", now="2025-01-01")
        for patch in range(count):
            hours, seconds = divmod(patch, 3600)  # one version a second, like a busy CI
            at = f"2025-01-01T{hours:02d}:{seconds // 60:02d}:{seconds % 60:02d}.000Z"
            version = f"0.0.{patch}"
            row = Version(
                package_id=f"@bench/{package}",
                version=version,
                manifest="{}",
                integrity="sha256-" + "0" * 64,
                size=1,
                artifact_key=f"filled/{package}/{version}",
                published_by="bench",
                published_at=at,
                artifact_backend="fs",
                artifact_url=None,
                provenance=None,
            )
            new = NewVersion(
                row, "bench", package, "filled", "skill", Publisher(user.id, claim=True)
            )
            store.insert_version(new, latest_of=lambda vs: str(latest_version(vs)), now=at)
    finally:
        store.close()


def _connection(url: str) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)


def _timed(
    connection: http.client.HTTPConnection,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[float, int]:
    start = time.perf_counter()
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    data = response.read()
    elapsed = time.perf_counter() - start
    if response.status >= 300:
        raise AssertionError(f"{method} {path}: {response.status} {data[:200]!r}")
    return elapsed, len(data)


def _measure(url: str, token: str, archives: dict[str, list[bytes]], repeat: int) -> list[Row]:
    """Rows for one server: big against small, alternating."""
    connections = {name: _connection(url) for name in ("small", "big")}
    auth = {"authorization": f"Bearer {token}", "content-type": "application/gzip"}
    samples: dict[tuple[str, str], list[float]] = {}
    sizes: dict[tuple[str, str], int] = {}

    def record(what: str, name: str, job: Callable[[], tuple[float, int]]) -> None:
        elapsed, size = job()
        samples.setdefault((what, name), []).append(elapsed)
        sizes[(what, name)] = size

    try:
        for name in ("small", "big"):  # warm both connections and caches
            _timed(connections[name], "GET", f"/packages/bench/{name}")
        for index in range(repeat):
            for name in ("small", "big"):
                conn = connections[name]
                record(
                    "package", name, lambda c=conn, n=name: _timed(c, "GET", f"/packages/bench/{n}")
                )
                record(
                    "versions",
                    name,
                    lambda c=conn, n=name: _timed(c, "GET", f"/packages/bench/{n}/versions"),
                )
                if index < len(archives[name]):  # into the package's twin: reads stay at
                    body = archives[name][index]  # exactly SMALL and BIG versions
                    record(
                        "publish",
                        name,
                        lambda c=conn, b=body: _timed(c, "POST", "/publish", b, auth),
                    )
    finally:
        for connection in connections.values():
            connection.close()
    rows = []
    labels = {
        "publish": "POST /publish",
        "package": "GET /packages/:ns/:name",
        "versions": "GET /packages/:ns/:name/versions",
    }
    for what, label in labels.items():
        big, small = samples[(what, "big")], samples[(what, "small")]
        rows.append(
            Row(
                f"{label}, {BIG} versions",
                median(big) * 1000,
                "ms",
                f"{SMALL} versions",
                median(small) * 1000,
                "≤ 1.5×",
            )
        )
    for what in ("package", "versions"):
        rows.append(
            Row(
                f"{labels[what]} body, {BIG} versions",
                sizes[(what, "big")] / 1024,
                "KiB",
                f"{SMALL} versions",
                sizes[(what, "small")] / 1024,
            )
        )
    return rows


def before_argv(tree: str, data: Path) -> list[str]:
    """``splice registry serve`` with the code of an older tree (rate limits off)."""
    script = (
        f"import sys; sys.path.insert(0, {tree!r}); "
        "from splice_build.cli.main import main; sys.exit(main())"
    )
    return [
        sys.executable,
        "-c",
        script,
        "registry",
        "serve",
        "--port",
        "0",
        "--data",
        str(data),
        "--publish-limit",
        "0",
        "--request-limit",
        "0",
    ]


def run(quick: bool = False) -> list[Row]:
    from testing.registry import artifact
    from testing.registry_server import launch, registry_server, user_token

    repeat = 15 if quick else 60
    before_tree = os.environ.get(BEFORE_TREE_ENV)
    rounds = 2 if before_tree else 1
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data = root / "data"
        data.mkdir()
        for name, count in (("small", SMALL), ("big", BIG)):
            _fill(data, name, count)  # read
            _fill(data, f"{name}-w", count)  # published to
        archives = {
            name: [
                artifact(root / "pkgs", "bench", f"{name}-w", f"1.{i}.{r}")
                for i in range(repeat)
                for r in range(rounds)
            ]
            for name in ("small", "big")
        }
        per_round = {name: [archives[name][i::rounds] for i in range(rounds)] for name in archives}
        with registry_server(data, "--publish-limit", "0", "--request-limit", "0") as server:
            token = user_token(server, "bench")
            rows += _measure(server.url, token, {k: v[0] for k, v in per_round.items()}, repeat)
        if before_tree:
            before = launch(before_argv(before_tree, data), data)
            try:
                found = _measure(before.url, token, {k: v[1] for k, v in per_round.items()}, repeat)
            finally:
                before.stop()
            rows += [
                Row(f"before: {r.name}", r.value, r.unit, r.baseline, r.baseline_value, r.target)
                for r in found
            ]
    return rows
