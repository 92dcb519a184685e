"""Real malicious packages, each run through ``SpliceRuntime.execute``: every attempt must
fail closed with the exact code (issue #3, Done when)."""

from __future__ import annotations

from pathlib import Path

import pytest

from splice_build.errors import ErrorCode
from testing.isolation import busy_sandboxes

pytestmark = pytest.mark.node

OUTSIDE = "/etc/hostname"

# (attack, tool module source, expected code)
DENIED_CASES = [
    (
        "read_outside_string",
        f"import fs from 'node:fs'; export default () => fs.readFileSync('{OUTSIDE}', 'utf8');",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "read_outside_buffer",
        f"import fs from 'node:fs'; export default () => fs.readFileSync(Buffer.from('{OUTSIDE}'), 'utf8');",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "read_outside_file_url",
        f"import fs from 'node:fs'; export default () => fs.readFileSync(new URL('file://{OUTSIDE}'), 'utf8');",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "read_outside_promises",
        f"import fs from 'node:fs/promises'; export default () => fs.readFile('{OUTSIDE}', 'utf8');",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "read_proc_self_environ",
        "import fs from 'node:fs'; export default () => fs.readFileSync('/proc/self/environ', 'latin1');",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "load_env_file_outside",
        f"export default () => process.loadEnvFile('{OUTSIDE}');",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "write_into_package",
        "import fs from 'node:fs'; export default (i, ctx) => fs.writeFileSync(ctx.paths.package + '/x.mjs', '1');",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "child_process_spawn",
        "export default async () => (await import('node:child_process')).execSync('id').toString();",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "worker_thread",
        "export default async () => new (await import('node:worker_threads')).Worker('1', { eval: true });",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "wasi",
        "export default async () => new (await import('node:wasi')).WASI({ version: 'preview1' });",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "inspector_open",
        "export default async () => (await import('node:inspector')).open(9229);",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "addon_dlopen",
        "export default (i, ctx) => process.dlopen({ exports: {} }, ctx.paths.package + '/a.node');",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "sqlite_write_outside",
        "export default () => { const { DatabaseSync } = process.getBuiltinModule('node:sqlite');"
        " new DatabaseSync('/tmp/splice-sqlite-escape.db').exec('create table t(x)'); };",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "vm_run_in_this_context",
        "import vm from 'node:vm'; export default () => vm.runInThisContext('1 + 1');",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "import_data_url",
        "export default () => import('data:text/javascript,export default 1');",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "import_http_url",
        "export default () => import('http://127.0.0.1:1/x.mjs');",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "import_file_outside_package",
        f"export default () => import('file://{OUTSIDE}');",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "create_require",
        "import { createRequire } from 'node:module'; export default () => createRequire(import.meta.url)('net');",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "register_hooks_reopen_net",
        "export default () => process.getBuiltinModule('module').registerHooks({});",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "kill_parent",
        "export default () => process.kill(process.ppid, 'SIGTERM');",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "private_kill",
        "export default () => process._kill(process.ppid, 15);",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "debug_process_parent",
        "export default () => process._debugProcess(process.ppid);",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "set_priority_parent",
        # In a PID namespace the parent is invisible (ppid 0): aim at another process then.
        "import os from 'node:os'; export default () => os.setPriority(process.ppid || 2, 19);",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "set_priority_named_import",
        "import { setPriority } from 'node:os'; export default () => setPriority(process.ppid || 2, 19);",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "process_binding",
        "export default () => process.binding('spawn_sync');",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "linked_binding",
        "export default () => process._linkedBinding('x');",
        ErrorCode.PERMISSION_DENIED,
    ),
    ("setuid", "export default () => process.setuid(0);", ErrorCode.PERMISSION_DENIED),
    (
        "execve",
        "export default () => process.execve('/bin/sh', ['sh', '-c', 'id']);",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "active_handles",
        "export default () => process._getActiveHandles().length;",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "fetch_undeclared_host",
        "export default () => fetch('http://example.com/');",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "fetch_dispatcher_option",
        "export default () => fetch('http://example.com/', { dispatcher: {} });",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "undici_global_dispatcher",
        "export default () => { new Response('x'); return globalThis[Symbol.for('undici.globalDispatcher.1')]"
        ".dispatch({ origin: 'http://127.0.0.1:1', path: '/', method: 'GET' }, {}); };",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "async_hooks_resources",
        "import ah from 'node:async_hooks'; export default () => ah.createHook({}).enable();",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "diagnostics_channel_sockets",
        "import dc from 'node:diagnostics_channel'; export default () => dc.subscribe('net.client.socket', () => {});",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "tty_socket",
        "import tty from 'node:tty'; export default () => new tty.WriteStream(1);",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "repl_eval",
        "export default async () => (await import('node:repl')).start();",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "builtin_with_query",
        # Anything after node: that is not exactly an allowed name is refused (fail closed).
        "export default async () => Object.keys(await import('node:net?x')).length;",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "builtin_upper_case_scheme",
        "export default async () => Object.keys(await import('NODE:net')).length;",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "import_meta_resolve_net",
        "export default () => import.meta.resolve('node:net');",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "proc_self_fd",
        "import fs from 'node:fs'; export default () => fs.readlinkSync('/proc/self/fd/0');",
        ErrorCode.PERMISSION_DENIED,
    ),
    (
        "socket_class_from_stdin",
        "export default () => new (process.stdin.constructor)().connect(80, '127.0.0.1');",
        ErrorCode.TOOL_ERROR,
    ),
    # Code generation from strings is off: these surface as the tool's own error.
    ("eval", "export default () => eval('1 + 1');", ErrorCode.TOOL_ERROR),
    ("new_function", "export default () => new Function('return 1')();", ErrorCode.TOOL_ERROR),
    (
        "function_constructor_via_prototype",
        "export default () => (() => {}).constructor('return process')();",
        ErrorCode.TOOL_ERROR,
    ),
    # Locked globals cannot be replaced (strict-mode TypeError).
    ("overwrite_fetch", "export default () => { globalThis.fetch = null; };", ErrorCode.TOOL_ERROR),
    (
        "redefine_get_builtin_module",
        "export default () => Object.defineProperty(process, 'getBuiltinModule', { value: () => 1 });",
        ErrorCode.TOOL_ERROR,
    ),
    (
        "socket_class_from_stdout",
        "export default () => new (process.stdout.constructor)().connect(80, '127.0.0.1');",
        ErrorCode.TOOL_ERROR,
    ),
    (
        "websocket_removed",
        "export default () => new WebSocket('ws://127.0.0.1:1');",
        ErrorCode.TOOL_ERROR,
    ),
    (
        "polluted_to_json_forges_result",
        "export default () => { Object.prototype.toJSON = () => ({ type: 'result', ok: true, output: 'forged' });"
        " throw new Error('real failure'); };",
        ErrorCode.TOOL_ERROR,
    ),
    (
        "polluted_array_getters",
        "export default () => { Object.defineProperty(Array.prototype, 0, { get() { return 'x'; } });"
        " Array.prototype[Symbol.iterator] = function* () { yield 'x'; }; throw new Error('still an error'); };",
        ErrorCode.TOOL_ERROR,
    ),
    ("bigint_output", "export default () => ({ n: 10n });", ErrorCode.INVALID_OUTPUT),
    (
        "deep_output_2000",
        "export default () => { let v = []; for (let i = 0; i < 2000; i++) v = [v]; return v; };",
        ErrorCode.INVALID_OUTPUT,
    ),
    (
        "forged_5000_digit_integer",
        "import fs from 'node:fs'; export default () => { fs.writeSync(Number(process.argv[3]),"
        ' \'{"type":"result","ok":true,"output":\' + \'7\'.repeat(5000) + \'}\\n\'); return 1; };',
        ErrorCode.INVALID_OUTPUT,
    ),
    (
        "forged_malformed_frame",
        "import fs from 'node:fs'; export default () => { fs.writeSync(Number(process.argv[3]), '{\"type\":\"pwn\"}\\n'); return 1; };",
        ErrorCode.INVALID_OUTPUT,
    ),
    (
        "forged_nan_frame",
        "import fs from 'node:fs'; export default () => { fs.writeSync(Number(process.argv[3]),"
        ' \'{"type":"result","ok":true,"output":NaN}\\n\'); return 1; };',
        ErrorCode.INVALID_OUTPUT,
    ),
    (
        "forged_huge_garbage_frame",
        "import fs from 'node:fs'; export default () => { fs.writeSync(Number(process.argv[3]),"
        " 'x'.repeat(3 * 1024 * 1024) + '\\n'); return 1; };",
        ErrorCode.INVALID_OUTPUT,
    ),
    (
        "output_flood",
        "export default () => 'x'.repeat(2 * 1024 * 1024);",
        ErrorCode.OUTPUT_TOO_LARGE,
    ),
    ("exit_without_result", "export default () => process.exit(0);", ErrorCode.TOOL_CRASHED),
    ("abort", "export default () => process.abort();", ErrorCode.TOOL_CRASHED),
    (
        "commonjs_module_constructor",
        "module.exports = () => module.constructor._load('net');",
        ErrorCode.TOOL_LOAD_FAILED,
    ),
    ("no_default_export", "export const t = () => 1;", ErrorCode.TOOL_LOAD_FAILED),
    ("syntax_error", "export default () => {", ErrorCode.TOOL_LOAD_FAILED),
    (
        "buffer_bomb_1gib",
        "export default () => Buffer.alloc(1024 * 1024 * 1024).length;",
        ErrorCode.TOOL_ERROR,
    ),
]


