"""Fuzz targets for what the registry does with a caller's arguments and budget (fuzz/README.md).

``registry_info`` calls the ``/mcp`` endpoint's ``registry_package_info`` (registry/
mcp_backend.py) with any ``package`` and ``version`` strings, charged as the endpoint charges
it. ``costly_reads`` runs ``count_costly_read`` and ``settle_costly_read`` (registry/service/
ratelimit.py) in any order, with any costs and CPU times, over the real SQLite store and a
clock the bytes move.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

Check = Callable[[bytes], None]

# What registry_package_info may answer an argument with (the MCP server's tool errors).
_INFO_CODES = {"INVALID_INPUT", "INVALID_NAME", "INVALID_RANGE", "NOT_FOUND", "PACKAGE_NOT_FOUND"}


def registry_info() -> Check:
    """Up to the first NUL the ``package``, after it the ``version`` (none: no NUL). First
    byte: 0 mod 3, both strings; 1, the version as JSON (any value); 2, the package as
    JSON. An answer names the package asked for and one of its versions."""
    import json

    from fuzz.targets import Finding, _expect_codes, _publish_example, _scratch
    from splice_build.errors import SpliceError
    from splice_build.registry.mcp_backend import (
        PACKAGE_INFO,
        RegistryDiscoveryBackend,
        charged_to,
    )
    from splice_build.registry.service import admin
    from splice_build.registry.service.ratelimit import RateLimits
    from splice_build.registry.service.read import Keyed
    from splice_build.registry.service.tokens import TokenRequest
    from splice_build.registry.storage import open_service

    service = open_service(
        _scratch() / "registry-info",
        limits=RateLimits(failed_auth=0, publishes=0, requests=0, admin=0, costly_reads=0),
    )
    admin.create_user(service.deps, "fuzzer")
    token = admin.create_token(service.deps, "fuzzer", TokenRequest(can_manage=True))["token"]
    _publish_example(service, token)
    backend = RegistryDiscoveryBackend(service.deps)

    def charge(document: Keyed) -> Callable[[float], None]:
        return service.charge_costly_read("127.0.0.1", document.cost)

    def value(text: str) -> object:
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            return text

    def check(data: bytes) -> None:
        if not data:
            return
        text = data[1:].decode("utf-8", "surrogateescape" if data[0] & 8 else "replace")
        package, nul, version = text.partition("\0")
        arguments: dict[str, object] = {"package": package}
        if nul:
            arguments["version"] = version
        mode = data[0] % 3
        if mode == 1 and nul:
            arguments["version"] = value(version)
        elif mode == 2:
            arguments["package"] = value(package)
        try:
            with charged_to(charge):
                outcome = backend.call_tool(PACKAGE_INFO, arguments)
        except SpliceError as exc:
            _expect_codes(exc, _INFO_CODES)
            return
        answer = outcome.output
        if answer["name"] != "@fuzzer/example" or answer["version"] not in answer["versions"]:
            raise Finding(f"answered {answer['name']}@{answer['version']} for {arguments!r:.200}")

    return check


# 256 KiB: one costly read up front (ratelimit.COSTLY_READ).
_UNIT_COST = 256 * 1024


def costly_reads() -> Check:
    """Each 4 bytes one step: (client, operation, a, b). Operation 0 starts a read of ``a``
    times 64 KiB of stored text; 1 settles the ``a``-th read in flight after ``b`` × 10 ms of
    CPU; 2 moves the clock ``a`` × ``b`` / 8 seconds on. After every step, each client's count
    in the present window holds at least what its reads in flight were charged up front and
    its settled reads of this window took (a costly read per 0.1 s begun, one at least for a
    read charged up front; of a read charged in a window gone by, what it took beyond)."""
    import math

    from fuzz.targets import Finding, _scratch
    from splice_build.records import replace
    from splice_build.registry.service.ratelimit import (
        CostlyCharge,
        RateLimitedError,
        RateLimits,
        _costly_key,
        count_costly_read,
        settle_costly_read,
    )
    from splice_build.registry.storage import open_service

    limits = RateLimits(failed_auth=0, publishes=0, requests=0, admin=0, costly_reads=30)
    service = open_service(_scratch() / "costly-reads", limits=limits)
    clients = ("127.0.0.1", "2001:db8::1", "2001:db8::2", "10.0.0.1")  # the 2nd and 3rd: one /64
    now = [1_000_000.0]
    deps = replace(service.deps, clock=lambda: now[0])
    period = limits.costly_read_period

    def check(data: bytes) -> None:
        now[0] += 10 * period  # a fresh window for each input
        flying: list[tuple[str, CostlyCharge]] = []
        settled: list[tuple[str, int, int]] = []  # client key, window, units owed there
        for at in range(0, len(data) - 3, 4):
            who, op, a, b = data[at : at + 4]
            client = clients[who % len(clients)]
            if op % 3 == 0:
                with contextlib.suppress(RateLimitedError):  # refused, and charged all the same
                    flying.append((client, count_costly_read(deps, client, a * 65536)))
            elif op % 3 == 1 and flying:
                client, charged = flying.pop(a % len(flying))
                seconds = b / 100
                settle_costly_read(deps, client, charged, seconds)
                took = math.ceil(seconds / limits.costly_read_seconds) if seconds >= 0.1 else 0
                if charged.units:
                    took = max(took, 1)
                units = charged.units
                if charged.window == int(now[0] // period):
                    settled.append((_costly_key(client), charged.window, took))
                else:  # charged up front in a window gone by: the rest in this one
                    settled.append(
                        (_costly_key(client), int(now[0] // period), max(took - units, 0))
                    )
            elif op % 3 == 2:
                now[0] += a * b / 8
            window = int(now[0] // period)
            owed: dict[str, int] = {}
            for client, charged in flying:
                if charged.window == window:
                    key = _costly_key(client)
                    owed[key] = owed.get(key, 0) + charged.units
            for key, at_window, took in settled:
                if at_window == window:
                    owed[key] = owed.get(key, 0) + took
            for key, units in owed.items():
                if deps.meta.count(key, window) < units:
                    raise Finding(f"{key}: {deps.meta.count(key, window)} charged, {units} owed")

    return check
