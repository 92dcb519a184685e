"""The parent side of the host IPC protocol (host/PROTOCOL.md), with typed messages.

Every frame from the child is hostile input: it is size-bounded by the reader, then decoded
here with bounded nesting, bounded number literals, no NaN/Infinity, no unpaired surrogates,
and a strict shape per message type. Anything else raises ``ProtocolViolation``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from splice_build.runtime.limits import FRAME_ENVELOPE_DEPTH, MAX_NUMBER_LITERAL, MAX_OUTPUT_DEPTH
from splice_build.security.netpolicy import policy_json

PROTOCOL_VERSION = 1
# The exact prefix host.mjs writes before a successful output (used to name an oversized
# frame OUTPUT_TOO_LARGE rather than a protocol violation).
RESULT_OK_PREFIX = b'{"type":"result","ok":true,"output":'
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")


class ProtocolViolation(Exception):
    """A frame from the child that is not a well-formed message of the protocol."""


@dataclass(frozen=True)
class ResultOk:
    output: Any


@dataclass(frozen=True)
class ResultError:
    code: str
    message: str


@dataclass(frozen=True)
class CapabilityRequest:
    id: int
    name: str
    args: Any


ChildMessage = ResultOk | ResultError | CapabilityRequest


@dataclass(frozen=True)
class Job:
    """Parent → host, once, after the process has started."""

    entry_url: str
    input: Any
    context: dict[str, Any]
    env: dict[str, str]
    # Test hook only (SpliceRuntime(_unsafe_test_resolver=...)): {name: [[addresses], ...]},
    # the answers of the 1st, 2nd, ... lookup of that name in the network guard.
    test_resolver: dict[str, list[list[str]]] | None = None
    # Test hook only (SpliceRuntime(_unsafe_in_process_guards_off=True)): the host installs
    # none of its guards (module guard, guarded fetch, process locks).
    unsafe_in_process_guards_off: bool = False

    def encode(self) -> bytes:
        frame: dict[str, Any] = {
            "type": "job",
            "protocol": PROTOCOL_VERSION,
            "entryUrl": self.entry_url,
            "input": self.input,
            "context": self.context,
            "env": self.env,
            # The host cannot read schemas/: the network guard's policy travels in the job.
            "netPolicy": policy_json(),
        }
        if self.test_resolver is not None:
            frame["testResolver"] = self.test_resolver
        if self.unsafe_in_process_guards_off:
            frame["unsafeInProcessGuardsOff"] = True
        return _encode(frame)


def encode_capability_result(
    request_id: int, *, result: Any = None, error: tuple[str, str] | None = None
) -> bytes:
    """Parent → host answer to one capability request."""
    frame: dict[str, Any] = {"type": "capability-result", "id": request_id}
    if error is not None:
        frame["error"] = {"code": error[0], "message": error[1]}
    else:
        frame["result"] = result
    return _encode(frame)


def _encode(frame: dict[str, Any]) -> bytes:
    text = json.dumps(frame, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8", "surrogatepass") + b"\n"


def _parse_int(text: str) -> int:
    if len(text) > MAX_NUMBER_LITERAL:
        raise ProtocolViolation(f"number literal of {len(text)} characters")
    return int(text)


def _parse_float(text: str) -> float:
    if len(text) > MAX_NUMBER_LITERAL:
        raise ProtocolViolation(f"number literal of {len(text)} characters")
    value = float(text)
    if not math.isfinite(value):
        raise ProtocolViolation("non-finite number")
    return value


def _parse_constant(name: str) -> Any:
    raise ProtocolViolation(f"{name} is not JSON")


def _check_tree(value: Any, *, check_strings: bool) -> None:
    """Carried values ≤ MAX_OUTPUT_DEPTH deep and (when escapes suggest it) no lone surrogates."""
    stack: list[tuple[Any, int]] = [(value, -FRAME_ENVELOPE_DEPTH)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth >= MAX_OUTPUT_DEPTH:
                raise ProtocolViolation(f"nested deeper than {MAX_OUTPUT_DEPTH} levels")
            for key, child in item.items():
                if check_strings:
                    _check_string(key)
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            if depth >= MAX_OUTPUT_DEPTH:
                raise ProtocolViolation(f"nested deeper than {MAX_OUTPUT_DEPTH} levels")
            stack.extend((child, depth + 1) for child in item)
        elif check_strings and isinstance(item, str):
            _check_string(item)


def _check_string(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ProtocolViolation("string with an unpaired surrogate") from exc


def decode_json(raw: bytes) -> Any:
    """Decode one hostile JSON text; raises ProtocolViolation for anything out of bounds."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolViolation("frame is not UTF-8") from exc
    try:
        value = json.loads(
            text,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_parse_constant,
        )
    except RecursionError as exc:
        raise ProtocolViolation(f"nested deeper than {MAX_OUTPUT_DEPTH} levels") from exc
    except ValueError as exc:  # json.JSONDecodeError and int() limits
        raise ProtocolViolation(f"invalid JSON: {exc}") from exc
    _check_tree(value, check_strings=bool(_SURROGATE_ESCAPE.search(raw)))
    return value


def _require(frame: dict[str, Any], allowed: set[str]) -> None:
    extra = set(frame) - allowed
    if extra:
        raise ProtocolViolation(f"unexpected fields {sorted(extra)}")


def parse_child_message(raw: bytes) -> ChildMessage:
    """One frame from the host → a typed message (strict shapes, PROTOCOL.md)."""
    frame = decode_json(raw)
    if not isinstance(frame, dict):
        raise ProtocolViolation("frame is not an object")
    kind = frame.get("type")
    if kind == "result":
        ok = frame.get("ok")
        if ok is True:
            _require(frame, {"type", "ok", "output"})
            if "output" not in frame:
                raise ProtocolViolation("result without output")
            return ResultOk(frame["output"])
        if ok is False:
            _require(frame, {"type", "ok", "error"})
            error = frame.get("error")
            if (
                not isinstance(error, dict)
                or set(error) != {"code", "message"}
                or not isinstance(error["code"], str)
                or not isinstance(error["message"], str)
            ):
                raise ProtocolViolation("malformed error result")
            return ResultError(error["code"], error["message"])
        raise ProtocolViolation("result without a boolean ok")
    if kind == "capability":
        _require(frame, {"type", "id", "name", "args"})
        request_id, name = frame.get("id"), frame.get("name")
        if type(request_id) is not int or not 0 < request_id < 2**31:
            raise ProtocolViolation("capability request without a valid id")
        if not isinstance(name, str) or len(name) > 128:
            raise ProtocolViolation("capability request without a valid name")
        return CapabilityRequest(request_id, name, frame.get("args"))
    raise ProtocolViolation("unknown message type")