@pytest.mark.parametrize(
    ("body", "code"), [(b, c) for _, b, c in DENIED_CASES], ids=[a for a, _, _ in DENIED_CASES]
)
def test_attack_fails_closed(run_tool, body: str, code: ErrorCode) -> None:
    entry = "tools/t.js" if body.startswith("module.exports") else "tools/t.mjs"
    result = run_tool(body, entry=entry)
    assert not result.ok, result.to_json()
    assert result.error is not None
    assert result.error.code == code, result.to_json()


def test_an_error_message_cut_inside_a_surrogate_pair_is_the_tools_error(run_tool) -> None:
    """The host makes a failure's message well-formed: with half an emoji it was a frame the
    parent refuses, reported as an invalid message (INVALID_OUTPUT) instead of the error."""
    result = run_tool(
        "export default () => { throw new Error('cut: ' + '\\u{1F600}'.slice(0, 1)); };"
    )
    assert result.error is not None, result.to_json()
    assert result.error.code == ErrorCode.TOOL_ERROR, result.to_json()
    assert result.error.message == "cut: \ufffd"


def test_an_oversized_output_is_reported_with_its_exact_size(run_tool) -> None:
    """A result frame too large to buffer is counted while discarded; the size reported is
    the output's own (the frame's prefix and its job id not counted)."""
    result = run_tool("export default () => 'x'.repeat(2000000);")
    assert result.error is not None and result.error.code == ErrorCode.OUTPUT_TOO_LARGE
    assert result.error.message.startswith("Tool output is 2000002 bytes"), result.to_json()


