"""Every refused built-in through every route: static import, dynamic import(), the bare
name, process.getBuiltinModule, createRequire and module.registerHooks (issue #3)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode

pytestmark = pytest.mark.node

_GUARD = (
    Path(__file__).resolve().parents[2] / "splice_build" / "runtime" / "host" / "module_guard.mjs"
)
REQUIRED = [
    "net",
    "http",
    "https",
    "http2",
    "tls",
    "dgram",
    "dns",
    "dns/promises",
    "inspector",
    "inspector/promises",
    "module",
    "sqlite",
    "vm",
    "worker_threads",
    "child_process",
    "cluster",
    "wasi",
    "v8",
    "trace_events",
]


def _denied_modules() -> list[str]:
    text = _GUARD.read_text(encoding="utf-8")
    block = text.split("DENIED_MODULES = freeze([", 1)[1].split("]);", 1)[0]
    return re.findall(r"'([^']+)'", block)


DENIED = _denied_modules()
ROUTES = {
    "static_import": "import * as m from '{spec}'; export default () => Object.keys(m).length;",
    "dynamic_import": "export default async () => Object.keys(await import('{spec}')).length;",
    "get_builtin_module": "export default () => Object.keys(process.getBuiltinModule('{spec}')).length;",
}


def test_the_issue_list_is_a_subset_of_the_host_list() -> None:
    assert set(REQUIRED) <= set(DENIED)


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("module", DENIED)
def test_refused_with_node_prefix(run_tool, module: str, route: str) -> None:
    result = run_tool(ROUTES[route].format(spec=f"node:{module}"))
    assert result.error is not None and result.error.code == ErrorCode.PERMISSION_DENIED, (
        result.to_json()
    )


@pytest.mark.parametrize("module", [m for m in DENIED if m != "sqlite"])
def test_refused_by_bare_name(run_tool, module: str) -> None:
    result = run_tool(ROUTES["dynamic_import"].format(spec=module))
    assert result.error is not None and result.error.code == ErrorCode.PERMISSION_DENIED


@pytest.mark.parametrize(
    "body",
    [
        "import { createRequire } from 'node:module'; export default () => createRequire(import.meta.url)('node:net');",
        "export default async () => (await import('module')).createRequire(import.meta.url)('net');",
        "export default () => process.getBuiltinModule('module').registerHooks({ resolve: (s, c, n) => n(s, c) });",
        "import { registerHooks } from 'node:module'; export default () => registerHooks({});",
    ],
    ids=[
        "createRequire_static",
        "createRequire_dynamic",
        "registerHooks_builtin",
        "registerHooks_static",
    ],
)
def test_module_routes(run_tool, body: str) -> None:
    result = run_tool(body)
    assert result.error is not None and result.error.code == ErrorCode.PERMISSION_DENIED


@pytest.mark.parametrize(
    "module", ["fs", "node:path", "node:crypto", "node:os", "node:url", "node:events"]
)
def test_allowed_builtins_still_load(run_tool, module: str) -> None:
    result = run_tool(ROUTES["dynamic_import"].format(spec=module))
    assert result.ok, result.to_json()
