"""The capability channel (docs/compatibility.md#capability-channel) through the real sandbox, with a real broker
object (a small in-process implementation of the broker interface)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest

pytestmark = pytest.mark.node

DECLARED = {"capabilities": ["web.search"]}


class RecordingBroker:
    """Answers every call with LIVE data, optionally slowly; records the requests."""

    def __init__(self, delay: float = 0.0, result: Any = None, fail: bool = False) -> None:
        self.delay = delay
        self.result = result
        self.fail = fail
        self.requests: list[Mapping[str, Any]] = []
        self._lock = threading.Lock()

    def call(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        with self._lock:
            self.requests.append(request)
        time.sleep(self.delay)
        if self.fail:
            raise RuntimeError("provider exploded with key sk-ant-abcdefghijklmnopqrstuv")
        return self.result or {
            "status": "LIVE",
            "capability": request["capability"],
            "data": request["args"],
        }


CALL = "export default (i, ctx) => ctx.capability('web.search', { query: 'q' });"


def catching(name: str, args: str) -> str:
    """A tool that returns the capability result, or the rejection's code and message."""
    return (
        f"export default async (i, ctx) => {{ try {{ return await ctx.capability({name}, {args}); }}"
        " catch (e) { return { code: e.code, message: e.message }; } };"
    )


def test_no_broker_answers_unavailable(run_tool) -> None:
    result = run_tool(CALL, permissions=DECLARED)
    assert result.ok, result.to_json()
    assert result.output["status"] == "UNAVAILABLE"
    assert result.output["code"] == "CAPABILITY_UNAVAILABLE"
    assert result.output["capability"] == "web.search"


def test_broker_result_passes_through(run_tool) -> None:
    broker = RecordingBroker()
    result = run_tool(CALL, permissions=DECLARED, broker=broker)
    assert result.output == {"status": "LIVE", "capability": "web.search", "data": {"query": "q"}}
    assert broker.requests == [
        {"package": "@test/p0", "tool": "t", "capability": "web.search", "args": {"query": "q"}}
    ]


def test_undeclared_capability_is_refused(run_tool) -> None:
    broker = RecordingBroker()
    result = run_tool(catching("'market.price'", "{}"), permissions=DECLARED, broker=broker)
    assert result.output["code"] == "ERR_ACCESS_DENIED"
    assert broker.requests == []


def test_forged_raw_capability_message_is_refused_by_the_parent(run_tool) -> None:
    body = (
        "import fs from 'node:fs'; export default () => {"
        ' fs.writeSync(Number(process.argv[3]), \'{"type":"capability","id":77,"name":"market.price","args":{}}\\n\');'
        " const b = Buffer.alloc(4096); const n = fs.readSync(Number(process.argv[2]), b, 0, 4096, null);"
        " return JSON.parse(b.toString('utf8', 0, n)); };"
    )
    broker = RecordingBroker()
    result = run_tool(body, permissions=DECLARED, broker=broker)
    assert result.ok, result.to_json()
    assert result.output["id"] == 77
    assert result.output["error"]["code"] == "PERMISSION_DENIED"
    assert broker.requests == []


def test_call_budget(run_tool) -> None:
    body = (
        "export default async (i, ctx) => { const codes = [];"
        " for (let k = 0; k < 26; k++) { try { await ctx.capability('web.search', {}); codes.push('ok'); }"
        " catch (e) { codes.push(e.code); } } return codes; };"
    )
    result = run_tool(body, permissions=DECLARED, broker=RecordingBroker())
    assert result.output == ["ok"] * 25 + ["CAPABILITY_LIMIT"]