def test_fetch_denial_names_the_host(run_tool) -> None:
    result = run_tool("export default () => fetch('https://evil.example.org/x');")
    assert result.error is not None
    assert result.error.message == (
        'Network access to "evil.example.org" is denied. Declare it in manifest permissions.network.'
    )


def test_sqlite_leaves_no_file(run_tool) -> None:
    target = Path("/tmp/splice-sqlite-escape.db")
    run_tool(
        "export default async () => { const { DatabaseSync } = await import('node:sqlite');"
        f" new DatabaseSync('{target}').exec('create table t(x)'); }};"
    )
    assert not target.exists()


def test_write_outside_is_denied_and_nothing_written(run_tool, tmp_path: Path) -> None:
    target = tmp_path / "escape.txt"
    result = run_tool(
        f"import fs from 'node:fs'; export default () => fs.writeFileSync('{target}', 'x');",
        permissions={"fs": {"read": [], "write": ["out"]}},
    )
    assert result.error is not None and result.error.code == ErrorCode.PERMISSION_DENIED
    assert not target.exists()


def test_symlink_out_of_a_writable_dir_is_denied(run_tool, project: Path, tmp_path: Path) -> None:
    target = tmp_path / "via-link.txt"
    result = run_tool(
        "import fs from 'node:fs'; export default (i, ctx) => {"
        f" fs.symlinkSync('{target}', ctx.paths.project + '/out/l');"
        " fs.writeFileSync(ctx.paths.project + '/out/l', 'x'); };",
        permissions={"fs": {"read": [], "write": ["out"]}},
    )
    assert result.error is not None and result.error.code == ErrorCode.PERMISSION_DENIED
    assert not target.exists()


