"""The network surface walked from inside a tool (fuzz/README.md, ``net_walk``).

One long-lived real sandbox per grant set and isolation (``net_walk``: in-process, the host's
guards alone; ``net_walk_os``: the OS layer too, where this machine has it), kept by the
runtime's opt-in reuse, runs a hostile tool (``fuzz/js/net_walk_tool.mjs``) that turns the
bytes into network attempts through every route it can enumerate (fetch in its spellings,
every built-in module Node lists, every function of globalThis, process's loaders) with URLs
in every spelling of the listeners' addresses, of names the test resolver points at them, and
redirects of every status and Location form.

The oracle is the listeners, not the host: recording TCP listeners on 127.0.0.1, 127.0.0.2,
127.0.0.3 and ::1 and a UDP one on 127.0.0.1 (``testing/recording_listeners.py``) write down
every connection (and its request head) as the kernel hands it over. A connection is allowed
only when the grant set names that host and the policy allows it (docs/network-security.md,
rule 3): the literal ``127.0.0.3`` declared reaches its listener with its own ``Host``; a
``localhost`` grant reaches the resolver's ``localhost`` (127.0.0.2) with ``Host: localhost``;
nothing else, ever (no name of the resolver's, which all answer non-public addresses, no
``0.0.0.0`` though declared, no datagram).
Every refusal the tool saw must carry a documented code: fetch's ``ERR_ACCESS_DENIED`` with a
reason, or ``TypeError('fetch failed')`` with a cause code of the documented list; an import
of a built-in off the allow-list ``ERR_ACCESS_DENIED``.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fuzz.sandbox_targets import OWN_ENDS  # how a tool may end itself, as fs_walk's
from testing.recording_listeners import Seen, start_listeners

Check = Callable[[bytes], None]
TOOL = Path(__file__).resolve().parent / "js" / "net_walk_tool.mjs"
ATTEMPTS = 12
# The test resolver (docs/network-security.md, "Test hook"): every name answers a non-public
# address, a listener's where there is one; ``localhost`` answers 127.0.0.2.
RESOLVER = {
    "granted.test": [["127.0.0.3"]],
    "x.wild.test": [["127.0.0.2"]],
    "mixed.test": [["127.0.0.3", "8.8.8.8"]],
    "rebind.test": [["127.0.0.3"], ["127.0.0.1"]],
    "v6.test": [["::1"]],
    "mapped.test": [["::ffff:127.0.0.1"]],
    "nat64.test": [["64:ff9b::7f00:1"]],
    "sixto4.test": [["2002:7f00:1::1"]],
    "localhost": [["127.0.0.2"]],
}
# Grant sets: the name of each, and what it declares.
GRANT_SETS = {
    "literal": ["127.0.0.3", "0.0.0.0", "granted.test", "*.wild.test", "mixed.test", "rebind.test"],
    "any": ["*"],
    "localhost": ["localhost", "v6.test", "mapped.test", "nat64.test", "sixto4.test"],
}
# What a tool may see from fetch (docs/network-security.md, "Refusals" and "Network failures").
FETCH_REASONS = {"scheme", "credentials", "not-declared", "not-public"}
FETCH_CAUSES = re.compile(
    r"ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ENETUNREACH|ECONNRESET|ETIMEDOUT|EADDRNOTAVAIL"
    r"|ERR_SPLICE_[A-Z_]+|UND_ERR_HEADERS_OVERFLOW|HPE_[A-Z_]+|ABORT_ERR"
)
# A module URL refused by the module guard (runtime/host/module_guard.mjs): its scheme, or a
# text that is no URL, read as an npm dependency; or by Node's own file URL check before it
# (a file: URL with a host).
MODULE_REFUSALS = {"ERR_ACCESS_DENIED", "ERR_SPLICE_MODULE_REFUSED", "ERR_INVALID_FILE_URL_HOST"}


def _host_of(head: str) -> str | None:
    for line in head.split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "host":
            return value.strip().lower()
    return None


def _allowed(grants: str, seen: Seen, ports: dict[str, int]) -> bool:
    """Whether policy lets a tool of ``grants`` reach this listener with this request: only
    the listener of the declared literal 127.0.0.3 (127.0.0.1, where ``0.0.0.0`` leads,
    never), or the one of the resolver's ``localhost`` (127.0.0.2) under a ``localhost``
    grant, with their own Host; a TLS hello (no Host: a name, in its SNI, only when the URL
    named one) or a connection the call's end cut before its first byte there too."""
    if seen.listener == "udp":
        return False
    host = _host_of(seen.head)
    port = ports[seen.listener]
    unread = seen.head == "" or seen.head.startswith("\x16")
    if grants == "literal":
        names = [name for name in RESOLVER if name in seen.head]
        return seen.listener == "127.0.0.3" and (
            host == f"127.0.0.3:{port}" or (unread and not names)
        )
    if grants == "localhost":
        return seen.listener == "127.0.0.2" and (
            host in {f"localhost:{port}", f"localhost.:{port}"}
            or seen.head == ""
            or (seen.head.startswith("\x16") and "localhost" in seen.head)
        )
    return False


