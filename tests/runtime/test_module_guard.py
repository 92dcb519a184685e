"""Built-ins by allow-list (issue #17, item 3): every built-in of the bundled Node, read from
its ``module.builtinModules`` when the tests run, is either on the list of
``schemas/builtins.json`` and loads by every route, or is refused with ``ERR_ACCESS_DENIED``
(runtime code ``PERMISSION_DENIED``) by every route: static import, dynamic import(),
``import.meta.resolve``, ``process.getBuiltinModule``, ``process.binding`` /
``_linkedBinding``, with and without the ``node:`` prefix. ``require`` is no route: CommonJS
never runs and ``node:module`` (createRequire, registerHooks) is refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode
from splice_build.runtime.builtins import allowed_builtins
from splice_build.runtime.node import find_node
from testing.node_builtins import bundled_builtins

pytestmark = pytest.mark.node

# The modules the issue names: none of them may ever be allowed (processes, sockets, code
# generation, engine and loader control, host identity).
NEVER_ALLOWED = [
    "child_process",
    "cluster",
    "dgram",
    "dns",
    "dns/promises",
    "http",
    "http2",
    "https",
    "inspector",
    "inspector/promises",
    "module",
    "net",
    "os",
    "repl",
    "tls",
    "trace_events",
    "v8",
    "vm",
    "wasi",
    "worker_threads",
    "_stream_wrap",
    "_http_client",
    "_tls_wrap",
]
# Names that no Node lists and that must be refused all the same (fail closed).
UNLISTED = [
    "node:quic",
    "node:internal/test/binding",
    "node:internal/bootstrap/realm",
    "node:fs?x",
    "node:fs#x",
    "node:fs/",
    "node:FS",
    "node:",
]


def _forms(module: str) -> list[str]:
    """The specifiers that name ``module``: both forms, or only ``node:x`` for the modules
    Node knows only with the prefix (``node:sqlite``; bare ``sqlite`` is a package name)."""
    return [module] if module.startswith("node:") else [module, f"node:{module}"]


PROBE = """
const forms = %(forms)s;
const codeOf = (e) => (e && typeof e.code === 'string' ? e.code : String(e));
const attempt = async (seen, key, f) => {
  try { const v = await f(); seen[key] = v == null ? 'missing' : 'ok'; } catch (e) { seen[key] = codeOf(e); }
};
export default async (input, ctx) => {
  const seen = {};
  for (let i = 0; i < forms.length; i += 1) {
    const f = forms[i];
    await attempt(seen, `import() ${f}`, () => import(f));
    await attempt(seen, `static import ${f}`, () => import(`./static_${i}.mjs`));
    await attempt(seen, `import.meta.resolve ${f}`, () => import.meta.resolve(f));
    await attempt(seen, `process.getBuiltinModule ${f}`, () => process.getBuiltinModule(f));
    await attempt(seen, `process.binding ${f}`, () => process.binding(f));
    await attempt(seen, `process._linkedBinding ${f}`, () => process._linkedBinding(f));
  }
  ctx.log(JSON.stringify(seen));
  if (input.uncaught) await import('./static_last.mjs');
  return seen;
};
"""


def _probe(run_tool, forms: list[str], *, uncaught: bool):
    statics = {
        f"tools/static_{i}.mjs": f"import * as m from '{form}';\nexport const n = Object.keys(m).length;\n"
        for i, form in enumerate(forms)
    }
    statics["tools/static_last.mjs"] = f"import * as m from '{forms[-1]}';\nexport default m;\n"
    body = PROBE % {"forms": json.dumps(forms)}
    return run_tool(body, {"uncaught": uncaught}, extra_files=statics)


def _expected(forms: list[str], verdict: str) -> dict[str, str]:
    out = {}
    for form in forms:
        for route in (
            "import()",
            "static import",
            "import.meta.resolve",
            "process.getBuiltinModule",
        ):
            out[f"{route} {form}"] = verdict
        out[f"process.binding {form}"] = "ERR_ACCESS_DENIED"
        out[f"process._linkedBinding {form}"] = "ERR_ACCESS_DENIED"
    return out


def test_the_named_modules_are_never_allowed() -> None:
    assert not set(NEVER_ALLOWED) & set(allowed_builtins())
    assert not [name for name in allowed_builtins() if name.startswith("_")]


def test_the_documented_table_is_the_list() -> None:
    """docs/security.md#built-in-modules names exactly the modules of the data file."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text("utf-8")
    section = doc.split("## Built-in modules", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    documented = {name for row in rows for name in re.findall(r"`([^`]+)`", row.split("|")[1])}
    assert documented == set(allowed_builtins())


def test_every_allowed_module_is_a_builtin_of_the_bundled_node() -> None:
    """A misspelt entry would allow nothing and hide it; every entry must be real."""
    assert set(allowed_builtins()) <= set(bundled_builtins())


@pytest.mark.parametrize("module", bundled_builtins())
def test_every_builtin_is_allowed_or_refused_by_every_route(run_tool, module: str) -> None:
    forms = _forms(module)
    name = module.removeprefix("node:")
    if name in allowed_builtins():
        result = _probe(run_tool, forms, uncaught=True)
        assert result.ok, result.to_json()
        assert result.output == _expected(forms, "ok")
        return
    result = _probe(run_tool, forms, uncaught=True)
    # The last, uncaught attempt fails the call with the runtime's code.
    assert result.error is not None and result.error.code == ErrorCode.PERMISSION_DENIED, (
        result.to_json()
    )
    seen = json.loads(result.logs.splitlines()[0])
    assert seen == _expected(forms, "ERR_ACCESS_DENIED")


@pytest.mark.parametrize("specifier", UNLISTED)
def test_unlisted_node_names_are_refused(run_tool, specifier: str) -> None:
    result = _probe(run_tool, [specifier], uncaught=False)
    assert result.ok, result.to_json()
    assert result.output == _expected([specifier], "ERR_ACCESS_DENIED")


@pytest.mark.parametrize("module", NEVER_ALLOWED)
def test_refused_with_node_prefix(run_tool, module: str) -> None:
    """A static import in the entry itself: the load fails with the runtime's code."""
    result = run_tool(f"import * as m from 'node:{module}'; export default () => Object.keys(m);")
    assert result.error is not None and result.error.code == ErrorCode.PERMISSION_DENIED, (
        result.to_json()
    )


@pytest.mark.parametrize("module", NEVER_ALLOWED)
def test_refused_by_bare_name(run_tool, module: str) -> None:
    result = run_tool(f"export default async () => Object.keys(await import('{module}'));")
    assert result.error is not None and result.error.code == ErrorCode.PERMISSION_DENIED


def test_a_string_that_changes_between_check_and_use_is_refused(run_tool) -> None:
    """getBuiltinModule checks and passes the same primitive: an object whose toString says
    ``fs`` first and ``net`` next is refused outright."""
    body = (
        "export default () => process.getBuiltinModule("
        "{ n: 0, toString() { return this.n++ ? 'net' : 'fs'; } });"
    )
    result = run_tool(body)
    assert result.error is not None and result.error.code == ErrorCode.PERMISSION_DENIED


def test_crypto_loads_no_engine(run_tool) -> None:
    """crypto is allowed without engines: Node's permission model refuses setEngine (an
    OpenSSL engine is native code)."""
    body = (
        "import crypto from 'node:crypto';"
        "export default () => { try { crypto.setEngine('dynamic'); return 'loaded'; }"
        " catch (e) { return e.code; } };"
    )
    result = run_tool(body)
    assert result.ok, result.to_json()
    assert result.output == "ERR_CRYPTO_CUSTOM_ENGINE_NOT_SUPPORTED"


def test_node_process_namespace_is_the_locked_process(run_tool) -> None:
    """``node:process`` is allowed: its default export is the locked global and its
    namespace offers none of the locked members."""
    body = (
        "import p, * as ns from 'node:process';"
        "export default () => ({ same: p === process, "
        "binding: typeof ns.binding, getBuiltinModule: typeof ns.getBuiltinModule, "
        "dlopen: typeof ns.dlopen, denied: (() => { try { p.binding('fs'); return 'ran'; }"
        " catch (e) { return e.code; } })() });"
    )
    result = run_tool(body)
    assert result.ok, result.to_json()
    assert result.output == {
        "same": True,
        "binding": "undefined",
        "getBuiltinModule": "undefined",
        "dlopen": "undefined",
        "denied": "ERR_ACCESS_DENIED",
    }


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


def test_commonjs_never_runs_so_require_is_no_route(run_tool) -> None:
    result = run_tool(
        "import x from './x.cjs'; export default () => x;",
        extra_files={"tools/x.cjs": "module.exports = require('node:os').hostname();\n"},
    )
    assert result.error is not None and result.error.code == ErrorCode.TOOL_LOAD_FAILED
    assert "CommonJS" in result.error.message


@pytest.mark.parametrize(
    "patch",
    [
        "globalThis.String = function () { return 'node:fs'; };",
        "String.prototype.startsWith = function () { return false; };",
        "Array.prototype.includes = function () { return true; };",
        "String.prototype.slice = function () { return 'fs'; };",
        "URL.canParse = function () { return true; };",
        "Object.defineProperty(Error.prototype, 'code', { set() {}, get() { return 'X'; } });",
    ],
    ids=["String", "startsWith", "includes", "slice", "canParse", "code_setter"],
)
def test_the_guard_uses_no_tool_replaceable_function(run_tool, patch: str) -> None:
    """The tool replaces what the guard could call (URL's statics are frozen: that attempt
    throws), then imports node:net by every route."""
    body = f"""
try {{ {patch} }} catch {{}}
export default async () => {{
  const seen = [];
  for (const load of [() => import('node:net'), () => import('net'),
                      () => process.getBuiltinModule('node:net'), () => import('_stream_wrap')]) {{
    try {{ await load(); seen.push('loaded'); }} catch (e) {{ seen.push(Object.getOwnPropertyDescriptor(e, 'code')?.value); }}
  }}
  return seen;
}};
"""
    result = run_tool(body)
    assert result.ok, result.to_json()
    assert result.output == ["ERR_ACCESS_DENIED"] * 4


# --- Node's loader runs in the tool's realm ------------------------------------------------
#
# It looks up, when it runs, what a tool can replace (URL getters, fs.readFileSync,
# TextDecoder's decode, names read through Object.prototype, the JavaScript of its TypeScript
# stripper): none of it may change which file the guard lets in or which text runs as a
# module (module_guard.mjs). The first two attacks are those of an outside review.

HARMLESS = {"tools/t2.mjs": 'export default "harmless packaged module";\n'}
WRITE_W = {"fs": {"read": [], "write": ["w"]}}

# The tool writes a module into its write grant and makes URL.prototype.pathname answer an
# in-package path when the host's bundle asks (the guard's check), the true one otherwise.
URL_POISON_OUTSIDE = r"""
import fs from 'node:fs';
export default async function t(input, ctx) {
  const J = ctx.paths.project, P = ctx.paths.package;
  fs.writeFileSync(J + '/w/evil.mjs', "export default 'code generated at run time';");
  const realGet = Object.getOwnPropertyDescriptor(URL.prototype, 'pathname').get;
  const inPkg = realGet.call(new URL('file://' + P + '/tools/t.mjs'));
  try {
    Object.defineProperty(URL.prototype, 'pathname', { configurable: true, get() {
      const real = realGet.call(this);
      if (real.endsWith('/w/evil.mjs') && (new Error().stack.split('\n')[4] || '').includes('/host/bundle.mjs')) return inPkg;
      return real;
    }});
  } catch {}
  return { loaded: (await import('file://' + J + '/w/evil.mjs')).default };
}
"""

# The guard checks a packaged module while Node's loader, asking the same getter, would read
# the one the tool wrote.
URL_POISON_DIVERGENCE = r"""
import fs from 'node:fs';
export default async function t(input, ctx) {
  const J = ctx.paths.project;
  fs.writeFileSync(J + '/w/evil.mjs', "export default 'read from the write grant';");
  const realGet = Object.getOwnPropertyDescriptor(URL.prototype, 'pathname').get;
  try {
    Object.defineProperty(URL.prototype, 'pathname', { configurable: true, get() {
      const real = realGet.call(this);
      const st = new Error().stack;
      if (real.endsWith('/tools/t2.mjs') && /getSource|defaultLoad|readFile/.test(st) && !/resolve/i.test(st)) return J + '/w/evil.mjs';
      return real;
    }});
  } catch {}
  return { loaded: (await import('./t2.mjs')).default };
}
"""


def test_a_poisoned_url_getter_lets_no_outside_module_in(run_tool, project: Path) -> None:
    (project / "w").mkdir()
    result = run_tool(URL_POISON_OUTSIDE, permissions=WRITE_W)
    assert result.error is not None, result.to_json()
    assert result.error.code == ErrorCode.PERMISSION_DENIED
    assert result.error.message == (
        "Access to a module outside the package is denied in the Splice sandbox"
    )


def test_a_poisoned_url_getter_does_not_change_what_the_loader_reads(
    run_tool, project: Path
) -> None:
    (project / "w").mkdir()
    result = run_tool(URL_POISON_DIVERGENCE, permissions=WRITE_W, extra_files=HARMLESS)
    assert result.ok, result.to_json()
    assert result.output == {"loaded": "harmless packaged module"}


# Each replaces, before importing the packaged ./t2.mjs, something Node's default load step
# looks up when it runs; each would otherwise have run `evil` as that module.
LOADER_POISONS = {
    "Object.prototype.source": """
Object.defineProperty(Object.prototype, 'source', {
  configurable: true, get() { return "export default 'evil'"; }, set(v) {},
});""",
    "fs.readFileSync": """
const fs = process.getBuiltinModule('node:fs');
const read = fs.readFileSync;
fs.writeFileSync(ctx.paths.project + '/w/evil.mjs', "export default 'evil';");
fs.readFileSync = function (p, ...rest) {
  return String(p).endsWith('/t2.mjs') ? read(ctx.paths.project + '/w/evil.mjs') : read.call(this, p, ...rest);
};""",
    "TextDecoder.prototype.decode": """
const decode = TextDecoder.prototype.decode;
TextDecoder.prototype.decode = function (...args) {
  const text = decode.apply(this, args);
  return text.includes('harmless') ? "export default 'evil';" : text;
};""",
}


@pytest.mark.parametrize("poison", sorted(LOADER_POISONS))
def test_what_node_looks_up_while_loading_does_not_change_the_module(
    run_tool, project: Path, poison: str
) -> None:
    (project / "w").mkdir()
    body = f"""
export default async function t(input, ctx) {{
  {LOADER_POISONS[poison]}
  return {{ loaded: (await import('./t2.mjs')).default }};
}}
"""
    result = run_tool(body, permissions=WRITE_W, extra_files=HARMLESS)
    assert result.ok, result.to_json()
    assert result.output == {"loaded": "harmless packaged module"}


# TypeScript whose stripping blanks characters that are longer in UTF-8 and inserts a `;`.
TYPED = (
    'const a: "é😀日" = "é😀日" as "é😀日";\n'
    "let b = a as string\n"
    "[1, 2].forEach((n: number) => n);\n"
    "interface Shape { kind: 'é' }\n"
    "export default { a, b, line: new Error().stack.split('\\n')[1].split(':').at(-2) };\n"
)


def test_typescript_is_stripped_by_the_guard_as_node_strips_it(run_tool) -> None:
    body = "export default async () => (await import('./typed.ts')).default;"
    result = run_tool(body, extra_files={"tools/typed.ts": TYPED})
    assert result.ok, result.to_json()
    # Positions are kept: the error made on line 5 of the file says line 5.
    assert result.output == {"a": "é😀日", "b": "é😀日", "line": "5"}


def test_a_poisoned_typescript_stripper_runs_no_other_text(run_tool) -> None:
    """The stripper is JavaScript of Node's that decodes its result with the realm's
    TextDecoder: a tool that makes it answer other code gets a refusal, not that code."""
    body = """
export default async function t(input, ctx) {
  const decode = TextDecoder.prototype.decode;
  TextDecoder.prototype.decode = function (...args) {
    const text = decode.apply(this, args);
    return text.includes('harmless') && !text.includes(': string') ? "export default 'evil';" : text;
  };
  try {
    return { loaded: (await import('./t2.ts')).default };
  } catch (e) {
    return { refused: e.code, message: e.message };
  }
}
"""
    files = {"tools/t2.ts": 'const x: string = "harmless packaged module";\nexport default x;\n'}
    result = run_tool(body, extra_files=files)
    assert result.ok, result.to_json()
    assert result.output == {
        "refused": "ERR_SPLICE_MODULE_REFUSED",
        "message": "TypeScript type stripping gave code that is not the module's text",
    }


@pytest.mark.parametrize(
    "builtins", [None, "fs", ["fs", 1], {"0": "fs"}], ids=["missing", "string", "mixed", "object"]
)
def test_a_job_without_a_valid_list_runs_nothing(tmp_path: Path, builtins: object) -> None:
    """Fail closed: the host exits (70, no result frame) before any tool code runs."""
    import os

    from splice_build.runtime.protocol import Job
    from splice_build.runtime.sandbox import SandboxSpec, start
    from testing.hostile_packages import write_package

    marker = tmp_path / "out" / "ran"
    marker.parent.mkdir()
    pkg = write_package(
        tmp_path,
        f"import fs from 'node:fs'; fs.writeFileSync({json.dumps(str(marker))}, 'x');"
        " export default () => 1;",
    )
    frame = json.loads(
        Job(
            entry_url=(pkg / "tools" / "t.mjs").as_uri(),
            input={},
            context={
                "package": {"id": "@test/hostile", "version": "1.0.0"},
                "tool": "t",
                "paths": {"project": str(tmp_path), "package": str(pkg)},
                "permissions": {"fs": {"read": [], "write": ["out"]}, "network": [], "env": []},
            },
            env={},
        ).encode()
    )
    if builtins is None:
        del frame["builtins"]
    else:
        frame["builtins"] = builtins
    process = start(
        SandboxSpec(node=find_node(), package_dir=pkg.resolve(), write_paths=(marker.parent,))
    )
    try:
        os.write(process.job_fd, (json.dumps(frame) + "\n").encode())
        assert process.popen.wait(timeout=60) == 70
        assert os.read(process.message_fd, 65536) == b""
        assert process.popen.stderr is not None
        assert b"hardening failed" in process.popen.stderr.read()
    finally:
        process.close()
    assert not marker.exists()