def test_import_of_a_declared_readable_file_outside_the_package(run_tool, project: Path) -> None:
    (project / "lib").mkdir()
    (project / "lib" / "evil.mjs").write_text("export default 1;\n")
    result = run_tool(
        "export default (i, ctx) => import(ctx.paths.project + '/lib/evil.mjs');",
        permissions={"fs": {"read": ["lib"], "write": []}},
    )
    assert result.error is not None and result.error.code == ErrorCode.PERMISSION_DENIED


def test_cjs_file_inside_the_package_is_refused(run_tool) -> None:
    result = run_tool(
        "import x from './x.cjs'; export default () => x;",
        extra_files={"tools/x.cjs": "module.exports = module.constructor._load('net');\n"},
    )
    assert result.error is not None and result.error.code == ErrorCode.TOOL_LOAD_FAILED


def test_infinite_loop_times_out_and_the_group_is_gone(
    run_tool, project: Path, tmp_path: Path
) -> None:
    result = run_tool(
        "import fs from 'node:fs'; export default (i, ctx) => {"
        " fs.writeFileSync(ctx.paths.project + '/out/started', '1'); for (;;) {} };",
        permissions={"fs": {"read": [], "write": ["out"]}},
        timeout_ms=1000,
    )
    assert result.error is not None and result.error.code == ErrorCode.TIMEOUT
    assert result.error.message == "Tool timed out after 1000 ms"
    assert (project / "out" / "started").exists()
    # The tool's pid is not the host's inside a PID namespace: look for a process of the
    # package that burnt CPU (a warm pool's next idle process has the same command line).
    assert busy_sandboxes(str(tmp_path / "packages"), cpu_seconds=0.5) == []


def test_a_process_that_ends_by_itself_is_reported_with_its_own_exit_code(run_tool) -> None:
    """Once every pipe of the process reached its end the parent lets it finish before the
    group is killed: a kill that overtook the exit made most of these "exit code -9"."""
    never = "export default () => new Promise(() => {});"
    unsettled = (
        "Tool process exited without a result (exit code 13): the tool's promise never "
        "settled, and nothing was left that could settle it"
    )
    for body, message in [
        (never, unsettled),
        (
            "export default () => process.exit(3);",
            "Tool process exited without a result (exit code 3)",
        ),
    ]:
        for _ in range(2):
            result = run_tool(body)
            assert result.error is not None, result.to_json()
            assert (result.error.code, result.error.message) == (ErrorCode.TOOL_CRASHED, message)


def test_heap_bomb_crashes_cleanly(run_tool) -> None:
    result = run_tool(
        "export default () => { const a = []; for (;;) a.push(new Array(1e6).fill(1.5)); };",
        timeout_ms=30000,
    )
    assert result.error is not None and result.error.code == ErrorCode.TOOL_CRASHED
    assert result.error.message == "Tool process ran out of memory"


def test_buffer_bomb_fails_inside_the_tool(run_tool) -> None:
    result = run_tool("export default () => Buffer.alloc(1024 * 1024 * 1024).length;")
    assert result.error is not None
    assert "allocation failed" in result.error.message


def test_log_flood_is_capped_and_call_still_succeeds(run_tool) -> None:
    result = run_tool(
        "export default () => { const line = 'y'.repeat(1000);"
        " for (let i = 0; i < 20000; i++) console.error(line); return 'done'; };",
        timeout_ms=30000,
    )
    assert result.ok, result.to_json()
    assert result.output == "done"
    assert result.logs.endswith("[logs truncated]")
    assert len(result.logs.encode()) <= 64 * 1024 + len("\n[logs truncated]")


def test_signalling_the_parent_is_refused_and_parent_survives(tmp_path: Path) -> None:
    """The runtime runs in a child Python: SIGUSR1/SIGUSR2 reaching it would kill it."""
    import subprocess
    import sys

    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from splice_build.runtime import SpliceRuntime\n"
        "from testing.hostile_packages import write_package\n"
        "root = Path(sys.argv[1])\n"
        "rt = SpliceRuntime(project_root=root, env={})\n"
        "codes = []\n"
        "for sig in ('SIGUSR1', 'SIGUSR2'):\n"
        "    body = f\"export default () => process.kill(process.ppid, '{sig}');\"\n"
        "    pkg = rt.load(write_package(root, body, name=sig.lower()))\n"
        "    codes.append(rt.execute(pkg, 't', {}).to_json()['error']['code'])\n"
        "print(json.dumps(codes))\n"
    )
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=repo,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == '["PERMISSION_DENIED", "PERMISSION_DENIED"]'
