"""The load and soak driver (issue #21 item 2, issue #24 item 6): many concurrent loopback
clients on one asyncio loop, bounded by a request count and a time limit, while a sampler
reads the resident set and open file descriptors of the server process and its descendants
every ``interval`` seconds. The memory and fd figures are the server process's own (its
sandbox processes come and go with the calls; they are counted, and their memory reported,
apart).

Each client is one kept-alive HTTP/1.1 connection (``HttpConnection``, a minimal client:
a full-featured one costs more CPU per request than the servers under test, on the same
cores). A client is an async ``Step`` that sends one request and says what it was and how
long it took; a request that fails raises ``Failed`` and is counted, never retried. The
growth figures are least-squares slopes over the samples taken under load: MiB (or fds)
per 10,000 requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from bench.common import Row, median, percentile

PER = 10_000  # growth is reported per this many requests


class Failed(Exception):
    """A request that did not get the answer it should have (counted as an error)."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(f"{kind}: {reason}")
        self.kind = kind
        self.reason = reason


@dataclass(frozen=True)
class Done:
    """One finished request: its kind (a row label) and its latency in seconds."""

    kind: str
    seconds: float


Step = Callable[[], Awaitable[Done]]


@dataclass(frozen=True)
class Sample:
    seconds: float  # since the load began
    requests: int  # finished by then
    rss_mib: float  # the server process itself
    fds: int
    processes: int  # the server and every process below it (sandbox processes)
    tree_rss_mib: float  # their resident sets together


@dataclass
class Run:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    wall: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average at the start and the end


# -- HTTP --------------------------------------------------------------------------------------
class HttpConnection:
    """One kept-alive HTTP/1.1 connection to a loopback server (reopened if the server
    closes it). Understands ``content-length`` and chunked bodies: what uvicorn sends."""

    def __init__(self, host: str, port: int) -> None:
        self._host = host
        self._port = port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def request(
        self, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b""
    ) -> tuple[int, dict[str, str], bytes]:
        if self._writer is None or self._writer.is_closing():
            self._reader, self._writer = await asyncio.open_connection(self._host, self._port)
        assert self._reader is not None
        lines = [f"{method} {path} HTTP/1.1", f"host: {self._host}:{self._port}"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        if body or method == "POST":
            lines.append(f"content-length: {len(body)}")
        self._writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        head = await self._reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split(" ", 2)[1])
        answer: dict[str, str] = {}
        for line in header_lines:
            if line:
                name, _, value = line.partition(":")
                answer[name.strip().lower()] = value.strip()
        data = await self._body(answer)
        if answer.get("connection", "").lower() == "close":
            await self.close()
        return status, answer, data

    async def _body(self, headers: dict[str, str]) -> bytes:
        assert self._reader is not None
        if headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await self._reader.readuntil(b"\r\n")).split(b";")[0], 16)
                chunk = await self._reader.readexactly(size + 2)
                if size == 0:
                    return b"".join(parts)
                parts.append(chunk[:-2])
        return await self._reader.readexactly(int(headers.get("content-length", "0")))

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(OSError):
                await self._writer.wait_closed()
            self._writer = None


