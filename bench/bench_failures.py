"""What a long-lived ``splice mcp`` keeps of calls that fail: one real server over stdio
(warm pool, then with ``--reuse``), one tool per way a call can end, each called back to
back; the server's open files, threads, child processes (zombies among them) and resident
memory are read before and after each kind, as growth per 1,000 calls.

Kinds: a success, a throw, a timeout (300 ms), an output over the limit, a file read the
grant refuses, an exit, arguments the schema refuses (no process), an unknown tool, a call
cancelled by ``notifications/cancelled`` while it runs and one cancelled at once (in the
queue or starting). Nothing of them may grow with the number of calls; the resident memory
settles after the first few hundred calls of a kind (the allocator's arenas), so a quick
run overstates it.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import Row, splice_argv

CALLS = 500
QUICK_CALLS = 50
TOOL = "acme_leak_"
HANG = "export default async () => { setInterval(() => {}, 1000); return new Promise(() => {}); };"
TOOLS = {
    "ok": "export default async () => ({ ok: true });",
    "throw": "export default async () => { throw new Error('boom'); };",
    "slow": "export default () => { for (;;) {} };",
    "big": "export default async () => ({ s: 'x'.repeat(2 * 1024 * 1024) });",
    "perm": "import fs from 'node:fs';\n"
    "export default async () => ({ d: fs.readFileSync('/etc/passwd', 'utf8') });",
    "exit": "export default () => { process.exit(3); };",
    "hang": HANG,
    "strict": "export default async () => ({ ok: true });",
}
# kind -> (tool, arguments, cancel after this many seconds, or None)
KINDS: dict[str, tuple[str, dict[str, Any], float | None]] = {
    "success": ("ok", {}, None),
    "tool throws": ("throw", {}, None),
    "timeout": ("slow", {}, None),
    "output too large": ("big", {}, None),
    "permission refused": ("perm", {}, None),
    "process exits": ("exit", {}, None),
    "invalid input": ("strict", {}, None),
    "unknown tool": ("nope", {}, None),
    "cancelled while running": ("hang", {}, 0.25),
    "cancelled at once": ("hang", {}, 0.0),
}


def _project(base: Path) -> tuple[Path, dict[str, str]]:
    from splice_build.sdk import Splice
    from testing.registry_fixtures import embedded_store, new_project, publish

    home = base / "home" / ".splice"
    env = {"HOME": str(base / "home"), "SPLICE_HOME": str(home)}
    anything = {"type": "object", "properties": {}}
    strict = {**anything, "required": ["n"], "properties": {"n": {"type": "integer"}}}
    tools = [
        {
            "name": name,
            "description": name,
            "entry": f"tools/{name}.js",
            "timeoutMs": 300 if name == "slow" else 60000,
            "input": strict if name == "strict" else anything,
        }
        for name in TOOLS
    ]
    files = {f"tools/{name}.js": body for name, body in TOOLS.items()}
    publish(
        embedded_store(home), base / "work", name="leak", manifest={"tools": tools}, files=files
    )
    project = new_project(base / "project")
    with Splice(project, env={**os.environ, **env}) as splice:
        splice.add(["@acme/leak"])
    return project, env


class _Server:
    """``splice mcp`` over stdio and a reader thread filing its answers by id."""

    def __init__(self, project: Path, env: dict[str, str], extra: list[str]) -> None:
        self.process = subprocess.Popen(
            splice_argv("mcp", *extra),
            cwd=project,
            env={**os.environ, **env, "SPLICE_MCP_MAX_CALLS": "2"},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._answers: dict[Any, Any] = {}
        self._cond = threading.Condition()
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})  # fmt: skip

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            message = json.loads(line)
            with self._cond:
                self._answers[message.get("id")] = message
                self._cond.notify_all()

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def start(self, method: str, params: dict[str, Any]) -> int:
        self._next += 1
        self.send({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params})
        return self._next

    def wait(self, request_id: int) -> Any:
        with self._cond:
            self._cond.wait_for(lambda: request_id in self._answers, 120)
            return self._answers.pop(request_id)

    def request(self, method: str, params: dict[str, Any]) -> Any:
        return self.wait(self.start(method, params))

    def call(self, tool: str, arguments: dict[str, Any], cancel_after: float | None) -> None:
        params = {"name": TOOL + tool, "arguments": arguments}
        if cancel_after is None:
            self.request("tools/call", params)
            return
        request_id = self.start("tools/call", params)
        time.sleep(cancel_after)
        cancelled = {"requestId": request_id}
        self.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancelled})
        self.request("ping", {})  # applied in stdin order: the cancel is in when this answers

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(60)


def _sample(pid: int) -> dict[str, int]:
    status = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    children: set[str] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            children.update((task / "children").read_text().split())
        except OSError:
            continue
    zombies = 0
    for child in children:
        try:
            state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        zombies += state == "Z"
    return {
        "open files": len(os.listdir(f"/proc/{pid}/fd")),
        "threads": int(status["Threads"]),
        "child processes": len(children),
        "zombies": zombies,
        "RSS KiB": int(status["VmRSS"].split()[0]),
    }


def _kinds(project: Path, env: dict[str, str], extra: list[str], calls: int) -> list[Row]:
    server = _Server(project, env, extra)
    label = f"splice mcp {' '.join(extra)}".strip()
    rows = []
    try:
        for kind, (tool, arguments, cancel_after) in KINDS.items():
            # Measured from the state a call of this kind leaves (with --reuse a success
            # keeps its process, any failure ends it), once the pool's next start settled.
            server.call(tool, arguments, cancel_after)
            time.sleep(0.5)
            before = _sample(server.process.pid)
            for _ in range(calls):
                server.call(tool, arguments, cancel_after)
            time.sleep(1.0)
            after = _sample(server.process.pid)
            for what, value in after.items():
                growth = (value - before[what]) * 1000 / calls
                unit = f"{what.split()[-1] if what == 'RSS KiB' else what} per 1,000 calls"
                target = None if what == "RSS KiB" else "0"
                rows.append(Row(f"{label}, {kind}: {what}", growth, unit, target=target))
    finally:
        server.close()
    return rows


def run(quick: bool = False) -> list[Row]:
    calls = QUICK_CALLS if quick else CALLS
    with tempfile.TemporaryDirectory(prefix="bench-failures-") as tmp:
        project, env = _project(Path(tmp))
        return [
            *_kinds(project, env, [], calls),
            *_kinds(project, env, ["--reuse"], calls),
        ]