def _fetch_end_documented(record: dict[str, Any]) -> bool:
    """A rejection of fetch, or of the Node URL or Request the route built for it, that
    docs/network-security.md (or Node, for its own constructors) names."""
    code, cause, message = record.get("code"), record.get("cause"), str(record.get("message"))
    if code == "ERR_ACCESS_DENIED":
        return record.get("reason") in FETCH_REASONS or "dispatcher" in message
    if record.get("name") != "TypeError":
        return False
    if message == "fetch failed":
        return cause is None or FETCH_CAUSES.fullmatch(cause) is not None
    if cause == "ERR_INVALID_URL" and message.startswith("Failed to parse URL from "):
        return True
    own = {"fetch URL": "ERR_INVALID_URL"}.get(record["route"])
    return (own is not None and code == own) or (
        "Request" in record["route"] and message.startswith("Request cannot be constructed")
    )


def _refusals(output: dict[str, Any], allowed: frozenset[str]) -> Iterator[str]:
    """Each attempt's end that no document names (``allowed``: the built-ins a tool may load)."""
    for record in output.get("records", []):
        refused_module = record["kind"] == "module" and record.get("module") not in allowed
        if refused_module and not record.get("thrown"):
            yield f"a built-in off the allow-list loaded: {record}"
        if record["kind"] == "import" and record.get("code") not in MODULE_REFUSALS:
            yield f"a module URL was not refused: {record}"
        if not record.get("thrown"):
            continue
        if record["kind"] == "fetch" and not _fetch_end_documented(record):
            yield f"a fetch ended with no documented code: {record}"
        elif refused_module and record.get("code") != "ERR_ACCESS_DENIED":
            yield f"a refused built-in loaded or ended otherwise: {record}"


def _node_builtins() -> list[str]:
    """Node's own list of its built-in modules (the one the sandbox runs)."""
    from splice_build.runtime.node import find_node

    listed = subprocess.run(
        [str(find_node().path), "-p", "JSON.stringify(require('module').builtinModules)"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return sorted(json.loads(listed.stdout))


def _allowed_builtins() -> frozenset[str]:
    from splice_build.runtime.builtins import allowed_builtins

    return frozenset(allowed_builtins())


def net_walk(isolation: str) -> Check:
    """The target over one sandbox per grant set of ``isolation`` (``in-process`` or ``os``)."""
    from fuzz.scratch import scratch_dir
    from fuzz.targets import Finding
    from splice_build.runtime import SpliceRuntime
    from splice_build.runtime.isolation import support
    from splice_build.spec.reuse import ReusePolicy
    from testing.hostile_packages import write_package

    allowed = _allowed_builtins()
    os_layer = isolation == "os" and support.detect().namespaces
    root = scratch_dir(f"net-walk-{isolation}")
    project = root / "project"
    project.mkdir()
    (project / "splice.json").write_text('{"packages": {}}\n', encoding="utf-8")
    where = start_listeners()
    env = {
        "ports": where.ports,
        "names": sorted(RESOLVER),
        "builtins": _node_builtins(),
    }
    runtime = SpliceRuntime(
        project_root=project,
        env={},
        isolation="in-process" if isolation == "in-process" else "auto",
        reuse=ReusePolicy(max_calls=100_000, idle_seconds=3600, max_memory_mb=512),
        _unsafe_test_resolver=RESOLVER,
    )
    loaded = {
        name: runtime.load(
            write_package(
                root / "packages",
                TOOL.read_text(encoding="utf-8"),
                name=f"net-{name}",
                permissions={"network": grants},
                timeout_ms=30_000,
            )
        )
        for name, grants in GRANT_SETS.items()
    }
    names = sorted(GRANT_SETS)

    def check(data: bytes) -> None:
        if not data:
            return
        grants = names[data[0] % len(names)]
        where.clear()
        payload = {
            "bytes": base64.b64encode(data[1:]).decode(),
            "attempts": ATTEMPTS,
            "env": env,
        }
        result = runtime.execute(loaded[grants], "t", payload)
        where.settle()
        answer = json.dumps(result.to_json())
        bad = [s for s in where.taken() if not _allowed(grants, s, where.ports)]
        if bad:
            raise Finding(
                f"grants {grants}: a listener was reached: "
                f"{[(s.listener, s.head[:300]) for s in bad]} after {answer[:6000]}"
            )
        if result.error is not None:
            if result.error.code not in OWN_ENDS:
                raise Finding(
                    f"grants {grants}: the tool ended {result.error.code}: {answer[-4000:]}"
                )
            return
        if os_layer and result.to_json()["isolation"]["layer"] != "os":
            raise Finding("no OS layer on a machine that has it")
        problems = list(_refusals(result.output, allowed))
        if problems:
            raise Finding(f"grants {grants}: {problems[:5]}")

    return check