# -- the processes -----------------------------------------------------------------------------
def descendants(pid: int) -> list[int]:
    """``pid`` and every living process below it (from /proc/<pid>/stat's parent field)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="latin-1") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rpartition(")")[2].split()[1])
        parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo += parents.get(current, [])
    return found


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="latin-1") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0  # a zombie has no VmRSS line


def measure(pids: Sequence[int]) -> tuple[float, int, int]:
    """RSS in MiB, open fds and processes of ``pids`` (those that vanished are skipped)."""
    rss = fds = alive = 0
    for pid in pids:
        try:
            rss += _rss_kib(pid)
            fds += len(os.listdir(f"/proc/{pid}/fd"))
            alive += 1
        except OSError:
            continue
    return rss / 1024, fds, alive


# -- the driver --------------------------------------------------------------------------------
async def drive(
    steps: Sequence[Step],
    *,
    max_requests: int,
    seconds: float,
    server_pid: int,
    interval: float = 10.0,
) -> Run:
    """Run every step in a loop, concurrently, until ``max_requests`` have been sent or
    ``seconds`` have passed; sample the server every ``interval`` seconds (and at both ends)."""
    run = Run()
    budget = [max_requests]
    began = time.perf_counter()
    stop_at = began + seconds

    def sample() -> None:
        rss, fds, _ = measure([server_pid])
        tree_rss, _, processes = measure(descendants(server_pid))
        elapsed = time.perf_counter() - began
        run.samples.append(Sample(elapsed, run.requests, rss, fds, processes, tree_rss))

    async def client(step: Step) -> None:
        while budget[0] > 0 and time.perf_counter() < stop_at:
            budget[0] -= 1
            try:
                done = await step()
            except Failed as failed:
                run.errors[f"{failed.kind}: {failed.reason}"] += 1
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                run.errors[f"{type(exc).__name__}: {exc}"[:120]] += 1
            else:
                run.latencies.setdefault(done.kind, []).append(done.seconds)
            run.requests += 1

    async def sampler() -> None:
        while True:
            await asyncio.sleep(interval)
            sample()

    run.load = (os.getloadavg()[0], 0.0)
    sample()
    ticker = asyncio.create_task(sampler())
    try:
        await asyncio.gather(*(client(step) for step in steps))
    finally:
        ticker.cancel()
    run.wall = time.perf_counter() - began
    sample()
    run.load = (run.load[0], os.getloadavg()[0])
    return run


def slope(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of y over x (0 with fewer than two distinct x)."""
    if len(points) < 2:
        return 0.0
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    var = sum((x - mean_x) ** 2 for x, _ in points)
    if var == 0:
        return 0.0
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / var


def rows(label: str, run: Run, *, latency_target: dict[str, str] | None = None) -> list[Row]:
    """The table of one run: errors, throughput, p50/p99 per kind, memory, fds, processes.

    The slopes and the "first sample" baselines leave out the sample taken before any request
    (imports, caches and connections are set up by the first requests, once); the slopes
    also leave out the one taken after the last (nothing in flight any more). The slope of
    the second half tells a warm-up (allocator arenas, caches filling) from a steady growth."""
    targets = latency_target or {}
    out = [
        Row(f"{label}: requests", run.requests, "req"),
        Row(f"{label}: errors", sum(run.errors.values()), "req", target="0"),
        Row(f"{label}: throughput", run.requests / run.wall if run.wall else 0, "req/s"),
    ]
    for kind, samples in sorted(run.latencies.items()):
        out += [
            Row(f"{label}: {kind}: count", len(samples), "req"),
            Row(f"{label}: {kind}: p50", median(samples) * 1000, "ms"),
            Row(
                f"{label}: {kind}: p99",
                percentile(samples, 99) * 1000,
                "ms",
                target=targets.get(kind),
            ),
        ]
    loaded = run.samples[1:-1] if len(run.samples) > 3 else run.samples[1:]
    first, last = loaded[0] if len(loaded) > 1 else run.samples[0], run.samples[-1]
    out += [
        Row(f"{label}: RSS before the load", run.samples[0].rss_mib, "MiB"),
        Row(f"{label}: RSS at end", last.rss_mib, "MiB", "first sample", first.rss_mib),
        Row(f"{label}: RSS max", max(s.rss_mib for s in run.samples), "MiB"),
        Row(
            f"{label}: RSS slope",
            slope([(s.requests, s.rss_mib) for s in loaded]) * PER,
            f"MiB/{PER:,} req",
            target="≤ 1",
        ),
        Row(
            f"{label}: RSS slope, second half",
            slope([(s.requests, s.rss_mib) for s in loaded[len(loaded) // 2 :]]) * PER,
            f"MiB/{PER:,} req",
            target="≤ 1",
        ),
        Row(f"{label}: open fds at end", last.fds, "fds", "first sample", first.fds),
        Row(
            f"{label}: fd slope",
            slope([(s.requests, s.fds) for s in loaded]) * PER,
            f"fds/{PER:,} req",
            target="0",
        ),
        Row(f"{label}: processes at end", last.processes, "processes"),
        Row(f"{label}: processes max", max(s.processes for s in run.samples), "processes"),
        Row(f"{label}: RSS with descendants, max", max(s.tree_rss_mib for s in run.samples), "MiB"),
        Row(f"{label}: samples", len(run.samples), "samples"),
        Row(f"{label}: load average at end", run.load[1], "", "start", run.load[0]),
    ]
    for reason, count in run.errors.most_common(5):
        out.append(Row(f"{label}: error {reason}", count, "req"))
    return out


def interval_for(seconds: float) -> float:
    """Every 10 s, or often enough for six samples in a short run."""
    return min(10.0, max(0.5, seconds / 6))