def test_in_flight_limit(run_tool) -> None:
    body = (
        "export default async (i, ctx) => Promise.all([0, 1, 2, 3, 4].map((k) =>"
        " ctx.capability('web.search', { k }).then(() => 'ok', (e) => e.code)));"
    )
    result = run_tool(body, permissions=DECLARED, broker=RecordingBroker(delay=0.3))
    assert sorted(result.output) == ["CAPABILITY_LIMIT", "ok", "ok", "ok", "ok"]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ("JSON.parse('[' .repeat(40) + ']'.repeat(40))", "INPUT_TOO_LARGE"),
        ("{ q: 'x'.repeat(300 * 1024) }", "INPUT_TOO_LARGE"),
        ("{ n: 1n }", "INVALID_INPUT"),
    ],
    ids=["depth", "bytes", "not_json"],
)
def test_argument_limits(run_tool, args: str, code: str) -> None:
    broker = RecordingBroker()
    result = run_tool(catching("'web.search'", args), permissions=DECLARED, broker=broker)
    assert result.output["code"] == code, result.to_json()
    assert broker.requests == []


def test_forged_deep_arguments_are_refused_by_the_parent(run_tool) -> None:
    deep = "[" * 40 + "]" * 40
    body = (
        "import fs from 'node:fs'; export default () => {"
        f' fs.writeSync(Number(process.argv[3]), \'{{"type":"capability","id":5,"name":"web.search","args":{deep}}}\\n\');'
        " const b = Buffer.alloc(4096); const n = fs.readSync(Number(process.argv[2]), b, 0, 4096, null);"
        " return JSON.parse(b.toString('utf8', 0, n)); };"
    )
    result = run_tool(body, permissions=DECLARED, broker=RecordingBroker())
    assert result.output["error"]["code"] == "INPUT_TOO_LARGE"


def test_broker_failure_and_oversized_result(run_tool) -> None:
    failed = run_tool(CALL, permissions=DECLARED, broker=RecordingBroker(fail=True))
    assert failed.output["status"] == "ERROR" and failed.output["code"] == "BROKER_ERROR"
    assert "sk-ant-" not in failed.output["message"]
    big = run_tool(
        CALL, permissions=DECLARED, broker=RecordingBroker(result={"d": "x" * (5 * 1024 * 1024)})
    )
    assert big.output["code"] == "RESULT_TOO_LARGE"


def test_a_child_of_fork_holds_none_of_its_parents_calls_in_flight() -> None:
    """A program forking while a package had 8 broker calls in flight (a tool that starts
    calls to a slow provider and returns, run twice): the child's copy of the process's
    slots and of the answers' byte budget still counted them, and no thread of the child
    would ever give them back, so every capability call of that package in the child was
    CAPABILITY_LIMIT (real SDK). The child holds none of them."""
    import os
    import signal

    from splice_build.broker.providers.http import BODIES_IN_FLIGHT, MAX_BYTES_IN_FLIGHT
    from splice_build.runtime.capabilities import _PROCESS_SLOTS
    from splice_build.runtime.limits import MAX_CAPABILITIES_IN_FLIGHT_PER_PACKAGE

    package = "@acme/forked"
    for _ in range(MAX_CAPABILITIES_IN_FLIGHT_PER_PACKAGE):
        assert _PROCESS_SLOTS.take(package) is None
    free = MAX_BYTES_IN_FLIGHT - BODIES_IN_FLIGHT.held
    assert BODIES_IN_FLIGHT.take(free)
    try:
        assert _PROCESS_SLOTS.take(package) is not None  # the parent's share is full
        child = os.fork()
        if child == 0:  # pragma: no cover (its exit status is checked below)
            status = 1
            try:
                signal.alarm(30)
                status = 0 if _PROCESS_SLOTS.take(package) is None else 2
                status = status or (0 if BODIES_IN_FLIGHT.take(MAX_BYTES_IN_FLIGHT) else 3)
            finally:
                os._exit(status)
        _, status = os.waitpid(child, 0)
    finally:
        BODIES_IN_FLIGHT.give_back(free)
        for _ in range(MAX_CAPABILITIES_IN_FLIGHT_PER_PACKAGE):
            _PROCESS_SLOTS.give_back(package)
    assert os.waitstatus_to_exitcode(status) == 0
